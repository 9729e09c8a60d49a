/**
 * A VNF whose VIM resources vanished is an error, never "a VNF without resources" (VNFM over HTTP
 * with the simulated OpenStack and Kubernetes):
 *
 * - VM: a HEAL fails after its infra step (an end hook fails), then its Heat stack is deleted
 *   through the sim's Heat API. The retry runs the observation, which used to see "no resources"
 *   and end COMPLETED with every VNFC REMOVED; now it is FAILED_TEMP with
 *   `VNFM_ERR_INFRA_STACK_MISSING` and the instance information is untouched. A fresh heal and a
 *   drift sync fail the same way; a heal of the entire VNF re-creates the stack.
 * - CNF: the same with the namespace deleted; a sync (API and background pass) reports the
 *   missing CNF and stores nothing; workloads all deleted with the namespace left are missing too.
 *
 * The failure after the infra step is positioned by a test management driver failing `heal_end`
 * while a flag is set (no timing involved).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { vnfmError } from '../../src/errors.ts';
import { DriftSync, resolveSyncOptions } from '../../src/lcm/sync.ts';
import type { MgmtDriver } from '../../src/mgmt/mgmt-driver.ts';
import { call, login, waitStack } from '../sim/openstack/helpers.ts';
import * as cnf from './cnf-fixture.ts';
import * as vm from './vm-fixture.ts';

const MISSING = 'urn:vnfm:error:VNFM_ERR_INFRA_STACK_MISSING';

/** A management driver failing `heal_end` of the instances in `failing`. */
function failingEndHook(failing: Set<string>): MgmtDriver {
  return {
    name: 'test-failing-heal-end',
    applies: (ctx) => ctx.hook === 'heal_end' && failing.has(ctx.instance.id),
    run: async () => {
      throw vnfmError('VNFM_ERR_MGMT_FAILED', 'test: heal_end fails while the flag is set');
    },
  };
}

describe('VM: the Heat stack vanished (simulated OpenStack)', { timeout: 300_000 }, () => {
  let env: vm.VmEnv;
  const failing = new Set<string>();

  before(async () => {
    env = await vm.startVmEnv({ target: 'sim' });
    env.vnfm.ctx.engine?.mgmt.register(failingEndHook(failing));
  });
  after(async () => {
    await env?.close();
  });

  async function deleteStack(info: vm.Json): Promise<void> {
    const { stack_name: name, stack_id: stackId } = info.metadata as { stack_name: string; stack_id: string };
    const s = await login(env.sim as NonNullable<typeof env.sim>);
    const url = `${s.heat}/stacks/${name}/${stackId}`;
    const del = await call('DELETE', url, s.token);
    assert.equal(del.status, 204, JSON.stringify(del.body));
    const gone = await waitStack(s, url, (st) => st === 'DELETE_COMPLETE', 30_000);
    assert.equal(gone?.stack_status, 'DELETE_COMPLETE');
  }

  it('a HEAL retried after its stack was deleted: FAILED_TEMP with VNFM_ERR_INFRA_STACK_MISSING, instance unchanged; then heal, sync likewise; an entire heal re-creates it', async () => {
    const id = await vm.instantiated(env, 'v2', 'vanishing-vm');
    const before = await vm.getInstance(env, id);
    const info0 = before.instantiatedVnfInfo;
    assert.ok(info0.vnfcInfo.length > 0);
    const target = info0.vnfcInfo[0];

    failing.add(id);
    const opId = await vm.request(env, 'v2', id, 'heal', { vnfcInstanceId: [target.id] });
    const first = await vm.waitOp(env, opId, 'FAILED_TEMP');
    assert.equal(first.error.type, 'urn:vnfm:error:VNFM_ERR_MGMT_FAILED', 'failed after the infra step');
    failing.delete(id);

    await deleteStack(info0);
    assert.equal((await env.api('POST', `/vnflcm/v2/vnf_lcm_op_occs/${opId}/retry`)).status, 202);
    const retried = await vm.waitOp(env, opId, 'FAILED_TEMP');
    assert.equal(retried.error.type, MISSING, JSON.stringify(retried.error));
    assert.equal(retried.error.status, 409);
    assert.match(retried.error.detail, new RegExp(`Heat stack ${info0.metadata.stack_name}/${info0.metadata.stack_id} of VNF instance ${id} does not exist any more`));
    assert.equal(retried.resourceChanges, undefined, 'nothing reported as removed');
    const during = await vm.getInstance(env, id);
    assert.equal(during.instantiationState, 'INSTANTIATED');
    assert.deepEqual(during.instantiatedVnfInfo, info0, 'instance information unchanged');

    // A fresh heal fails the same way, and so does a drift sync; nothing is stored.
    assert.equal((await env.api('POST', `/vnflcm/v2/vnf_lcm_op_occs/${opId}/fail`)).status, 200);
    const fresh = await vm.waitOp(env, await vm.request(env, 'v2', id, 'heal', { vnfcInstanceId: [target.id] }), 'FAILED_TEMP');
    assert.equal(fresh.error.type, MISSING);
    assert.equal((await env.api('POST', `/vnflcm/v2/vnf_lcm_op_occs/${fresh.id}/fail`)).status, 200);
    const sync = await env.api('POST', `/vnflcm/v2/vnf_instances/${id}/sync`);
    assert.equal(sync.status, 409, sync.text);
    assert.equal(sync.body.type, MISSING);
    assert.deepEqual((await vm.getInstance(env, id)).instantiatedVnfInfo, info0, 'still unchanged');

    // The way out the error names: heal the entire VNF, which re-creates the stack.
    const entire = await vm.waitOp(env, await vm.request(env, 'v2', id, 'heal', { additionalParams: { all: true } }), 'COMPLETED');
    assert.equal(entire.operationState, 'COMPLETED');
    const healed = (await vm.getInstance(env, id)).instantiatedVnfInfo;
    assert.notEqual(healed.metadata.stack_id, info0.metadata.stack_id, 'a new stack');
    assert.deepEqual(healed.vnfcInfo.map((v: vm.Json) => v.id).sort(), info0.vnfcInfo.map((v: vm.Json) => v.id).sort(), 'same VNFCs');
    await vm.terminate(env, id);
  });
});

