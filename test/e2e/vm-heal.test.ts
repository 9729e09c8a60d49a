/**
 * VM VNF healing end to end on the simulated OpenStack: the VNFM's HTTP API, the OpenStack driver
 * and the simulated Keystone/Heat/Nova over loopback. VIM registered through `/v1.0/vims`, the
 * sample VM package onboarded through the package API; VNFC heal (v2 and v1), entire heal (v1
 * `{}` and v2 `all: true`), heal after a scale-out, and a failed Heat update retried.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { getInstance, instantiated, notificationsOf, request, serversOf, stackOf, startVmEnv, type VmEnv, waitOp } from './vm-fixture.ts';
import { checkInstantiated, failedHealThenRetry, healEntire, healEveryVnfc, healOneVnfc, matchesHeat, scaleOut, validInstance } from './vm-scenarios.ts';

let env: VmEnv;

before(async () => {
  env = await startVmEnv({ target: 'sim', heatDelayMs: 20 });
});
after(async () => {
  await env?.close();
});

describe('VM heal e2e (simulated OpenStack)', () => {
  it('instantiates on the default VIM, then heals one VNFC (v2, v1, v2 with its volume): only that server is replaced', async () => {
    const id = await instantiated(env, 'v2', 'vm-e2e-vnfc');
    await checkInstantiated(env, id);
    await healOneVnfc(env, id, { v: 'v2', vduId: 'VDU1' }); // a scaling group member (nested stack)
    await healOneVnfc(env, id, { v: 'v1', vduId: 'VDU2' }); // a top-level server
    await healOneVnfc(env, id, { v: 'v2', vduId: 'VDU1', storage: true }); // with its volume (all: true)
  });

  it('instantiated without external virtual links: extCpInfo still lists the external CPs, v2 and v1 bodies are ETSI-valid', async () => {
    const c = await env.api('POST', '/vnflcm/v2/vnf_instances', { vnfdId: env.vnfdId, vnfInstanceName: 'vm-e2e-no-ext-vl' });
    const id = c.body.id as string;
    await waitOp(env, await request(env, 'v2', id, 'instantiate', { flavourId: 'simple' }), 'COMPLETED');
    const inst = await validInstance(env, id);
    const ext = inst.instantiatedVnfInfo.extCpInfo as { cpdId: string; associatedVnfcCpId: string; cpProtocolInfo: unknown[] }[];
    assert.deepEqual(ext.map((e) => e.cpdId).sort(), ['VDU1_CP1', 'VDU1_CP1', 'VDU2_CP1'], 'the sample VNFD declares no external CP: the first CP of each VNFC');
    for (const e of ext) assert.ok(e.cpProtocolInfo.length > 0, 'with its addresses');
    assert.equal(inst.extVirtualLinkInfo, undefined);
    const v1 = await getInstance(env, id, 'v1');
    assert.equal((await env.api('GET', `/vnfpkgm/v1/vnf_packages/${v1.vnfPkgId}`)).body.vnfdId, env.vnfdId, 'v1 vnfPkgId names the package');
    await waitOp(env, await request(env, 'v2', id, 'terminate', { terminationType: 'FORCEFUL' }), 'COMPLETED');
  });

  it('v1 heal of the entire VNF (`{}`) re-creates the stack: new stack id, servers and volumes', async () => {
    const id = await instantiated(env, 'v1', 'vm-e2e-v1-entire');
    await checkInstantiated(env, id);
    await healEntire(env, id, 'v1');
  });

  it('v2 heal with additionalParams.all re-creates the stack, volumes included; v2 `{}` heals every VNFC in place', async () => {
    const id = await instantiated(env, 'v2', 'vm-e2e-v2-all');
    await healEntire(env, id, 'v2');
    // and the re-created VNF heals per VNFC like the original; `{}` on v2 heals every VNFC in place
    await healOneVnfc(env, id, { v: 'v2', vduId: 'VDU1' });
    await healEveryVnfc(env, id);
  });

  it('heal after a scale-out keeps the member count and the scale level', async () => {
    const id = await instantiated(env, 'v2', 'vm-e2e-scaled');
    const scaled = await scaleOut(env, id);
    assert.equal(scaled.instantiatedVnfInfo.vnfcResourceInfo.filter((r: { vduId: string }) => r.vduId === 'VDU1').length, 3);
    await healOneVnfc(env, id, { v: 'v2', vduId: 'VDU1' });
    await healEntire(env, id, 'v2');
  });

  it('a failed Heat update leaves the heal FAILED_TEMP; retry after the fault is cleared completes it', async () => {
    const id = await instantiated(env, 'v2', 'vm-e2e-retry');
    await failedHealThenRetry(env, id, {
      inject: async () => {
        await env.simControl('POST', 'heat/failures', { operation: 'update', count: 1, reason: 'Error: resources.VDU1: simulated nova outage' });
      },
      clear: async () => {
        await env.simControl('DELETE', 'heat/failures');
      },
      detail: /simulated nova outage/,
    });
  });

  it('entire heal whose stack re-create fails: retry completes on the new stack; fail then terminate cleans up', async () => {
    const id = await instantiated(env, 'v2', 'vm-e2e-entire-retry');
    const before = await getInstance(env, id);
    const old = stackOf(before);
    await env.simControl('POST', 'heat/failures', { operation: 'create', reason: 'Error: resources.VDU2: simulated quota exceeded' });
    const opId = await request(env, 'v2', id, 'heal', { additionalParams: { all: true } });
    const failed = await waitOp(env, opId, 'FAILED_TEMP');
    assert.match(String(failed.error.detail), /simulated quota exceeded/);
    assert.equal((await env.heat.stack(old.name, old.id)).stack_status, 'DELETE_COMPLETE', 'the old stack was deleted before the create failed');
    const retry = await env.api('POST', `/vnflcm/v2/vnf_lcm_op_occs/${opId}/retry`);
    assert.equal(retry.status, 202, retry.text);
    await waitOp(env, opId, 'COMPLETED');
    const after = await validInstance(env, id);
    assert.notEqual(stackOf(after).id, old.id);
    assert.equal(after.instantiatedVnfInfo.vnfcResourceInfo.length, 3);
    for (const [rid, srv] of serversOf(after)) assert.notEqual(srv, serversOf(before).get(rid));
    await matchesHeat(env, after);

    // Same failure, then `fail`: the instance is left INSTANTIATED (FAILED is final, no rollback
    // of a heal) and terminate still finds and deletes whatever stack exists.
    await env.simControl('POST', 'heat/failures', { operation: 'create' });
    const op2 = await request(env, 'v2', id, 'heal', { additionalParams: { all: true } });
    await waitOp(env, op2, 'FAILED_TEMP');
    const f = await env.api('POST', `/vnflcm/v2/vnf_lcm_op_occs/${op2}/fail`);
    assert.equal(f.status, 200, f.text);
    assert.equal(f.body.operationState, 'FAILED');
    assert.deepEqual(await notificationsOf(env, op2), ['STARTING/START', 'PROCESSING/START', 'FAILED_TEMP/RESULT', 'FAILED/RESULT']);
    const t = await request(env, 'v2', id, 'terminate', { terminationType: 'FORCEFUL' });
    await waitOp(env, t, 'COMPLETED');
    assert.equal((await getInstance(env, id)).instantiationState, 'NOT_INSTANTIATED');
    assert.equal((await env.heat.get(`/stacks/vnf-${id}`)).status, 404, 'no live stack left');
  });
});
