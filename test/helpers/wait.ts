/**
 * Waiting in tests on a positive condition, with a generous guard that only turns a hang into a
 * failure (never a timing assertion).
 */
import { setTimeout as sleep } from 'node:timers/promises';

/** Polls `fn` every `everyMs` until it returns a truthy value; throws after `guardMs`. */
export async function until<T>(what: string, fn: () => Promise<T | undefined | false> | T | undefined | false, guardMs: number, everyMs = 100): Promise<T> {
  const end = Date.now() + guardMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`gave up waiting for ${what} after ${guardMs} ms`);
    await sleep(everyMs);
  }
}

/** Awaits `p`, failing with a clear message if it has not settled after `guardMs`. */
export async function guard<T>(what: string, p: Promise<T>, guardMs: number): Promise<T> {
  let t: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    t = setTimeout(() => reject(new Error(`gave up waiting for ${what} after ${guardMs} ms`)), guardMs);
  });
  try {
    return await Promise.race([p, timeout]);
  } finally {
    clearTimeout(t);
  }
}