describe('CNF: the namespace or the workloads vanished (simulated Kubernetes)', { timeout: 300_000 }, () => {
  let env: cnf.CnfEnv;
  const failing = new Set<string>();

  before(async () => {
    env = await cnf.startCnfEnv();
    env.vnfm.ctx.engine?.mgmt.register(failingEndHook(failing));
  });
  after(async () => {
    await env?.close();
  });

  async function gone(ref: { apiVersion: string; kind: string; name: string; namespace?: string }): Promise<void> {
    await cnf.until(`${ref.kind} ${ref.name} gone`, async () => ((await env.kube.get(ref)) === undefined ? true : undefined), 60_000);
  }

  it('a HEAL retried after the namespace was deleted: FAILED_TEMP with VNFM_ERR_INFRA_STACK_MISSING, instance unchanged; sync reports it and stores nothing', async () => {
    const NS = 'cnf-vanish';
    const id = await cnf.createInstance(env, 'v2', 'vanishing-cnf');
    await cnf.instantiate(env, id, NS);
    const info0 = (await cnf.getInstance(env, id)).instantiatedVnfInfo;
    const [target] = cnf.vnfcsOf({ instantiatedVnfInfo: info0 }, 'VDU3');
    assert.ok(target);

    failing.add(id);
    const opId = cnf.opIdOf(await env.api('POST', `/vnflcm/v2/vnf_instances/${id}/heal`, { vnfcInstanceId: [target.info.id] }));
    const first = await cnf.waitOp(env, opId, 'FAILED_TEMP');
    assert.equal(first.error.type, 'urn:vnfm:error:VNFM_ERR_MGMT_FAILED', 'failed after the infra step');
    failing.delete(id);

    await env.kube.delete({ apiVersion: 'v1', kind: 'Namespace', name: NS });
    await gone({ apiVersion: 'v1', kind: 'Namespace', name: NS });
    assert.equal((await env.api('POST', `/vnflcm/v2/vnf_lcm_op_occs/${opId}/retry`)).status, 202);
    const retried = await cnf.waitOp(env, opId, 'FAILED_TEMP');
    assert.equal(retried.error.type, MISSING, JSON.stringify(retried.error));
    assert.match(retried.error.detail, new RegExp(`namespace ${NS} does not exist: the CNF of VNF instance ${id} was deleted outside the VNFM`));
    const during = await cnf.getInstance(env, id);
    assert.equal(during.instantiationState, 'INSTANTIATED');
    assert.deepEqual(during.instantiatedVnfInfo, info0, 'instance information unchanged');

    assert.equal((await env.api('POST', `/vnflcm/v2/vnf_lcm_op_occs/${opId}/fail`)).status, 200);
    const sync = await env.api('POST', `/vnflcm/v2/vnf_instances/${id}/sync`);
    assert.equal(sync.status, 409, sync.text);
    assert.equal(sync.body.type, MISSING);
    // The background pass: counted and logged at error level, nothing stored.
    const ctx = env.vnfm.ctx;
    assert.ok(ctx.engine);
    const pass = await new DriftSync({ ctx, engine: ctx.engine, options: resolveSyncOptions({ intervalMs: 0, vimTypes: ['ETSINFV.KUBERNETES.V_1'] }) }).syncAll();
    assert.ok(pass.missing >= 1, JSON.stringify(pass));
    const logged = env.vnfm.logs.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.vnfInstanceId === id && l.component === 'drift-sync' && l.level === 50);
    assert.ok(logged.length >= 1, 'logged at error level');
    assert.match(await (await fetch(`${env.vnfm.url}/metrics`)).text(), /vnfm_sync_total\{result="missing"\} [1-9]/);
    assert.deepEqual((await cnf.getInstance(env, id)).instantiatedVnfInfo, info0, 'still unchanged');
  });

  it('every workload deleted (namespace kept): the sync reports the CNF missing and stores nothing', async () => {
    const NS = 'cnf-hollow';
    const id = await cnf.createInstance(env, 'v2', 'hollow-cnf');
    await cnf.instantiate(env, id, NS);
    const info0 = (await cnf.getInstance(env, id)).instantiatedVnfInfo;
    const workloads = (info0.metadata.kubernetesResources as { apiVersion: string; kind: string; name: string; vduId?: string }[]).filter((r) => r.vduId !== undefined);
    assert.equal(workloads.length, 5);
    for (const w of workloads) await env.kube.delete({ apiVersion: w.apiVersion, kind: w.kind, name: w.name, namespace: NS });
    for (const w of workloads) await gone({ apiVersion: w.apiVersion, kind: w.kind, name: w.name, namespace: NS });
    await cnf.until('no pod of the CNF left', async () => ((await cnf.podsOf(env, NS, id)).length === 0 ? true : undefined), 60_000);

    const sync = await env.api('POST', `/vnflcm/v2/vnf_instances/${id}/sync`);
    assert.equal(sync.status, 409, sync.text);
    assert.equal(sync.body.type, MISSING);
    assert.match(sync.body.detail, /none of the 5 workloads of the CNF .* exists in namespace cnf-hollow/);
    assert.deepEqual((await cnf.getInstance(env, id)).instantiatedVnfInfo, info0, 'instance information unchanged');
  });
});
