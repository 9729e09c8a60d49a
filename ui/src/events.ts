/**
 * The live feed (`GET /vnfm/v1/events`, server-sent events) read with `fetch` streaming, so the
 * login's token goes in the headers (EventSource cannot send them). Reconnects after a drop with
 * `Last-Event-ID` = the last id received, after a short backoff; a `reset` event tells the pages
 * to reload their lists.
 */
import { authHeaders } from './api.ts';

export interface FeedEvent {
  id: number;
  type: string;
  data: Record<string, unknown>;
}

type Listener = (e: FeedEvent) => void;
export type FeedStatus = 'connecting' | 'live' | 'retrying' | 'stopped';

class Feed {
  private listeners = new Set<Listener>();
  private statusListeners = new Set<(s: FeedStatus) => void>();
  private lastId: number | undefined;
  private abort: AbortController | undefined;
  private running = false;
  status: FeedStatus = 'stopped';

  subscribe(fn: Listener): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  onStatus(fn: (s: FeedStatus) => void): () => void {
    this.statusListeners.add(fn);
    return () => this.statusListeners.delete(fn);
  }

  private setStatus(s: FeedStatus): void {
    this.status = s;
    for (const f of this.statusListeners) f(s);
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    void this.loop();
  }

  stop(): void {
    this.running = false;
    this.abort?.abort();
    this.setStatus('stopped');
  }

  /** Drops the connection (tests of the resume path use it through the page). */
  reconnect(): void {
    this.abort?.abort();
  }

  private async loop(): Promise<void> {
    let backoff = 500;
    while (this.running) {
      this.setStatus(this.lastId === undefined ? 'connecting' : 'retrying');
      this.abort = new AbortController();
      try {
        const headers: Record<string, string> = { accept: 'text/event-stream', ...authHeaders('/vnfm/v1/events') };
        if (this.lastId !== undefined) headers['last-event-id'] = String(this.lastId);
        const r = await fetch('/vnfm/v1/events', { headers, signal: this.abort.signal, cache: 'no-store' });
        if (!r.ok || !r.body) throw new Error(`feed: ${r.status}`);
        this.setStatus('live');
        backoff = 500;
        await this.read(r.body);
      } catch {
        // dropped, refused or aborted: retry below
      }
      if (!this.running) break;
      this.setStatus('retrying');
      await new Promise((res) => setTimeout(res, backoff));
      backoff = Math.min(backoff * 2, 10_000);
    }
  }

  private async read(body: ReadableStream<Uint8Array>): Promise<void> {
    const reader = body.pipeThrough(new TextDecoderStream() as unknown as TransformStream<Uint8Array, string>).getReader();
    let buf = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buf += value;
      let sep: number;
      // events are separated by a blank line
      while ((sep = buf.search(/\r?\n\r?\n/)) !== -1) {
        const block = buf.slice(0, sep);
        buf = buf.slice(sep).replace(/^\r?\n\r?\n/, '');
        this.dispatch(block);
      }
    }
  }

  private dispatch(block: string): void {
    let id: string | undefined;
    let type = 'message';
    const data: string[] = [];
    for (const line of block.split(/\r?\n/)) {
      if (line.startsWith(':') || line === '') continue;
      const i = line.indexOf(':');
      const field = i === -1 ? line : line.slice(0, i);
      const val = i === -1 ? '' : line.slice(i + 1).replace(/^ /, '');
      if (field === 'id') id = val;
      else if (field === 'event') type = val;
      else if (field === 'data') data.push(val);
    }
    if (id !== undefined && /^[0-9]+$/.test(id)) this.lastId = Number(id);
    if (data.length === 0) return;
    let parsed: Record<string, unknown> = {};
    try {
      parsed = JSON.parse(data.join('\n')) as Record<string, unknown>;
    } catch {
      return;
    }
    const ev = { id: this.lastId ?? 0, type, data: parsed };
    for (const f of this.listeners) f(ev);
  }
}

/** The one feed of the page. */
export const feed = new Feed();
