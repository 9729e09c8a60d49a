/**
 * Journal of the deletions clients asked the API server for (`GET /_sim/journal`): one entry per
 * accepted, non-dry-run `DELETE` of an object (single or collection, pod evictions included), with
 * the object's uid and labels at that moment. Deletions done inside the simulator (garbage
 * collector, controllers) are not clients' requests and are not journaled. Read-only; bounded to
 * the last {@link MAX_ENTRIES} entries, numbered 1, 2, 3, ... so a reader can page with `since`.
 */
import type { KubeObject } from './types.ts';

const MAX_ENTRIES = 10_000;

/** One client deletion. */
export interface DeleteJournalEntry {
  readonly seq: number;
  readonly time: string;
  readonly kind: string;
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
  readonly labels: Record<string, string>;
  /** How the request came: `delete`, `deletecollection` or `eviction`. */
  readonly via: 'delete' | 'deletecollection' | 'eviction';
}

/** The journal itself. */
export class DeleteJournal {
  private readonly entries: DeleteJournalEntry[] = [];
  private seq = 0;

  record(obj: KubeObject, kind: string, via: DeleteJournalEntry['via']): void {
    this.entries.push({
      seq: ++this.seq,
      time: new Date().toISOString(),
      kind,
      namespace: obj.metadata.namespace ?? '',
      name: obj.metadata.name ?? '',
      uid: obj.metadata.uid ?? '',
      labels: { ...(obj.metadata.labels ?? {}) },
      via,
    });
    if (this.entries.length > MAX_ENTRIES) this.entries.splice(0, this.entries.length - MAX_ENTRIES);
  }

  /** Entries with `seq > since`, oldest first. */
  list(since = 0): DeleteJournalEntry[] {
    return this.entries.filter((e) => e.seq > since);
  }
}
