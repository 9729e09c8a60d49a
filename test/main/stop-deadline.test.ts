/**
 * The stop deadline (src/main/shutdown.ts): a VNFM whose stop cannot finish (a stop step that
 * never resolves) still ends, at `runner.shutdownGraceMs` + `runner.shutdownMarginMs`, with an
 * error line naming the stuck step and exit code 1; a stop that finishes exits 0 with `stopped`.
 * The exit is a recorded call here (the real process exit is covered by
 * test/e2e/stop-process.test.ts).
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { VnfmPlugin } from '../../src/core/services.ts';
import { stopWithDeadline } from '../../src/main/shutdown.ts';
import { testVnfm } from '../helpers/app.ts';
import { guard } from '../helpers/wait.ts';

it('a stop step that never resolves: the process exits 1 at grace + margin, the log names the stuck step', { timeout: 600_000 }, async () => {
  let stopCalled!: () => void;
  const stopReached = new Promise<void>((r) => (stopCalled = r));
  /** Lets the stuck step end once the test is over (so the rest of the VNFM closes). */
  let unstick!: () => void;
  const stuck = new Promise<void>((r) => (unstick = r));
  const neverStops: VnfmPlugin = () => ({
    stop: () => {
      stopCalled();
      return stuck;
    },
  });
  const vnfm = await testVnfm({ plugins: [neverStops], config: { runner: { shutdownGraceMs: 1000, shutdownMarginMs: 1000 } } });
  const cfg = vnfm.ctx.config.runner;
  let exited!: (code: number) => void;
  const exitCode = new Promise<number>((r) => (exited = r));
  const stopping = stopWithDeadline(vnfm, { deadlineMs: cfg.shutdownGraceMs + cfg.shutdownMarginMs, log: vnfm.ctx.log, exit: exited });
  await guard('the stop to reach the stuck step', stopReached, 120_000);
  assert.deepEqual(vnfm.pendingStopSteps(), ['plugin neverStops']);
  const code = await guard('the deadline to end the stop (hang guard)', exitCode, 120_000);
  assert.equal(code, 1);
  const line = vnfm.logs.map((l) => JSON.parse(l)).find((l) => /stop did not finish/.test(l.msg));
  assert.ok(line, 'the deadline is logged');
  assert.equal(line.level, 50);
  assert.equal(line.deadlineMs, 2000);
  assert.deepEqual(line.pending, ['plugin neverStops'], 'the stuck step is named');
  assert.ok(!vnfm.logs.some((l) => /"msg":"stopped"/.test(l)));
  // clean-up: the step ends, the rest of the VNFM closes; nothing more is logged or exited
  unstick();
  await stopping;
  assert.ok(!vnfm.logs.some((l) => /"msg":"stopped"/.test(l)), 'the deadline already ended the stop');
});

it('a stop that finishes exits 0 with "stopped", and the deadline does not fire afterwards', { timeout: 600_000 }, async () => {
  const vnfm = await testVnfm({ config: { runner: { shutdownGraceMs: 1000, shutdownMarginMs: 1000 } } });
  const codes: number[] = [];
  await stopWithDeadline(vnfm, { deadlineMs: 2000, log: vnfm.ctx.log, exit: (c) => codes.push(c) });
  assert.deepEqual(codes, [0]);
  assert.deepEqual(vnfm.pendingStopSteps(), []);
  assert.ok(vnfm.logs.some((l) => /"msg":"stopped"/.test(l)));
});
