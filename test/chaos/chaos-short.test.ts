/**
 * The chaos harness (bench/chaos/harness.ts) in short: about 45 s of heals, scales and server
 * faults while VNFM processes are killed with SIGKILL and restarted, the simulated VIMs fail and
 * slow down and the notification subscriber goes away; then every invariant must hold (ops final,
 * each op executed once at the VIM, one heal per fault batch, notifications all delivered in
 * order, instance info equal to the VIMs). Two replicas on PostgreSQL (stage `pg`) and one
 * process on PGlite. Kills are more frequent than in the full run so that a short run has a few.
 * No timing is asserted; the time limits are hang guards.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type ChaosReport, formatReport, runChaos } from '../../bench/chaos/harness.ts';
import { stage } from '../helpers/stages.ts';

const pg = await stage('pg');

function check(r: ChaosReport): void {
  const table = formatReport(r);
  assert.equal(r.violations, 0, `invariant violations:\n${table}`);
  assert.ok(r.kills >= 2, `at least 2 kills, got ${r.kills}\n${table}`);
  assert.equal(r.restarts, r.kills, `every killed replica restarted\n${table}`);
  assert.ok(r.opsTotal >= 10, `at least 10 ops, got ${r.opsTotal}\n${table}`);
  assert.ok(r.notificationsDelivered > 0, table);
}

// minAccepted: on a loaded machine the run goes on until the drivers had 7 requests accepted (with the 3 instantiates, the 10 ops checked).
const common = { durationMs: 45_000, minAccepted: 7, killEveryMs: [5_000, 10_000] as [number, number], downMs: [500, 2_000] as [number, number], subscriberOutageMs: 15_000, quiesceMs: 180_000, vmInstances: 2, cnfInstances: 1, keepLogs: false, log: () => {} };

describe('chaos harness, short run', { concurrency: 1 }, () => {
  it('PostgreSQL, 2 replicas: no invariant violated', { skip: pg.skip, timeout: 900_000 }, async () => {
    check(await runChaos({ ...common, db: 'pg', replicas: 2, seed: 4242 }));
  });
  it('PGlite, 1 process killed and restarted: no invariant violated', { timeout: 900_000 }, async () => {
    check(await runChaos({ ...common, db: 'pglite', seed: 4343 }));
  });
});
