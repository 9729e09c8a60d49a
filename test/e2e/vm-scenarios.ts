/**
 * VM heal scenarios shared by the simulator and the real-Heat e2e files: each step drives the
 * VNFM over HTTP and then checks the result three ways: the VNFM's instance and op occ bodies
 * (ids, states, ETSI conformance), the notifications in the outbox, and Heat itself (which
 * physical resources really changed).
 *
 * Assertions are relative to the state before the step, so the real-Heat file can chain the
 * steps on one instance while the simulator file uses a fresh instance per test.
 */
import assert from 'node:assert/strict';
import { expectEtsiValid } from '../helpers/etsi.ts';
import {
  getInstance,
  type Json,
  notificationBodies,
  notificationsOf,
  request,
  serversOf,
  stackOf,
  type VmEnv,
  vnfcsOf,
  volumesOf,
  waitOp,
} from './vm-fixture.ts';

/** Notifications of an operation that ran straight through. */
export const STRAIGHT = ['STARTING/START', 'PROCESSING/START', 'COMPLETED/RESULT'];

function countOf(inst: Json, vduId: string): number {
  return (inst.instantiatedVnfInfo.vnfcResourceInfo as Json[]).filter((r) => r.vduId === vduId).length;
}

function levelOf(inst: Json, aspectId = 'VDU1_scale'): number | undefined {
  return ((inst.instantiatedVnfInfo.scaleStatus ?? []) as Json[]).find((s) => s.aspectId === aspectId)?.scaleLevel as number | undefined;
}

/** Both API views of the instance validate against ETSI; returns the v2 body. */
export async function validInstance(env: VmEnv, id: string): Promise<Json> {
  const v2 = await getInstance(env, id, 'v2');
  expectEtsiValid('v2', 'VnfInstance', v2);
  expectEtsiValid('v1', 'VnfInstance', await getInstance(env, id, 'v1'));
  return v2;
}

/** Both API views of the op occ validate against ETSI, and its notifications too; returns the v2 body. */
export async function validOpOcc(env: VmEnv, opId: string): Promise<Json> {
  const r2 = await env.api('GET', `/vnflcm/v2/vnf_lcm_op_occs/${opId}`);
  const r1 = await env.api('GET', `/vnflcm/v1/vnf_lcm_op_occs/${opId}`);
  expectEtsiValid('v2', 'VnfLcmOpOcc', r2.body);
  expectEtsiValid('v1', 'VnfLcmOpOcc', r1.body);
  for (const n of await notificationBodies(env, opId)) expectEtsiValid('v2', 'VnfLcmOperationOccurrenceNotification', n);
  return r2.body;
}

/** What Heat really runs matches what the instance reports, and the stack got the VIM's Heat environment. */
export async function matchesHeat(env: VmEnv, inst: Json): Promise<void> {
  const { name, id } = stackOf(inst);
  const stack = await env.heat.stack(name, id);
  assert.match(String(stack.stack_status), /^(CREATE|UPDATE)_COMPLETE$/);
  assert.deepEqual(await env.heat.serverIds(name, id), [...serversOf(inst).values()].sort(), 'the instance reports exactly the servers Heat has');
  const registry = ((await env.heat.environment(name, id)).resource_registry ?? {}) as Json;
  assert.equal(registry['OS::Nova::Server'], 'fake_server.yaml', 'the VIM Heat environment was sent with the stack create');
}

/** Addresses of each VNFC's CPs (vnfcResourceInfo id -> sorted addresses). */
export function addressesOf(inst: Json): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const r of inst.instantiatedVnfInfo.vnfcResourceInfo as Json[]) {
    const list: string[] = [];
    for (const cp of (r.vnfcCpInfo ?? []) as Json[]) for (const p of (cp.cpProtocolInfo ?? []) as Json[]) for (const ip of (p.ipOverEthernet?.ipAddresses ?? []) as Json[]) list.push(...(ip.addresses as string[]));
    out.set(r.id as string, list.sort());
  }
  return out;
}

