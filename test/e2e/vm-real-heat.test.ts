/**
 * VM VNF healing end to end against a REAL Keystone + Heat (`scripts/real-heat.sh`), with
 * nova/neutron/cinder as stand-in templates given to the VIM as its Heat environment
 * (`extra.heat_environment[_files]` on `POST /v1.0/vims`). The same scenarios as the simulator
 * file, chained on two instances to keep the run short (every Heat operation takes seconds):
 * VNFC heal (v2, v1), scale-out then heal, a heal whose Heat wait fails then retried, entire
 * heal (v2 `all: true`, v1 `{}`).
 *
 * Test stage `real-heat` (test/helpers/stages.ts): `.ci/run` starts it with `scripts/real-heat.sh up`.
 */
import { after, before, describe, it } from 'node:test';
import { stage } from '../helpers/stages.ts';
import { instantiated, startVmEnv, terminate, type VmEnv } from './vm-fixture.ts';
import { checkInstantiated, failedHealThenRetry, healEntire, healOneVnfc, scaleOut } from './vm-scenarios.ts';

const realHeat = await stage('real-heat');

describe('VM heal e2e (real Keystone + Heat)', { timeout: 900_000, skip: realHeat.skip }, () => {
  let env: VmEnv;
  const created: string[] = [];
  let v2Id = '';
  let v1Id = '';

  before(async () => {
    env = await startVmEnv({ target: 'real' });
  });
  after(async () => {
    if (env === undefined) return;
    for (const id of created) await terminate(env, id).catch(() => undefined);
    await env.close();
  });

  const timed = async <T>(what: string, fn: () => Promise<T>): Promise<T> => {
    const t0 = performance.now();
    const r = await fn();
    console.log(`# real Heat: ${what}: ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    return r;
  };

  it('instantiates v2 and v1 instances on the default VIM (stand-in environment sent with the create)', async () => {
    [v2Id, v1Id] = await timed('2 instantiates (parallel)', () => Promise.all([instantiated(env, 'v2', 'vm-real-v2'), instantiated(env, 'v1', 'vm-real-v1')]));
    created.push(v2Id, v1Id);
    await checkInstantiated(env, v2Id);
    await checkInstantiated(env, v1Id);
  });

  it('heals one VNFC of the scaling group (v2) and the standalone VDU2 (v1): only that server is replaced', async () => {
    await timed('VNFC heal (v2, group member)', () => healOneVnfc(env, v2Id, { v: 'v2', vduId: 'VDU1' }));
    await timed('VNFC heal (v1, VDU2)', () => healOneVnfc(env, v2Id, { v: 'v1', vduId: 'VDU2' }));
  });

  it('heals after a scale-out (with the VNFC volume): member count and scale level kept', async () => {
    await timed('scale out', () => scaleOut(env, v2Id));
    await timed('VNFC + volume heal after scale-out', () => healOneVnfc(env, v2Id, { v: 'v2', vduId: 'VDU1', storage: true }));
  });

  it('a heal whose Heat wait fails goes FAILED_TEMP; retry completes it', async () => {
    // The real Heat has no fault injection: a too-short stack wait fails the heal while Heat is
    // still updating, like a Heat that does not answer in time; retry resumes without re-marking.
    const config = env.vnfm.ctx.config;
    const normal = config.vim.stackTimeoutMs;
    await timed('failed heal + retry', () =>
      failedHealThenRetry(env, v2Id, {
        inject: async () => {
          config.vim.stackTimeoutMs = 1500;
        },
        clear: async () => {
          config.vim.stackTimeoutMs = normal;
        },
        detail: /did not reach UPDATE_COMPLETE within 1500 ms/,
      }),
    );
  });

  it('heals the entire VNF: v2 `all: true` (after scale-out) and v1 `{}`', async () => {
    await timed('entire heal v2 + v1 (parallel)', () => Promise.all([healEntire(env, v2Id, 'v2'), healEntire(env, v1Id, 'v1')]));
  });
});
