/**
 * The `nfv` parameter for BaseHOTs of Tacker's v1 "UserData" style, which read the VDU's flavour and
 * image as `[nfv, VDU, <vdu>, flavor]` / `[nfv, VDU, <vdu>, image]` (Tacker's Kubernetes cluster
 * packages) rather than `computeFlavourId` / `vcImageId`: a package in that layout (the Kubespray
 * sample with its BaseHOT rewritten to those keys) instantiated through the OpenStack driver on
 * the simulated OpenStack gets servers with the VNFD's flavour and software image; and the
 * simulated Nova refuses a server without a known flavour or without an image, as Nova does.
 */
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { InfraDriver } from '../../../src/infra/infra-driver.ts';
import { createOpenStackDriver } from '../../../src/infra/openstack/index.ts';
import type { FlavourModel } from '../../../src/packages/vnfd-model.ts';
import { type OpenStackSim, startOpenStackSim } from '../../../src/sim/openstack/index.ts';
import { call, login, type Session, settled, waitStack } from '../../sim/openstack/helpers.ts';
import { loadPackage, makeContext, REPO, type TestContext } from './driver-fixtures.ts';

// biome-ignore lint/suspicious/noExplicitAny: Nova documents are free-form JSON
type Json = any;

/** The Kubespray sample with its BaseHOT reading Tacker v1's keys (`flavor`, `image`). */
function userDataStylePackage(): string {
  const dir = mkdtempSync(join(tmpdir(), 'nfv-userdata-'));
  cpSync(join(REPO, 'samples/k8s-cluster-kubespray'), dir, { recursive: true });
  const hot = join(dir, 'BaseHOT/simple');
  for (const f of [join(hot, 'simple_hot_top.yaml'), ...readdirSync(join(hot, 'nested')).map((n) => join(hot, 'nested', n))]) {
    const text = readFileSync(f, 'utf8').replaceAll('computeFlavourId ]', 'flavor ]').replaceAll('vcImageId ]', 'image ]');
    writeFileSync(f, text);
  }
  const top = readFileSync(join(hot, 'simple_hot_top.yaml'), 'utf8');
  assert.match(top, /\[ nfv, VDU, masterNode, flavor \]/);
  assert.match(top, /\[ nfv, VDU, workerNode, image \]/);
  assert.doesNotMatch(top, /computeFlavourId|vcImageId/);
  return dir;
}

describe('nfv parameter: Tacker v1 UserData keys on the simulated OpenStack', { timeout: 60_000 }, () => {
  let sim: OpenStackSim;
  let driver: InfraDriver;
  let ctx: TestContext;
  let flavour: FlavourModel;
  let dir: string;
  let s: Session;

  before(async () => {
    sim = await startOpenStackSim({ heatDelayMs: 0 });
    s = await login(sim);
    dir = userDataStylePackage();
    const pkg = await loadPackage(dir);
    flavour = pkg.model.flavours.simple as FlavourModel;
    const c = sim.credentials;
    driver = createOpenStackDriver({ pollInitialMs: 10 });
    ctx = makeContext({
      instanceId: 'nfv-userdata-1',
      pkg,
      vim: {
        vimType: 'ETSINFV.OPENSTACK_KEYSTONE.V_3',
        interfaceInfo: { endpoint: c.authUrl },
        accessInfo: { username: c.username, password: c.password, project: c.project, projectDomain: c.projectDomain, userDomain: c.userDomain, region: c.region },
      },
      vduCounts: { masterNode: 1, workerNode: 2, externalLB: 1 },
      scaleLevels: { master_instance: 0, worker_instance: 0 },
    });
  });

  after(async () => {
    await sim?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('instantiate: every server has the flavour and image the VNFD names for its VDU', async () => {
    const req = JSON.parse(readFileSync(join(dir, 'requests/instantiate.json'), 'utf8'));
    await driver.instantiate(ctx, { extVirtualLinks: req.extVirtualLinks, additionalParams: {} });
    const r = await call('GET', `${s.nova}/servers/detail`, s.token, undefined, { 'X-OpenStack-Nova-API-Version': '2.47' });
    assert.equal(r.status, 200);
    const servers: Json[] = r.body.servers;
    assert.ok(servers.length >= 3, `servers: ${servers.map((x) => x.name).join(', ')}`);
    const seen = new Set<string>();
    for (const srv of servers) {
      const vdu = Object.values(flavour.vdus).find((v) => srv.name === v.vduId || srv.name.startsWith(`${v.vduId}`));
      assert.ok(vdu, `server ${srv.name} belongs to a VDU`);
      seen.add(vdu.vduId);
      assert.equal(srv.flavor.original_name, vdu.flavour?.requestedAdditionalCapabilityNames[0], `${srv.name}: flavour`);
      assert.equal(srv.image?.id, vdu.swImage?.name, `${srv.name}: image`);
    }
    assert.ok(seen.has('masterNode') && seen.has('workerNode'), [...seen].join(','));
    assert.equal(flavour.vdus.masterNode?.flavour?.requestedAdditionalCapabilityNames[0], 'm1.medium');
  });

  it('the simulated Nova refuses a server with an unknown flavour or without an image', async () => {
    const template = (flavor: string, image?: string) =>
      JSON.stringify({
        heat_template_version: '2013-05-23',
        resources: { srv: { type: 'OS::Nova::Server', properties: { flavor, ...(image === undefined ? {} : { image }), networks: [{ network: 'lab-net' }] } } },
      });
    for (const [name, tpl, reason] of [
      ['no-such-flavor', template('m9.huge', 'cirros'), /Flavor ID \(m9\.huge\) could not be found/],
      ['empty-flavor', template('', 'cirros'), /Flavor ID \(\) could not be found/],
      ['no-image', template('m1.small'), /Neither image nor bootable volume/],
    ] as const) {
      const c = await call('POST', `${s.heat}/stacks`, s.token, { stack_name: name, template: tpl });
      assert.equal(c.status, 201, JSON.stringify(c.body));
      const st = await waitStack(s, `${s.heat}/stacks/${name}/${c.body.stack.id}`, settled);
      assert.equal(st.stack_status, 'CREATE_FAILED', name);
      assert.match(st.stack_status_reason, reason, name);
    }
    const ok = await call('POST', `${s.heat}/stacks`, s.token, { stack_name: 'known', template: template('m1.small', 'cirros') });
    const st = await waitStack(s, `${s.heat}/stacks/known/${ok.body.stack.id}`, settled);
    assert.equal(st.stack_status, 'CREATE_COMPLETE', st.stack_status_reason);
  });
});