/** A freshly instantiated sample VNF: 2 VDU1 (scaling group) + VDU2, 3 volumes, ext CPs, valid bodies. */
export async function checkInstantiated(env: VmEnv, id: string): Promise<Json> {
  const inst = await validInstance(env, id);
  const info = inst.instantiatedVnfInfo;
  assert.equal(inst.instantiationState, 'INSTANTIATED');
  assert.equal(countOf(inst, 'VDU1'), 2);
  assert.equal(countOf(inst, 'VDU2'), 1);
  assert.equal(levelOf(inst), 1);
  assert.equal(volumesOf(inst).size, 3);
  assert.equal(info.extCpInfo?.length, 2, 'one ext CP per VDU1 VNFC');
  for (const v of vnfcsOf(inst, 'VDU1')) {
    assert.match(String(v.res.metadata.heat_resource_path), /^VDU1_scale_group\/[^/]+\/VDU1$/);
    assert.equal(v.res.storageResourceIds?.length, 1, 'each VNFC has its volume');
  }
  assert.equal(vnfcsOf(inst, 'VDU2')[0]?.res.metadata.heat_resource_path, 'VDU2');
  for (const [rid, addrs] of addressesOf(inst)) assert.ok(addrs.length > 0, `VNFC ${rid} reports the addresses of its CP`);
  for (const e of info.extCpInfo as Json[]) assert.ok(e.cpProtocolInfo[0]?.ipOverEthernet?.ipAddresses?.length > 0, `ext CP ${e.id} has the addresses of its VNFC CP`);
  assert.ok(!JSON.stringify(inst).includes('password'), 'no credentials in the instance');
  await matchesHeat(env, inst);
  return inst;
}

/**
 * Heals the first VNFC of `vduId` (v2: by vnfcInfo id; v1: by vnfcResourceInfo id) and checks
 * that exactly that server was replaced: new physical id, same VNFC ids, every other Heat
 * resource (servers, ports, volumes, networks, member stacks) untouched, same stack. With
 * `storage` (v2 `additionalParams.all: true` next to the VNFC id) the VNFC's volume is replaced
 * too, and nothing else.
 */
export async function healOneVnfc(env: VmEnv, id: string, opts: { v: 'v1' | 'v2'; vduId: string; storage?: boolean }): Promise<Json> {
  const before = await getInstance(env, id);
  const target = vnfcsOf(before, opts.vduId)[0];
  assert.ok(target, `a ${opts.vduId} VNFC`);
  const stack = stackOf(before);
  const heatBefore = await env.heat.physicalIds(stack.name, stack.id);
  const vnfcInstanceId = opts.v === 'v2' ? target.info.id : target.res.id;
  const opId = await request(env, opts.v, id, 'heal', { vnfcInstanceId: [vnfcInstanceId], cause: 'e2e: one VNFC', ...(opts.storage ? { additionalParams: { all: true } } : {}) });
  const occ = await waitOp(env, opId, 'COMPLETED', opts.v);
  assert.equal(occ.operation, 'HEAL');
  assert.deepEqual(await notificationsOf(env, opId), STRAIGHT);
  const v2occ = await validOpOcc(env, opId);

  const after = await validInstance(env, id);
  assert.deepEqual(stackOf(after), stack, 'same stack');
  const ids = (i: Json) => vnfcsOf(i).map((v) => `${v.info.id}:${v.res.id}`).sort();
  assert.deepEqual(ids(after), ids(before), 'vnfcInfo and vnfcResourceInfo ids are stable');
  const s0 = serversOf(before);
  const s1 = serversOf(after);
  const oldServer = s0.get(target.res.id) as string;
  const newServer = s1.get(target.res.id) as string;
  assert.notEqual(newServer, oldServer, 'the healed VNFC runs on a new server');
  for (const [rid, srv] of s0) if (rid !== target.res.id) assert.equal(s1.get(rid), srv, `VNFC ${rid} untouched`);
  const ownVolumes = new Set<string>(target.res.storageResourceIds ?? []);
  const vol0 = volumesOf(before);
  const vol1 = volumesOf(after);
  assert.deepEqual([...vol1.keys()].sort(), [...vol0.keys()].sort(), 'virtualStorageResourceInfo ids stable');
  for (const [sid, vol] of vol0) {
    if (opts.storage && ownVolumes.has(sid)) assert.notEqual(vol1.get(sid), vol, `the healed VNFC's volume ${sid} is new`);
    else assert.equal(vol1.get(sid), vol, `volume ${sid} kept`);
  }
  if (opts.storage) {
    assert.ok(ownVolumes.size > 0, 'the target has a volume');
    assert.deepEqual(
      (v2occ.resourceChanges.affectedVirtualStorages as Json[]).map((a) => [a.id, a.changeType]),
      [...ownVolumes].map((sid) => [sid, 'MODIFIED']),
    );
  }
  const extIds = (i: Json) => (i.instantiatedVnfInfo.extCpInfo as Json[]).map((e) => `${e.id}:${e.associatedVnfcCpId}`).sort();
  assert.deepEqual(extIds(after), extIds(before), 'ext CP ids stable');
  // the replaced server keeps its port (a separate Heat resource): same addresses, reported again
  const addr0 = addressesOf(before);
  const addr1 = addressesOf(after);
  assert.ok((addr1.get(target.res.id) ?? []).length > 0, 'the healed VNFC reports its addresses');
  assert.deepEqual(addr1.get(target.res.id), addr0.get(target.res.id), 'the port, and so its addresses, is kept');
  assert.equal(levelOf(after), levelOf(before));
  assert.deepEqual(
    v2occ.resourceChanges.affectedVnfcs.map((a: Json) => [a.id, a.changeType, a.metadata?.replacedResourceId]),
    [[target.res.id, 'MODIFIED', oldServer]],
  );

  // Heat: exactly the target server (and with `storage` its volume) got a new physical id.
  const heatAfter = await env.heat.physicalIds(stack.name, stack.id);
  assert.deepEqual([...heatAfter.keys()].sort(), [...heatBefore.keys()].sort(), 'no Heat resource added or removed');
  const changed = [...heatAfter].filter(([k, r]) => heatBefore.get(k)?.id !== r.id);
  const expected: [string, string, string][] = [[opts.vduId, 'OS::Nova::Server', newServer]];
  for (const sid of opts.storage ? ownVolumes : []) {
    const st = (after.instantiatedVnfInfo.virtualStorageResourceInfo as Json[]).find((x) => x.id === sid) as Json;
    expected.push([st.virtualStorageDescId, 'OS::Cinder::Volume', st.storageResource.resourceId]);
  }
  assert.deepEqual(
    changed.map(([k, r]) => [k.slice(k.lastIndexOf('/') + 1), r.type, r.id]).sort(),
    expected.sort(),
    'only the target server (and its volume with storage) was replaced in Heat',
  );
  assert.ok(![...heatAfter.values()].some((r) => r.id === oldServer), 'the old server is gone');
  await matchesHeat(env, after);
  return after;
}

