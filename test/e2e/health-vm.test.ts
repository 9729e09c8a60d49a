/**
 * The VNFM's own health watch on the simulated OpenStack, end to end with no Server Notifier and no
 * call from outside: a server failed through the cloud's admin API is seen by the VNFM's Nova
 * poll (one per VIM project), shown faulty at `/vnfm/v1`, held faulty for `unhealthyFor`, healed
 * automatically when auto-heal is on for the VNF, and shown healthy on its new server. With
 * auto-heal off the fault is visible and recorded, and nothing is healed.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { getInstance, instantiated, type Json, startVmEnv, type VmEnv, vnfcsOf } from './vm-fixture.ts';

let env: VmEnv;

async function until<T>(what: string, fn: () => Promise<T | undefined | false>, timeoutMs = 30_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}
async function health(id: string): Promise<Json> {
  const r = await env.api('GET', `/vnfm/v1/vnf_instances/${id}/health`);
  assert.equal(r.status, 200, r.text);
  return r.body;
}
async function heals(id: string): Promise<Json[]> {
  const r = await env.api('GET', `/vnflcm/v2/vnf_lcm_op_occs?filter=(eq,vnfInstanceId,${id});(eq,operation,HEAL)`);
  assert.equal(r.status, 200, r.text);
  return r.body as Json[];
}
const vnfcRow = (h: Json, server: string): Json | undefined => (h.vnfcs as Json[]).find((x) => x.resourceId === server);

before(async () => {
  env = await startVmEnv({
    target: 'sim',
    config: {
      vnfcHealth: { enabled: true, periodMs: 200, unhealthyForMs: { vm: 600, pod: 600 } },
      autoheal: { sweepMs: 100 },
      faultNotification: { windowMs: 200 },
    } as never,
  });
});
after(async () => {
  await env?.close();
});

describe('VNFC health from the VNFM\'s own watch (simulated OpenStack)', () => {
  it('a server failed in the cloud shows faulty, is healed automatically and shows healthy on its new server', async () => {
    const id = await instantiated(env, 'v2', 'health-autoheal', { vnfConfigurableProperties: { isAutohealEnabled: true } });
    const [first] = vnfcsOf(await getInstance(env, id));
    assert.ok(first);
    const vnfcId = first.info.id as string;
    const server = first.res.computeResource.resourceId as string;
    await until('every VNFC healthy', async () => (await health(id)).condition === 'healthy');
    await env.simControl('POST', `servers/${server}/fail`, { message: 'disk gone' });
    const faulty = await until('the VNFC faulty', async () => {
      const row = vnfcRow(await health(id), server);
      return row?.condition === 'faulty' ? row : undefined;
    });
    assert.equal(faulty.reason, 'ERROR');
    assert.equal(faulty.source, 'vim-watch');
    const heal = await until('an automatic heal COMPLETED', async () => (await heals(id)).find((o) => o.operationState === 'COMPLETED'));
    assert.equal(heal.isAutomaticInvocation, true);
    const occ = await env.api('GET', `/vnflcm/v2/vnf_lcm_op_occs/${heal.id}`);
    assert.deepEqual(occ.body.operationParams.vnfcInstanceId, [vnfcId]);
    const replacement = vnfcsOf(await getInstance(env, id)).find((c) => c.info.id === vnfcId)?.res.computeResource.resourceId as string;
    assert.notEqual(replacement, server, 'server replaced');
    const healthy = await until('the healed VNFC healthy on its new server', async () => {
      const row = vnfcRow(await health(id), replacement);
      return row?.condition === 'healthy' ? row : undefined;
    });
    assert.equal(healthy.vnfcInfoId, vnfcId);
    assert.equal((await heals(id)).length, 1, 'one fault, one heal');
    const ev = await env.api('GET', '/vnfm/v1/events?lastEventId=0');
    assert.equal(ev.status, 200, ev.text);
    const changes = (ev.body.events as Json[]).filter((e) => e.event === 'VnfcHealthChanged' && e.data.vnfInstanceId === id && e.data.vnfcInfoId === vnfcId);
    assert.ok(changes.some((e) => e.data.newCondition === 'faulty' && e.data.reason === 'ERROR'), JSON.stringify(changes));
  });

  it('with auto-heal off the fault is visible and recorded, and nothing is healed', async () => {
    const id = await instantiated(env, 'v2', 'health-no-autoheal', { vnfConfigurableProperties: { isAutohealEnabled: false } });
    await until('every VNFC healthy', async () => (await health(id)).condition === 'healthy');
    const server = vnfcsOf(await getInstance(env, id))[0]?.res.computeResource.resourceId as string;
    await env.simControl('POST', `servers/${server}/fail`, {});
    await until('the VNFC faulty', async () => vnfcRow(await health(id), server)?.condition === 'faulty');
    // The sustained fault reaches the ledger as a notification auto-heal ignores (evidence kept).
    const ignored = await until('the detected fault recorded as ignored', async () => {
      const r = await env.api('GET', `/vnfm/v1/fault_notifications?vnfInstanceId=${id}`);
      return (r.body as Json[]).find((n) => n.alarmId === 'vnfm-health' && n.status === 'ignored');
    });
    assert.equal(ignored.serverId ?? server, server);
    assert.equal((await env.vnfm.ctx.autoheal?.batcher.cycle()) ?? 0, 0);
    assert.equal((await heals(id)).length, 0, 'nothing healed');
    assert.equal(vnfcRow(await health(id), server)?.condition, 'faulty', 'still faulty: nothing healed it');
  });
});
