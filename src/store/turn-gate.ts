/**
 * One caller per turn of the event loop. The VNFM's request handling after a database answer (and,
 * on the embedded database, the query itself) is synchronous work on the event loop's thread;
 * when many requests' answers are ready at once they would all be processed in one turn, back to
 * back, while other sockets wait, so a `/healthz` or a small request would wait for all of them.
 * The gate lets the first caller of a turn through at once and queues the others, one per later
 * turn (`setImmediate`), so the loop reads and answers sockets in between. A caller on an idle
 * VNFM never waits.
 */
export class TurnGate {
  /** Someone went through in this turn. */
  private used = false;
  private readonly waiters: (() => void)[] = [];
  private scheduled = false;

  /** Resolves when it is this caller's turn (at once, as `undefined`, when the turn is free). */
  pass(): Promise<void> | undefined {
    if (!this.used && this.waiters.length === 0) {
      this.used = true;
      this.schedule();
      return undefined;
    }
    const p = new Promise<void>((r) => this.waiters.push(r));
    this.schedule();
    return p;
  }

  /** Callers waiting for a turn. */
  get waiting(): number {
    return this.waiters.length;
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.used = false;
      const next = this.waiters.shift();
      if (next) {
        this.used = true;
        next();
        this.schedule();
      }
    });
  }
}