/**
 * Heals the whole VNF (v1: `{}`; v2: `additionalParams.all: true`): the stack is deleted and
 * created again, so the stack id, every server and every volume are new, while the VNFC ids,
 * the VDU member counts and the scale level stay.
 */
export async function healEntire(env: VmEnv, id: string, v: 'v1' | 'v2'): Promise<Json> {
  const before = await getInstance(env, id);
  const stack0 = stackOf(before);
  const body = v === 'v1' ? {} : { additionalParams: { all: true } };
  const opId = await request(env, v, id, 'heal', body);
  await waitOp(env, opId, 'COMPLETED', v);
  assert.deepEqual(await notificationsOf(env, opId), STRAIGHT);
  const occ = await validOpOcc(env, opId);
  const after = await validInstance(env, id);
  const stack1 = stackOf(after);
  assert.equal(stack1.name, stack0.name);
  assert.notEqual(stack1.id, stack0.id, 'instantiatedVnfInfo.metadata.stack_id changed');
  const v1view = await getInstance(env, id, 'v1');
  assert.equal(stackOf(v1view).id, stack1.id, 'the v1 view reports the new stack id too');
  assert.equal(String((await env.heat.stack(stack0.name, stack0.id)).stack_status), 'DELETE_COMPLETE', 'the old stack is deleted');

  const s0 = serversOf(before);
  const s1 = serversOf(after);
  assert.deepEqual([...s1.keys()].sort(), [...s0.keys()].sort(), 'vnfcResourceInfo ids stable');
  for (const [rid, srv] of s1) assert.notEqual(srv, s0.get(rid), `VNFC ${rid} on a new server`);
  // New ports on a new network: the MACs are new (the addresses may be the same, from the same subnet pool).
  const macs = (i: Json, rid: string) =>
    ((i.instantiatedVnfInfo.vnfcResourceInfo as Json[]).find((r) => r.id === rid)?.vnfcCpInfo as Json[] | undefined)?.map((c) => c.cpProtocolInfo?.[0]?.ipOverEthernet?.macAddress as string | undefined) ?? [];
  for (const [rid, addrs] of addressesOf(after)) {
    assert.ok(addrs.length > 0, `VNFC ${rid} reports the addresses of its new port`);
    const m1 = macs(after, rid);
    assert.ok(m1.length > 0 && m1.every((m) => m !== undefined), `VNFC ${rid} reports the MAC of its new port`);
    assert.notDeepEqual(m1, macs(before, rid), `VNFC ${rid} is on a new port`);
  }
  const vol0 = new Set(volumesOf(before).values());
  const vol1 = [...volumesOf(after).values()];
  assert.equal(vol1.length, vol0.size);
  for (const vol of vol1) assert.ok(!vol0.has(vol), `volume ${vol} is new`);
  assert.deepEqual(vnfcsOf(after).map((x) => x.info.id).sort(), vnfcsOf(before).map((x) => x.info.id).sort(), 'vnfcInfo ids stable');
  for (const vdu of ['VDU1', 'VDU2']) assert.equal(countOf(after, vdu), countOf(before, vdu), `${vdu} member count kept`);
  assert.equal(levelOf(after), levelOf(before), 'scale level kept');
  assert.deepEqual(
    (occ.resourceChanges.affectedVnfcs as Json[]).map((a) => a.changeType),
    [...s0.keys()].map(() => 'MODIFIED'),
  );
  await matchesHeat(env, after);
  return after;
}

