/**
 * The deadline of a stop: a VNFM stopping on SIGTERM/SIGINT ends within `runner.shutdownGraceMs` +
 * `runner.shutdownMarginMs` whatever hangs (a VIM call that ignores its abort, a database that
 * does not answer, a connection that is never closed). The deadline timer is not unref'd: it keeps
 * the process alive until it fires, so a stop whose pending work holds nothing on the event loop
 * still ends with the log line and the exit code instead of a silent exit.
 */
import type { Logger } from '../logger.ts';

/** What {@link stopWithDeadline} stops. */
export interface Stoppable {
  close(): Promise<void>;
  /** Names of the stop steps that began and have not finished. */
  pendingStopSteps(): string[];
}

/** Options of {@link stopWithDeadline}. */
export interface StopDeadlineOptions {
  deadlineMs: number;
  log: Logger;
  /** @default process.exit */
  exit?: (code: number) => void;
}

/**
 * Closes `vnfm`; exits 0 when it closed, or 1 at the deadline, after logging (error) the stop
 * steps still pending. Exits 1 too when the close failed.
 */
export async function stopWithDeadline(vnfm: Stoppable, o: StopDeadlineOptions): Promise<void> {
  const exit = o.exit ?? ((code: number) => process.exit(code));
  let done = false;
  const t0 = Date.now();
  const timer = setTimeout(() => {
    if (done) return;
    done = true;
    o.log.error({ deadlineMs: o.deadlineMs, pending: vnfm.pendingStopSteps() }, 'stop did not finish within runner.shutdownGraceMs + runner.shutdownMarginMs; exiting with what is still pending');
    exit(1);
  }, o.deadlineMs);
  let code = 0;
  try {
    await vnfm.close();
  } catch (e) {
    o.log.error({ err: e }, 'stop failed');
    code = 1;
  }
  if (done) return;
  done = true;
  clearTimeout(timer);
  o.log.info({ ms: Date.now() - t0 }, 'stopped');
  exit(code);
}
