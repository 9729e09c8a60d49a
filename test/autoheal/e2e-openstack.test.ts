/**
 * Auto-heal end to end over real HTTP: the VNFM (OpenStack driver, alarm registration driver,
 * fault intake) with the simulated OpenStack and the simulated Server Notifier. A failed server
 * becomes one automatic HEAL op occ, its replacement is registered with a new alarm; a failed
 * compute host carrying 3 servers of one VNF becomes exactly one heal of the 3 VNFCs.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createOpenStackDriver } from '../../src/infra/openstack/index.ts';
import { type OpenStackSim, startOpenStackSim } from '../../src/sim/openstack/index.ts';
import { type ServerNotifierSim, startServerNotifierSim } from '../../src/sim/server-notifier/index.ts';
import { type AutohealVnfm, type TestVnfc, V2, healsOf, instantiateVnf, onboardSample, opOcc, registerNotifier, startAutohealVnfm, vnfcsOf, waitFor } from './fixture.ts';

const WINDOW = 1000;
/** Failure guard only (a loaded machine is slow); how fast a heal comes is bench/autoheal-e2e.ts's job. */
const GUARD_MS = 60_000;
let os: OpenStackSim;
let notifier: ServerNotifierSim;
let h: AutohealVnfm;
let vnfdId: string;

