/**
 * De-duplicating work queue for the simulated controllers. Store listeners only enqueue keys; the
 * queue drains on the next macrotask, so a burst of events for one object causes one reconcile, and
 * controllers never write from inside a store notification.
 */

/** A keyed, de-duplicated queue of reconcile callbacks plus tracked timers. */
export class WorkQueue {
  private pending = new Map<string, () => void>();
  private scheduled = false;
  private closed = false;
  private readonly timers = new Set<NodeJS.Timeout>();

  constructor(private readonly onError: (key: string, err: unknown) => void) {}

  /** Queues `fn` under `key`; a key already queued is not queued twice. */
  add(key: string, fn: () => void): void {
    if (this.closed || this.pending.has(key)) return;
    this.pending.set(key, fn);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.drain());
    }
  }

  /** Queues `fn` under `key` after `ms` milliseconds (0 = next drain). */
  after(ms: number, key: string, fn: () => void): void {
    if (this.closed) return;
    if (ms <= 0) {
      this.add(key, fn);
      return;
    }
    const t = setTimeout(() => {
      this.timers.delete(t);
      this.add(key, fn);
    }, ms);
    this.timers.add(t);
  }

  private drain(): void {
    this.scheduled = false;
    let rounds = 0;
    while (this.pending.size > 0 && !this.closed) {
      const batch = this.pending;
      this.pending = new Map();
      for (const [key, fn] of batch) {
        try {
          fn();
        } catch (err) {
          this.onError(key, err);
        }
      }
      // Yield to I/O now and then so a long cascade does not starve HTTP clients.
      if (++rounds >= 50 && this.pending.size > 0) {
        this.scheduled = true;
        setImmediate(() => this.drain());
        return;
      }
    }
  }

  /** Stops all timers and drops queued work. */
  close(): void {
    this.closed = true;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    this.pending.clear();
  }
}
