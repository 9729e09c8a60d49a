/**
 * The cnf-nodeport-lb driver's binding (claims / applies / idempotent) and its parameters and
 * acceptance validation (400 malformed, 422 a script_path not in the package; LB access overrides
 * of later operations merged over the stored ones).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isVnfmError } from '../../../src/errors.ts';
import { effectiveLbAccess, NodePortLbMgmtDriver, parseNodePortLbParams } from '../../../src/mgmt/drivers/cnf-nodeport-lb/index.ts';
import type { MgmtContext, MgmtValidation } from '../../../src/mgmt/mgmt-driver.ts';

const FILES = ['Definitions/np.yaml', 'Files/kubernetes/web.yaml', 'Scripts/configure_lb.sh'];
const params = (over: Record<string, unknown> = {}): Record<string, unknown> => ({
  'lcm-kubernetes-def-files': ['Files/kubernetes/web.yaml'],
  'lcm-kubernetes-external-lb': { script_path: 'Scripts/configure_lb.sh', external_lb_param: { ssh_ip: '10.87.0.250', ssh_username: 'hvlab', ssh_password: 'secret-pw-1', ...over } },
});
const artifact = { artifactName: 'mgmt-drivers-cnf-nodeport', file: '../Scripts/cnf_nodeport_mgmt.py', type: 'tosca.artifacts.Implementation.Python', properties: {} };
const flavour = { lcmHooks: { instantiate_end: artifact, terminate_end: artifact, heal_end: artifact } };

describe('cnf-nodeport-lb parameters', () => {
  it('parses Tacker\'s lcm-kubernetes-external-lb', () => {
    assert.deepEqual(parseNodePortLbParams(params(), FILES), { scriptPath: 'Scripts/configure_lb.sh', lb: { sshIp: '10.87.0.250', sshUsername: 'hvlab', sshPassword: 'secret-pw-1', sshPort: 22 } });
  });
  it('refuses malformed parameters (400) and a script_path outside the package (422)', () => {
    const table: [Record<string, unknown>, number, RegExp][] = [
      [{}, 400, /lcm-kubernetes-external-lb: required/],
      [{ 'lcm-kubernetes-external-lb': { external_lb_param: {} } }, 400, /script_path/],
      [params({ ssh_ip: '10.87.0' }), 400, /ssh_ip/],
      [params({ ssh_ip: '10.87.0.1; rm -rf /' }), 400, /ssh_ip/],
      [params({ ssh_username: '' }), 400, /ssh_username/],
      [params({ ssh_password: 42 }), 400, /ssh_password/],
      [params({ ssh_port: 0 }), 400, /ssh_port/],
      [{ ...params(), 'lcm-kubernetes-def-files': 'web.yaml' }, 400, /def-files/],
      [{ 'lcm-kubernetes-external-lb': { script_path: 'Scripts/other.sh', external_lb_param: { ssh_ip: '10.0.0.1', ssh_username: 'u', ssh_password: 'p' } } }, 422, /other\.sh is not a file/],
    ];
    for (const [p, status, re] of table) {
      assert.throws(() => parseNodePortLbParams(p, FILES), (e: Error & { status?: number }) => e.status === status && re.test(e.message), JSON.stringify(p));
    }
  });
  it('later operations may override the LB access; the rest comes from the stored parameters', () => {
    assert.equal(effectiveLbAccess(params(), {}).sshPassword, 'secret-pw-1');
    const o = effectiveLbAccess(params(), { 'lcm-kubernetes-external-lb': { external_lb_param: { ssh_password: 'rotated-pw' } } });
    assert.deepEqual(o, { sshIp: '10.87.0.250', sshUsername: 'hvlab', sshPassword: 'rotated-pw', sshPort: 22 });
  });
});

describe('cnf-nodeport-lb driver binding and acceptance', () => {
  const d = new NodePortLbMgmtDriver();
  const v = (command: Record<string, unknown>, p: Record<string, unknown>, instantiateParams: Record<string, unknown> = {}): MgmtValidation =>
    ({ command, params: p, instantiateParams, vnfd: { files: FILES }, flavour, hooks: ['instantiate_end', 'terminate_end', 'heal_end'], instance: { id: 'i-1' }, files: async () => new Map() }) as never;
  it('claims the Tacker artifact name or healvnfm_driver, nothing else', () => {
    assert.equal(d.claims(artifact), true);
    assert.equal(d.claims({ ...artifact, artifactName: 'mgmt-drivers-kubernetes' }), false);
    assert.equal(d.claims({ ...artifact, artifactName: 'x', properties: { healvnfm_driver: 'cnf-nodeport-lb' } }), true);
    assert.equal(d.claims({ ...artifact, properties: { healvnfm_driver: 'k8s-kubeadm' } }), false);
  });
  it('acts on instantiate_end, terminate_end, heal_end and scale_end of their operations; every hook is idempotent', () => {
    const ctx = (hook: string, operation: string) => ({ hook, command: { operation }, flavour: { lcmHooks: { ...flavour.lcmHooks, scale_end: artifact, heal_start: artifact } } }) as unknown as MgmtContext;
    assert.equal(d.applies(ctx('instantiate_end', 'INSTANTIATE')), true);
    assert.equal(d.applies(ctx('terminate_end', 'TERMINATE')), true);
    assert.equal(d.applies(ctx('heal_end', 'HEAL')), true);
    assert.equal(d.applies(ctx('scale_end', 'SCALE')), true);
    assert.equal(d.applies(ctx('heal_start', 'HEAL')), false, 'no delete-first on heal: heal_end converges');
    assert.equal(d.applies(ctx('instantiate_start', 'INSTANTIATE')), false);
    assert.equal(d.idempotent(ctx('heal_end', 'HEAL')), true);
  });
  it('validates at acceptance: 400 for malformed, 422 for a script not in the package, overrides of later ops', async () => {
    await d.validate(v({ operation: 'INSTANTIATE', additionalParams: params() }, params()));
    await assert.rejects(d.validate(v({ operation: 'INSTANTIATE', additionalParams: params({ ssh_ip: 'x' }) }, {})), (e: unknown) => isVnfmError(e, 'VNFM_ERR_API_BAD_REQUEST') && /ssh_ip/.test((e as Error).message));
    const script = { 'lcm-kubernetes-external-lb': { script_path: 'Scripts/nope.sh', external_lb_param: { ssh_ip: '10.0.0.1', ssh_username: 'u', ssh_password: 'p' } } };
    await assert.rejects(d.validate(v({ operation: 'INSTANTIATE', additionalParams: script }, {})), (e: unknown) => isVnfmError(e, 'VNFM_ERR_MGMT_REFUSED') && (e as { status?: number }).status === undefined);
    await d.validate(v({ operation: 'TERMINATE' }, {}, params()));
    await assert.rejects(d.validate(v({ operation: 'TERMINATE' }, { 'lcm-kubernetes-external-lb': { external_lb_param: { ssh_ip: 'bad' } } }, params())), (e: unknown) => isVnfmError(e, 'VNFM_ERR_API_BAD_REQUEST'));
  });
  it('never puts the password in an error message', async () => {
    await assert.rejects(d.validate(v({ operation: 'INSTANTIATE', additionalParams: params({ ssh_ip: 'bad' }) }, {})), (e: unknown) => !(e as Error).message.includes('secret-pw-1'));
  });
});