async function simAdmin(path: string, body: unknown = {}): Promise<unknown> {
  const r = await fetch(`${os.url}/_sim/${path}`, { method: 'POST', headers: { 'X-Sim-Admin-Secret': os.adminSecret, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  assert.ok(r.status < 300, `/_sim/${path}: ${r.status} ${await r.text()}`);
  return r.json().catch(() => undefined);
}
async function hostOf(serverId: string): Promise<string> {
  const r = await fetch(`${os.url}/_sim/state`, { headers: { 'X-Sim-Admin-Secret': os.adminSecret } });
  const state = (await r.json()) as { servers: { id: string; host: string }[] };
  return state.servers.find((s) => s.id === serverId)?.host as string;
}
function vim() {
  const c = os.credentials;
  return { vimId: 'sim-os', vimType: 'ETSINFV.OPENSTACK_KEYSTONE.V_3', interfaceInfo: { endpoint: c.authUrl }, accessInfo: { username: c.username, password: c.password, project: c.project, projectDomain: c.projectDomain, userDomain: c.userDomain, region: c.region } };
}
async function instantiate() {
  return instantiateVnf(h.vnfm, vnfdId, { vim: vim(), additionalParams: { ServerNotifierUri: notifier.url, ServerNotifierFaultID: ['1234'] } });
}
// biome-ignore lint/suspicious/noExplicitAny: ledger API JSON
async function batchesOf(instanceId: string): Promise<any[]> {
  const r = await h.vnfm.app.inject({ method: 'GET', url: `/vnfm/v1/heal_batches?vnfInstanceId=${instanceId}` });
  assert.equal(r.statusCode, 200);
  return r.json();
}
function alarmsOf(serverId: string) {
  return notifier.alarms().filter((a) => a.server_id === serverId);
}

before(async () => {
  os = await startOpenStackSim({ heatDelayMs: 20, hosts: 2 });
  notifier = await startServerNotifierSim({ openstackUrl: os.url });
  h = await startAutohealVnfm({
    listen: true,
    windowMs: WINDOW,
    fake: undefined,
    plugin: { noMgmtDriver: false },
    config: { autoheal: { sweepMs: 100 } },
  });
  h.ctx.engine?.drivers.register(createOpenStackDriver({ pollInitialMs: 10 }));
  vnfdId = await onboardSample(h.vnfm);
  await registerNotifier(h.vnfm, notifier.url, 'sim-os');
});
after(async () => {
  await h?.vnfm.close();
  await notifier?.close();
  await os?.close();
});

describe('auto-heal end to end (OpenStack sim + Server Notifier sim)', { timeout: 120_000 }, () => {
  it('a failed server becomes one automatic heal; the new server is registered with a new alarm', async () => {
    const { id, vnfcs } = await instantiate();
    assert.equal(vnfcs.length, 3);
    for (const v of vnfcs) {
      const a = alarmsOf(v.serverId);
      assert.equal(a.length, 1, `server ${v.serverId} registered once`);
      assert.equal(a[0]?.fault_action, `${h.vnfm.url}/server_notification/vnf_instances/${id}/servers/${v.serverId}/notify`);
      assert.equal(a[0]?.tenant, os.credentials.project);
    }
    for (const v of vnfcs) assert.equal(v.alarmId, alarmsOf(v.serverId)[0]?.alarm_id, 'alarm id kept in vnfcResourceInfo.metadata');
    const target = vnfcs.find((v) => v.vduId === 'VDU2') as TestVnfc;
    await simAdmin(`servers/${target.serverId}/fail`);
    // The time from fault to healed is measured by bench/autoheal-e2e.ts (docs/benchmarks.md).
    await waitFor(async () => (await healsOf(h.vnfm, id)).some((o) => o.operationState === 'COMPLETED'), GUARD_MS, 'automatic heal COMPLETED');
    await h.ctx.engine?.runner.idle();
    const heals = await healsOf(h.vnfm, id);
    assert.equal(heals.length, 1);
    assert.equal(heals[0]?.isAutomaticInvocation, true);
    assert.deepEqual(heals[0]?.operationParams.vnfcInstanceId, [target.vnfcInfoId]);
    assert.equal((await opOcc(h.vnfm, heals[0]?.id as string)).isAutomaticInvocation, true);
    // It came from the Server Notifier's notification, through one batch of the ledger.
    await waitFor(async () => (await batchesOf(id))[0]?.status === 'done', GUARD_MS, 'batch done');
    const [batch] = await batchesOf(id);
    assert.equal(batch.vnfLcmOpOccId, heals[0]?.id);
    assert.equal(batch.notificationCount, 1);
    await notifier.drain();
    assert.deepEqual(
      notifier.deliveries().filter((d) => d.url.includes(id)).map((d) => [d.server_id, d.status]),
      [[target.serverId, 204]],
    );
    const after = await vnfcsOf(h.vnfm, id);
    const healed = after.find((v) => v.vnfcInfoId === target.vnfcInfoId) as TestVnfc;
    assert.notEqual(healed.serverId, target.serverId, 'server replaced');
    assert.equal(alarmsOf(target.serverId).length, 0, 'old registration removed');
    const fresh = alarmsOf(healed.serverId);
    assert.equal(fresh.length, 1, 'new server registered');
    assert.equal(healed.alarmId, fresh[0]?.alarm_id);
    assert.notEqual(healed.alarmId, target.alarmId);
    for (const v of after) if (v.vnfcInfoId !== target.vnfcInfoId) assert.equal(v.alarmId, vnfcs.find((x) => x.vnfcInfoId === v.vnfcInfoId)?.alarmId);
    // clean up: terminate unregisters everything
    const r = await h.vnfm.app.inject({ method: 'POST', url: `/vnflcm/v2/vnf_instances/${id}/terminate`, headers: V2, payload: { terminationType: 'FORCEFUL' } });
    assert.equal(r.statusCode, 202);
    await h.ctx.engine?.runner.idle();
    for (const v of after) assert.equal(alarmsOf(v.serverId).length, 0);
  });

  it('a failed host with 3 servers of one VNF becomes exactly one heal of the 3 VNFCs', async () => {
    const [hostA, hostB] = os.hosts as [string, string];
    // Put every server of the VNF on host A: B is down while the VNF is instantiated.
    await simAdmin(`hosts/${hostB}/fail`);
    const { id, vnfcs } = await instantiate();
    await simAdmin(`hosts/${hostB}/recover`);
    for (const v of vnfcs) assert.equal(await hostOf(v.serverId), hostA);
    const before = notifier.deliveries().length;
    await simAdmin(`hosts/${hostA}/fail`);
    await waitFor(async () => (await healsOf(h.vnfm, id)).some((o) => o.operationState === 'COMPLETED'), GUARD_MS, 'automatic heal COMPLETED');
    await notifier.drain();
    const sent = notifier.deliveries().slice(before).filter((d) => d.url.includes(id));
    assert.equal(sent.length, 3, 'three fault notifications');
    assert.ok(sent.every((d) => d.status === 204), JSON.stringify(sent.map((d) => d.status)));
    // Every 204 means the notification is in the ledger. Once every batch holding them is done and
    // they add up to the 3 notifications, nothing else can start a heal (no pause needed).
    await waitFor(
      async () => {
        const bs = await batchesOf(id);
        return bs.length > 0 && bs.every((b) => b.status === 'done') && bs.reduce((n, b) => n + b.notificationCount, 0) === 3;
      },
      GUARD_MS,
      'the batches of the 3 notifications done',
    );
    await h.ctx.engine?.runner.idle();
    const heals = await healsOf(h.vnfm, id);
    assert.equal(heals.length, 1, 'exactly one heal');
    assert.deepEqual([...(heals[0]?.operationParams.vnfcInstanceId ?? [])].sort(), vnfcs.map((v) => v.vnfcInfoId).sort());
    const after = await vnfcsOf(h.vnfm, id);
    for (const v of after) {
      assert.equal(await hostOf(v.serverId), hostB, 'rebuilt on the healthy host');
      assert.equal(alarmsOf(v.serverId).length, 1, 'registered');
    }
    const b = await batchesOf(id);
    assert.equal(b.length, 1);
    assert.equal(b[0].status, 'done');
    assert.equal(b[0].notificationCount, 3);
  });
});