/**
 * v2 heal without VNFC ids and without `all`: every VNFC is healed in place by one stack update
 * (every server new, same stack, volumes and VNFC ids kept).
 */
export async function healEveryVnfc(env: VmEnv, id: string): Promise<Json> {
  const before = await getInstance(env, id);
  const opId = await request(env, 'v2', id, 'heal', {});
  await waitOp(env, opId, 'COMPLETED');
  assert.deepEqual(await notificationsOf(env, opId), STRAIGHT);
  const occ = await validOpOcc(env, opId);
  const after = await validInstance(env, id);
  assert.deepEqual(stackOf(after), stackOf(before), 'same stack');
  const s0 = serversOf(before);
  const s1 = serversOf(after);
  assert.deepEqual([...s1.keys()].sort(), [...s0.keys()].sort(), 'vnfcResourceInfo ids stable');
  for (const [rid, srv] of s1) assert.notEqual(srv, s0.get(rid), `VNFC ${rid} on a new server`);
  assert.deepEqual(volumesOf(after), volumesOf(before), 'volumes kept');
  assert.equal((occ.resourceChanges.affectedVnfcs as Json[]).filter((a) => a.changeType === 'MODIFIED').length, s0.size);
  await matchesHeat(env, after);
  return after;
}

/** Scales VDU1 out by one step: one more member, level + 1, existing VNFCs untouched. */
export async function scaleOut(env: VmEnv, id: string, v: 'v1' | 'v2' = 'v2'): Promise<Json> {
  const before = await getInstance(env, id);
  const opId = await request(env, v, id, 'scale', { type: 'SCALE_OUT', aspectId: 'VDU1_scale' });
  await waitOp(env, opId, 'COMPLETED', v);
  await validOpOcc(env, opId);
  const after = await validInstance(env, id);
  assert.equal(countOf(after, 'VDU1'), countOf(before, 'VDU1') + 1);
  assert.equal(levelOf(after), (levelOf(before) ?? 0) + 1);
  const s1 = serversOf(after);
  for (const [rid, srv] of serversOf(before)) assert.equal(s1.get(rid), srv, `VNFC ${rid} untouched by the scale-out`);
  await matchesHeat(env, after);
  return after;
}

/** How to make the next Heat update of a heal fail, and how to clear that again. */
export interface FaultControl {
  inject(): Promise<void>;
  clear(): Promise<void>;
  /** What the op occ error detail says. */
  detail: RegExp;
}

/**
 * A VNFC heal whose Heat update fails: FAILED_TEMP with the reason, other requests refused
 * (409), `retry` after the fault is cleared completes it; exactly the target was replaced.
 */
export async function failedHealThenRetry(env: VmEnv, id: string, fault: FaultControl): Promise<Json> {
  const before = await getInstance(env, id);
  const target = vnfcsOf(before, 'VDU1')[0] as { info: Json; res: Json };
  await fault.inject();
  const opId = await request(env, 'v2', id, 'heal', { vnfcInstanceId: [target.info.id] });
  let occ = await waitOp(env, opId, 'FAILED_TEMP');
  assert.match(String(occ.error?.detail), fault.detail);
  assert.ok(occ._links.retry && occ._links.fail, 'retry and fail offered');
  await validOpOcc(env, opId);
  const busy = await env.api('POST', `/vnflcm/v2/vnf_instances/${id}/heal`, {});
  assert.equal(busy.status, 409, 'the instance is busy while its op is FAILED_TEMP');
  await fault.clear();
  const retry = await env.api('POST', `/vnflcm/v2/vnf_lcm_op_occs/${opId}/retry`);
  assert.equal(retry.status, 202, retry.text);
  occ = await waitOp(env, opId, 'COMPLETED');
  assert.deepEqual(await notificationsOf(env, opId), ['STARTING/START', 'PROCESSING/START', 'FAILED_TEMP/RESULT', 'PROCESSING/START', 'COMPLETED/RESULT']);
  await validOpOcc(env, opId);
  const after = await validInstance(env, id);
  const s0 = serversOf(before);
  const s1 = serversOf(after);
  assert.notEqual(s1.get(target.res.id), s0.get(target.res.id), 'target replaced');
  for (const [rid, srv] of s0) if (rid !== target.res.id) assert.equal(s1.get(rid), srv, `VNFC ${rid} untouched`);
  assert.deepEqual(
    (occ.resourceChanges.affectedVnfcs as Json[]).map((a) => [a.id, a.changeType]),
    [[target.res.id, 'MODIFIED']],
  );
  await matchesHeat(env, after);
  return after;
}
