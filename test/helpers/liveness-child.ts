/**
 * A process for test/api/liveness.test.ts: two listening VNFMs sharing this process's main
 * thread, each with a liveness port: `patient` with the default `health.maxStallMs` (10 s),
 * `strict` with 300 ms. Driven over IPC:
 *
 * - `{ type: 'block', started, release }` wedges the main thread: it writes the file `started`
 *   (synchronously, from inside the block), then neither runs timers nor I/O until the file
 *   `release` exists (checked every 5 ms while the thread sleeps in `Atomics.wait`; a 120 s guard
 *   ends a block nobody releases). Then it sends `{ type: 'unblocked', released }`, `released`
 *   false when the guard ended it.
 * - `{ type: 'close' }` closes both VNFMs and sends `{ type: 'closed' }`.
 *
 * Run with `node --import tsx test/helpers/liveness-child.ts`; sends `{ type: 'ready', ... }` with
 * the URLs once both listen.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { freePort, testVnfm } from './app.ts';

const GUARD_NS = 120_000_000_000n;

const patient = await testVnfm({ listen: true, config: { health: { livenessPort: await freePort() } } });
const strict = await testVnfm({ listen: true, config: { health: { livenessPort: await freePort(), maxStallMs: 300 } } });

function block(started: string, release: string): boolean {
  const sleeper = new Int32Array(new SharedArrayBuffer(4));
  const end = process.hrtime.bigint() + GUARD_NS;
  writeFileSync(started, String(process.pid));
  while (!existsSync(release)) {
    if (process.hrtime.bigint() > end) return false;
    Atomics.wait(sleeper, 0, 0, 5);
  }
  return true;
}

process.on('message', async (m: { type: string; started?: string; release?: string }) => {
  if (m.type === 'block') {
    const released = block(m.started as string, m.release as string);
    process.send?.({ type: 'unblocked', released });
  } else if (m.type === 'close') {
    await patient.close();
    await strict.close();
    process.send?.({ type: 'closed' });
    process.disconnect();
  }
});
process.send?.({ type: 'ready', patient: { api: patient.url, liveness: patient.livenessUrl }, strict: { api: strict.url, liveness: strict.livenessUrl } });
