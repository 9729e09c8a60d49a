/**
 * The VNFM's own health watch of a CNF on the simulated Kubernetes, end to end with no call from
 * outside: a pod made not Ready through the cluster's control API is seen on the VNFM's pod watch
 * (one stream per namespace), shown faulty at `/vnfm/v1`, healed automatically once it has been
 * faulty for `unhealthyFor` (auto-heal on for the VNF), and the VNFC shows healthy on its new pod.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type CnfEnv, createInstance, getInstance, instantiate, type Json, opIdOf, startCnfEnv, until, vnfcsOf, waitOp } from './cnf-fixture.ts';

let env: CnfEnv;

async function health(id: string): Promise<Json> {
  const r = await env.api('GET', `/vnfm/v1/vnf_instances/${id}/health`);
  assert.equal(r.status, 200, r.text);
  return r.body;
}
const rowOf = (h: Json, pod: string): Json | undefined => (h.vnfcs as Json[]).find((x) => x.resourceId === pod);

before(async () => {
  env = await startCnfEnv({ config: { vnfcHealth: { enabled: true, periodMs: 200, unhealthyForMs: { vm: 600, pod: 600 } }, autoheal: { sweepMs: 100 }, faultNotification: { windowMs: 200 } } });
});
after(async () => {
  await env?.close();
});

describe('VNFC health from the VNFM\'s own watch (simulated Kubernetes)', () => {
  it('a pod made not Ready shows faulty, is healed automatically and the VNFC shows healthy on its new pod', async () => {
    const ns = 'health-cnf';
    const id = await createInstance(env, 'v2', 'health-cnf');
    await instantiate(env, id, ns);
    const patch = await env.api('PATCH', `/vnflcm/v2/vnf_instances/${id}`, { vnfConfigurableProperties: { isAutohealEnabled: true } });
    await waitOp(env, opIdOf(patch), 'COMPLETED');
    await until('every VNFC healthy', async () => ((await health(id)).condition === 'healthy' ? true : undefined));
    const [vnfc] = vnfcsOf(await getInstance(env, id), 'VDU3'); // a Deployment's pod
    assert.ok(vnfc);
    const pod = vnfc.res.computeResource.resourceId as string;
    await env.simControl('POST', `pods/${ns}/${pod}/unready`, {});
    const faulty = await until('the VNFC faulty', async () => {
      const row = rowOf(await health(id), pod);
      return row?.condition === 'faulty' ? row : undefined;
    });
    assert.equal(faulty.reason, 'NotReady');
    const heal = await until('an automatic heal COMPLETED', async () => {
      const r = await env.api('GET', `/vnflcm/v2/vnf_lcm_op_occs?filter=(eq,vnfInstanceId,${id});(eq,operation,HEAL)`);
      return (r.body as Json[]).find((o) => o.operationState === 'COMPLETED');
    }, 40_000);
    assert.equal(heal.isAutomaticInvocation, true);
    const now = vnfcsOf(await getInstance(env, id), 'VDU3').find((c) => c.info.id === vnfc.info.id);
    const replacement = now?.res.computeResource.resourceId as string;
    assert.ok(replacement && replacement !== pod, 'pod replaced');
    await until('the healed VNFC healthy on its new pod', async () => (rowOf(await health(id), replacement)?.condition === 'healthy' ? true : undefined));
  });
});
