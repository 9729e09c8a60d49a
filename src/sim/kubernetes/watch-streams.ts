/**
 * The open watch streams of the simulated API server, and what the `/_sim` control API can do to
 * them: end them all (an outage, an API server restart), hold their events back (a slow or
 * partitioned client: events written while held are sent on release, or lost when the streams are
 * ended), and send a BOOKMARK (the current resourceVersion) to every stream that allowed them.
 */
import type { ServerResponse } from 'node:http';

/** One open watch stream. */
export interface WatchStream {
  /** Writes one encoded event line (held back while the streams are held). */
  send(line: string): void;
}

interface Entry {
  res: ServerResponse;
  /** The encoded BOOKMARK of the current resourceVersion; undefined when the client did not allow them. */
  bookmark: (() => string) | undefined;
  held: string[];
}

/** Registry of the open watch streams. */
export class WatchStreams {
  private readonly open = new Map<ServerResponse, Entry>();
  private holding = false;

  /** Registers a stream; `bookmark` encodes a BOOKMARK of the current resourceVersion (when allowed). */
  add(res: ServerResponse, bookmark: (() => string) | undefined): WatchStream {
    const e: Entry = { res, bookmark, held: [] };
    this.open.set(res, e);
    return {
      send: (line) => {
        if (res.writableEnded) return;
        if (this.holding) e.held.push(line);
        else res.write(line);
      },
    };
  }

  delete(res: ServerResponse): void {
    this.open.delete(res);
  }

  count(): number {
    return this.open.size;
  }

  /** Ends every stream; events held back are dropped. */
  endAll(): void {
    for (const e of this.open.values()) {
      e.held = [];
      e.res.end();
    }
    this.open.clear();
  }

  /** From now on, events are held back instead of written. */
  hold(): void {
    this.holding = true;
  }

  /** Writes what was held back and stops holding. */
  release(): void {
    this.holding = false;
    for (const e of this.open.values()) {
      for (const line of e.held) if (!e.res.writableEnded) e.res.write(line);
      e.held = [];
    }
  }

  get held(): boolean {
    return this.holding;
  }

  /** Sends a BOOKMARK to every stream that allowed them (held back too while holding); returns how many. */
  bookmarkAll(): number {
    let n = 0;
    for (const e of this.open.values()) {
      if (e.bookmark === undefined || e.res.writableEnded) continue;
      const line = e.bookmark();
      if (this.holding) e.held.push(line);
      else e.res.write(line);
      n++;
    }
    return n;
  }

  /** The BOOKMARK of one stream, written before the server ends it at its `timeoutSeconds`. */
  bookmarkOf(res: ServerResponse): string | undefined {
    return this.open.get(res)?.bookmark?.();
  }
}
