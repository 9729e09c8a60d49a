/**
 * Live fault settings of the API front end: added latency and a "broken" mode answering 503 (or
 * another 5xx) for the next N requests or until cleared. The `/_sim` control endpoints are never
 * affected, so a test can always repair what it broke.
 */

/** Mutable API fault state. */
export class ApiFaults {
  /** Extra delay added before every Kubernetes API request. */
  latencyMs = 0;
  /** Requests still to fail; `Infinity` = until cleared, 0 = healthy. */
  breakRemaining = 0;
  /** HTTP status answered while broken. */
  breakStatus = 503;

  /** Consumes one failure if the API is broken; true when this request must fail. */
  takeBreak(): boolean {
    if (this.breakRemaining <= 0) return false;
    this.breakRemaining--;
    return true;
  }

  /** Back to a healthy API without latency. */
  clear(): void {
    this.latencyMs = 0;
    this.breakRemaining = 0;
    this.breakStatus = 503;
  }

  /** JSON summary for `/_sim/state`. */
  summary(): Record<string, unknown> {
    return {
      latencyMs: this.latencyMs,
      broken: this.breakRemaining > 0,
      breakRemaining: this.breakRemaining === Infinity ? 'until-cleared' : this.breakRemaining,
      breakStatus: this.breakStatus,
    };
  }
}
