/**
 * VNF package management through HTTP (`/vnfpkgm/v1`, `/vnfpkgm/v2`): the onboarding life cycle,
 * Tacker's and our sample packages, broken packages ending in ERROR with a clear reason (never a
 * 500), content and VNFD download, enable/disable/delete rules, usage tracking, and the SOL013
 * list features (filter, paging with a Link header).
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { unzipSync } from 'fflate';
import { buildCsarFromFiles } from '../../src/packages/csar-reader.ts';
import { type TestVnfm, testVnfm } from '../helpers/app.ts';
import { expectEtsiValid } from '../helpers/etsi.ts';
import { TACKER_CNF_DEFS_DIR, TACKER_SAMPLES_DIR, TACKER_VM_DEFS_DIR } from '../helpers/fixtures.ts';
import { ROOT, csarOf, onboard } from '../helpers/packages.ts';

const V2 = { version: '2.0.0' };
const TACKER = TACKER_SAMPLES_DIR;
const VM_DEFS = TACKER_VM_DEFS_DIR;
const K8S_DEFS = TACKER_CNF_DEFS_DIR;

/** A one-file VNFD package (so `GET vnfd` with text/plain can answer the YAML itself). */
const ONE_FILE_VNFD = `tosca_definitions_version: tosca_simple_yaml_1_2
description: one-file VNFD for package tests
topology_template:
  node_templates:
    VNF:
      type: tosca.nodes.nfv.VNF
      properties:
        descriptor_id: 0d4c9b0e-0000-4000-8000-0000000000aa
        provider: Example Co
        product_name: One File
        software_version: '2.1'
        descriptor_version: '1.0'
        flavour_id: default
    VDU1:
      type: tosca.nodes.nfv.Vdu.Compute
      properties:
        name: vdu1
        vdu_profile: { min_number_of_instances: 1, max_number_of_instances: 2 }
`;
const ONE_FILE_META = 'TOSCA-Meta-File-Version: 1.0\nCSAR-Version: 1.1\nCreated-by: test\nEntry-Definitions: Definitions/one.yaml\n';

let vnfm: TestVnfm;

/**
 * ETSI check of a VnfPkgInfo. The 3.7.1 OpenAPI set we validate against declares `Checksum` as a
 * plain string ("#no definition found" upstream), while SOL003/SOL005 define it as
 * `{algorithm, hash}` (what Tacker and we return), so the checksum is checked here by hand.
 */
function expectPkgValid(body: unknown, array = false): void {
  const strip = (p: Record<string, unknown>) => {
    const { checksum, ...rest } = p;
    if (checksum !== undefined) {
      const c = checksum as { algorithm?: unknown; hash?: unknown };
      assert.equal(c.algorithm, 'SHA-256');
      assert.match(String(c.hash), /^[0-9a-f]{64}$/);
    }
    return rest;
  };
  const b = array ? (body as Record<string, unknown>[]).map(strip) : strip(body as Record<string, unknown>);
  expectEtsiValid('v2', 'VnfPkgInfo', b, { array });
}

const idle = () => vnfm.ctx.packages.idle();

async function req(method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', url: string, payload?: unknown, headers: Record<string, string> = {}) {
  return vnfm.app.inject({ method, url, headers, ...(payload !== undefined ? { payload: payload as object } : {}) });
}

function assertProblem(r: { statusCode: number; headers: Record<string, unknown>; json(): Record<string, unknown> }, status: number): Record<string, unknown> {
  assert.equal(r.statusCode, status);
  assert.match(String(r.headers['content-type']), /^application\/problem\+json/);
  const p = r.json();
  assert.equal(p.status, status);
  assert.equal(typeof p.detail, 'string');
  assert.ok((p.detail as string).length > 0);
  return p;
}

async function createPkg(userDefinedData?: Record<string, unknown>): Promise<string> {
  const r = await req('POST', '/vnfpkgm/v1/vnf_packages', userDefinedData ? { userDefinedData } : {});
  assert.equal(r.statusCode, 201, r.body);
  return r.json().id;
}

async function upload(id: string, zip: Buffer) {
  return req('PUT', `/vnfpkgm/v1/vnf_packages/${id}/package_content`, zip, { 'content-type': 'application/zip' });
}

async function getPkg(id: string): Promise<Record<string, unknown>> {
  const r = await req('GET', `/vnfpkgm/v1/vnf_packages/${id}`);
  assert.equal(r.statusCode, 200, r.body);
  return r.json();
}

/** Uploads a package that must fail and returns its failure detail. */
async function failedOnboarding(zip: Buffer): Promise<string> {
  const id = await createPkg();
  const u = await upload(id, zip);
  assert.equal(u.statusCode, 202, u.body);
  await idle();
  const p = await getPkg(id);
  assert.equal(p.onboardingState, 'ERROR');
  const d = p.onboardingFailureDetails as Record<string, unknown>;
  assert.ok(d, 'onboardingFailureDetails present');
  assert.equal(typeof d.detail, 'string');
  assert.equal(typeof d.status, 'number');
  return d.detail as string;
}

async function disableAndDelete(id: string): Promise<void> {
  const d = await req('PATCH', `/vnfpkgm/v1/vnf_packages/${id}`, { operationalState: 'DISABLED' });
  assert.equal(d.statusCode, 200, d.body);
  const del = await req('DELETE', `/vnfpkgm/v1/vnf_packages/${id}`);
  assert.equal(del.statusCode, 204, del.body);
}

before(async () => {
  vnfm = await testVnfm({ config: { pageSize: 2 } });
});
after(async () => {
  await vnfm?.close();
});

describe('VNF packages', () => {
  it('create answers 201 with Location and a CREATED package; upload 202 onboards it with the VNFD facts', async () => {
    const c = await req('POST', '/vnfpkgm/v1/vnf_packages', { userDefinedData: { owner: 'team-a' } });
    assert.equal(c.statusCode, 201, c.body);
    const created = c.json();
    assert.equal(c.headers.location, `${vnfm.ctx.config.publicUrl}/vnfpkgm/v1/vnf_packages/${created.id}`);
    assert.equal(created.onboardingState, 'CREATED');
    assert.equal(created.operationalState, 'DISABLED');
    assert.equal(created.usageState, 'NOT_IN_USE');
    assert.deepEqual(created.userDefinedData, { owner: 'team-a' });
    assert.equal(created.vnfdId, undefined);
    expectPkgValid(created);

    const zip = csarOf(join(ROOT, 'samples/vm-basic'));
    const u = await upload(created.id, zip);
    assert.equal(u.statusCode, 202, u.body);
    assert.equal(u.body, '');
    await idle();
    const p = await getPkg(created.id);
    assert.equal(p.onboardingState, 'ONBOARDED');
    assert.equal(p.operationalState, 'ENABLED');
    assert.equal(p.usageState, 'NOT_IN_USE');
    assert.equal(p.vnfdId, '5a0c8a32-3b1e-4f2a-9d63-7c1f2e4b8a01');
    for (const k of ['vnfProvider', 'vnfProductName', 'vnfSoftwareVersion', 'vnfdVersion']) assert.ok(typeof p[k] === 'string' && (p[k] as string).length > 0, `${k} set`);
    const checksum = p.checksum as { algorithm: string; hash: string };
    assert.equal(checksum.algorithm, 'SHA-256');
    assert.match(checksum.hash, /^[0-9a-f]{64}$/);
    const links = p._links as Record<string, { href: string }>;
    assert.ok(links.self?.href.endsWith(`/vnf_packages/${created.id}`));
    assert.ok(links.vnfd?.href.endsWith('/vnfd'));
    assert.ok(links.packageContent?.href.endsWith('/package_content'));
    expectPkgValid(p);

    // uploading again is a state conflict, and the package is unchanged
    const again = await upload(created.id, zip);
    const prob = assertProblem(again, 409);
    assert.match(prob.detail as string, /ONBOARDED/);
    assert.equal((await getPkg(created.id)).onboardingState, 'ONBOARDED');
    await disableAndDelete(created.id);
  });

  it("onboards the three Tacker samples (with and without the ETSI type files) and both of ours", async () => {
    const cases: [string, Buffer][] = [
      ['tacker basic_lcms_min', csarOf(join(TACKER, 'sol_v2_common/basic_lcms_min/contents'), VM_DEFS)],
      ['tacker server_notification', csarOf(join(TACKER, 'sol_v2_common/server_notification/contents'), VM_DEFS)],
      ['tacker cnf resources', csarOf(join(TACKER, 'sol_kubernetes_v2/test_instantiate_cnf_resources/contents'), K8S_DEFS)],
      ['tacker basic_lcms_min (no ETSI files)', csarOf(join(TACKER, 'sol_v2_common/basic_lcms_min/contents'))],
      ['vm-basic', csarOf(join(ROOT, 'samples/vm-basic'))],
      ['cnf-all-kinds', csarOf(join(ROOT, 'samples/cnf-all-kinds'))],
    ];
    // Tacker's samples share one vnfdId: onboard, check, then remove before the next one.
    for (const [name, zip] of cases) {
      const p = await onboard(vnfm.app, zip, idle);
      assert.equal(p.onboardingState, 'ONBOARDED', name);
      assert.match(String(p.vnfdId), /^[0-9a-f-]{36}$/, `${name}: vnfdId`);
      assert.ok(p.vnfProvider && p.vnfProductName && p.vnfSoftwareVersion && p.vnfdVersion, `${name}: facts`);
      expectPkgValid(p);
      await disableAndDelete(p.id as string);
    }
  });

  it('lists the software images and the additional artifacts of a package (GET, and lists with all_fields), ETSI-valid', async () => {
    // a Kubespray cluster package in Tacker's layout: three VDU images, five files with TOSCA.meta digests
    const k = await onboard(vnfm.app, csarOf(join(ROOT, 'test/fixtures/kubespray-tacker-layout')), idle);
    expectPkgValid(k);
    const images = k.softwareImages as Record<string, unknown>[];
    assert.deepEqual(images.map((i) => i.id), ['externalLB', 'masterNode', 'workerNode']);
    const lb = images[0] as Record<string, unknown>;
    assert.match(String(lb.createdAt), /^\d{4}-\d\d-\d\dT/);
    assert.deepEqual({ ...lb, createdAt: undefined, checksum: undefined }, {
      id: 'externalLB',
      name: 'ubuntu-22.04-haproxy',
      provider: 'Example Co',
      version: '22.04',
      checksum: undefined,
      isEncrypted: false,
      containerFormat: 'BARE',
      diskFormat: 'QCOW2',
      createdAt: undefined,
      minDisk: 4,
      minRam: 1000,
      size: 1_000_000_000,
      imagePath: '',
    });
    assert.equal((lb.checksum as { algorithm: string }).algorithm, 'sha-512');
    assert.match((lb.checksum as { hash: string }).hash, /^[0-9a-f]{128}$/);
    assert.deepEqual(
      (k.additionalArtifacts as Record<string, unknown>[]).map((a) => [a.artifactPath, (a.checksum as { algorithm: string }).algorithm, a.isEncrypted]),
      [
        ['BaseHOT/simple/nested/simple_nested_master.yaml', 'SHA-256', false],
        ['BaseHOT/simple/nested/simple_nested_worker.yaml', 'SHA-256', false],
        ['BaseHOT/simple/simple_hot_top.yaml', 'SHA-256', false],
        ['Scripts/install_external_lb.sh', 'SHA-256', false],
        ['Scripts/kubespray_mgmt.py', 'SHA-256', false],
      ],
      'the files TOSCA.meta declares with a digest, not the VNFD',
    );
    // the list shows the same (without reading the VNFD)
    const list = (await req('GET', `/vnfpkgm/v1/vnf_packages?filter=(eq,id,${k.id as string})&all_fields`)).json() as Record<string, unknown>[];
    expectPkgValid(list, true);
    assert.deepEqual(list[0]?.softwareImages, k.softwareImages);
    assert.deepEqual(list[0]?.additionalArtifacts, k.additionalArtifacts);
    await disableAndDelete(k.id as string);

    // Tacker's sample: two VDU images (no image file in the package), no declared artifacts
    const t = await onboard(vnfm.app, csarOf(join(TACKER, 'sol_v2_common/basic_lcms_min/contents'), VM_DEFS), idle);
    expectPkgValid(t);
    const ti = t.softwareImages as Record<string, unknown>[];
    assert.deepEqual(ti.map((i) => [i.id, i.name, i.version, i.containerFormat, i.diskFormat, i.minDisk, i.imagePath]), [
      ['VDU1', 'cirros-0.5.2-x86_64-disk', '0.5.2', 'BARE', 'QCOW2', 0, ''],
      ['VDU2', 'cirros-0.5.2-x86_64-disk', '0.5.2', 'BARE', 'QCOW2', 0, ''],
    ]);
    assert.deepEqual(t.additionalArtifacts, []);
    await disableAndDelete(t.id as string);
  });

  it('a second package with an already onboarded vnfdId ends in ERROR naming the clash', async () => {
    const first = await onboard(vnfm.app, csarOf(join(ROOT, 'samples/cnf-all-kinds')), idle);
    const detail = await failedOnboarding(csarOf(join(ROOT, 'samples/cnf-all-kinds')));
    assert.match(detail, new RegExp(`vnfdId ${first.vnfdId as string} is already onboarded`));
    await disableAndDelete(first.id as string);
  });

  it('broken packages end in onboardingState ERROR with a clear detail, never a 500', async () => {
    const notZip = await failedOnboarding(Buffer.from('this is not a zip file at all'));
    assert.match(notZip, /ZIP/i);

    const files = new Map<string, Buffer>([
      ['TOSCA-Metadata/TOSCA.meta', Buffer.from(ONE_FILE_META)],
      ['Definitions/one.yaml', Buffer.from('tosca_definitions_version: tosca_simple_yaml_1_2\ntopology_template:\n  node_templates: [\n    oops: {\n')],
    ]);
    const badYaml = await failedOnboarding(buildCsarFromFiles(files));
    assert.match(badYaml, /Definitions\/one\.yaml:\d+(:\d+)?: invalid YAML/);

    const missingEntry = await failedOnboarding(buildCsarFromFiles(new Map([['TOSCA-Metadata/TOSCA.meta', Buffer.from(ONE_FILE_META)]])));
    assert.match(missingEntry, /Definitions\/one\.yaml/);

    // a failed package accepts a new upload, which then onboards
    const id = await createPkg();
    assert.equal((await upload(id, Buffer.from('garbage'))).statusCode, 202);
    await idle();
    assert.equal((await getPkg(id)).onboardingState, 'ERROR');
    const retry = await upload(id, buildCsarFromFiles(new Map([['TOSCA-Metadata/TOSCA.meta', Buffer.from(ONE_FILE_META)], ['Definitions/one.yaml', Buffer.from(ONE_FILE_VNFD)]])));
    assert.equal(retry.statusCode, 202, retry.body);
    await idle();
    const p = await getPkg(id);
    assert.equal(p.onboardingState, 'ONBOARDED');
    assert.equal(p.onboardingFailureDetails, undefined);
    await disableAndDelete(id);

    // an empty body is refused at once
    const empty = await upload(await createPkg(), Buffer.alloc(0));
    assert.ok(empty.statusCode >= 400 && empty.statusCode < 500, `empty upload: ${empty.statusCode}`);
  });

  it('GET vnfd (zip and text/plain) and package_content return the uploaded VNFD and bytes', async () => {
    const zip = csarOf(join(ROOT, 'samples/vm-basic'));
    const p = await onboard(vnfm.app, zip, idle);
    const id = p.id as string;

    const content = await req('GET', `/vnfpkgm/v1/vnf_packages/${id}/package_content`);
    assert.equal(content.statusCode, 200);
    assert.match(String(content.headers['content-type']), /application\/zip/);
    assert.ok(content.rawPayload.equals(zip), 'package_content returns the uploaded bytes');

    const vnfd = await req('GET', `/vnfpkgm/v1/vnf_packages/${id}/vnfd`, undefined, { accept: 'application/zip' });
    assert.equal(vnfd.statusCode, 200);
    assert.match(String(vnfd.headers['content-type']), /application\/zip/);
    const entries = Object.keys(unzipSync(new Uint8Array(vnfd.rawPayload)));
    assert.ok(entries.includes('Definitions/sample_vnf_top.vnfd.yaml'), entries.join(','));
    assert.ok(entries.includes('TOSCA-Metadata/TOSCA.meta'));
    assert.ok(!entries.some((e) => e.startsWith('BaseHOT/') || e.startsWith('Scripts/')), 'only the VNFD files');

    // several VNFD files: text/plain cannot be served
    const plain = await req('GET', `/vnfpkgm/v1/vnf_packages/${id}/vnfd`, undefined, { accept: 'text/plain' });
    assertProblem(plain, 406);

    // the v2 lookup by vnfdId serves the same package, VNFD and content
    const v2 = await req('GET', `/vnfpkgm/v2/onboarded_vnf_packages/${p.vnfdId as string}`, undefined, V2);
    assert.equal(v2.statusCode, 200, v2.body);
    assert.equal(v2.json().id, id);
    assert.equal(v2.json().vnfdId, p.vnfdId);
    const v2content = await req('GET', `/vnfpkgm/v2/onboarded_vnf_packages/${p.vnfdId as string}/package_content`, undefined, V2);
    assert.ok(v2content.rawPayload.equals(zip));
    const v1onboarded = await req('GET', `/vnfpkgm/v1/onboarded_vnf_packages/${p.vnfdId as string}/vnfd`, undefined, { accept: 'application/zip' });
    assert.equal(v1onboarded.statusCode, 200);
    assertProblem(await req('GET', '/vnfpkgm/v2/onboarded_vnf_packages/00000000-0000-0000-0000-000000000000', undefined, V2), 404);

    // a one-file VNFD is served as text/plain
    const one = buildCsarFromFiles(new Map([['TOSCA-Metadata/TOSCA.meta', Buffer.from(ONE_FILE_META)], ['Definitions/one.yaml', Buffer.from(ONE_FILE_VNFD)]]));
    const q = await onboard(vnfm.app, one, idle);
    const txt = await req('GET', `/vnfpkgm/v1/vnf_packages/${q.id as string}/vnfd`, undefined, { accept: 'text/plain' });
    assert.equal(txt.statusCode, 200, txt.body);
    assert.match(String(txt.headers['content-type']), /^text\/plain/);
    assert.equal(txt.body, ONE_FILE_VNFD);

    // not onboarded yet: no VNFD, no content
    const fresh = await createPkg();
    assertProblem(await req('GET', `/vnfpkgm/v1/vnf_packages/${fresh}/vnfd`), 409);
    assertProblem(await req('GET', `/vnfpkgm/v1/vnf_packages/${fresh}/package_content`), 409);
    assertProblem(await req('GET', '/vnfpkgm/v1/vnf_packages/no-such-package/vnfd'), 404);

    await disableAndDelete(id);
    await disableAndDelete(q.id as string);
    assert.equal((await req('DELETE', `/vnfpkgm/v1/vnf_packages/${fresh}`)).statusCode, 204);
  });

  it('PATCH toggles operationalState; delete needs DISABLED and NOT_IN_USE; IN_USE while an instance exists', async () => {
    const p = await onboard(vnfm.app, csarOf(join(ROOT, 'samples/vm-basic')), idle);
    const id = p.id as string;

    const dis = await req('PATCH', `/vnfpkgm/v1/vnf_packages/${id}`, { operationalState: 'DISABLED' });
    assert.equal(dis.statusCode, 200, dis.body);
    assert.deepEqual(dis.json(), { operationalState: 'DISABLED' });
    assert.equal((await getPkg(id)).operationalState, 'DISABLED');
    assertProblem(await req('PATCH', `/vnfpkgm/v1/vnf_packages/${id}`, { operationalState: 'DISABLED' }), 409);

    // a disabled package cannot get new instances
    const refused = await req('POST', '/vnflcm/v2/vnf_instances', { vnfdId: p.vnfdId }, V2);
    assertProblem(refused, 409);
    assert.match(refused.json().detail, /DISABLED/);

    const en = await req('PATCH', `/vnfpkgm/v1/vnf_packages/${id}`, { operationalState: 'ENABLED', userDefinedData: { k: 'v' } });
    assert.equal(en.statusCode, 200, en.body);
    assert.deepEqual(en.json(), { operationalState: 'ENABLED', userDefinedData: { k: 'v' } });
    assertProblem(await req('PATCH', `/vnfpkgm/v1/vnf_packages/${id}`, { operationalState: 'BROKEN' }), 400);
    assertProblem(await req('PATCH', `/vnfpkgm/v1/vnf_packages/${id}`, {}), 400);

    const delEnabled = await req('DELETE', `/vnfpkgm/v1/vnf_packages/${id}`);
    assertProblem(delEnabled, 409);
    assert.match(delEnabled.json().detail, /ENABLED/);

    const inst = await req('POST', '/vnflcm/v2/vnf_instances', { vnfdId: p.vnfdId }, V2);
    assert.equal(inst.statusCode, 201, inst.body);
    assert.equal((await getPkg(id)).usageState, 'IN_USE');
    assert.equal((await req('PATCH', `/vnfpkgm/v1/vnf_packages/${id}`, { operationalState: 'DISABLED' })).statusCode, 200);
    const delInUse = await req('DELETE', `/vnfpkgm/v1/vnf_packages/${id}`);
    assertProblem(delInUse, 409);
    assert.match(delInUse.json().detail, /in use/);

    assert.equal((await req('DELETE', `/vnflcm/v2/vnf_instances/${inst.json().id as string}`, undefined, V2)).statusCode, 204);
    assert.equal((await getPkg(id)).usageState, 'NOT_IN_USE');
    assert.equal((await req('DELETE', `/vnfpkgm/v1/vnf_packages/${id}`)).statusCode, 204);
    assertProblem(await req('GET', `/vnfpkgm/v1/vnf_packages/${id}`), 404);
    assertProblem(await req('DELETE', `/vnfpkgm/v1/vnf_packages/${id}`), 404);
  });

  it('lists with a filter and pages with a Link header (pageSize 2)', async () => {
    const before = (await vnfm.store.db.selectFrom('vnf_package').select('id').execute()).map((r) => r.id);
    const onboarded: string[] = [];
    onboarded.push((await onboard(vnfm.app, csarOf(join(ROOT, 'samples/vm-basic')), idle)).id as string);
    onboarded.push((await onboard(vnfm.app, csarOf(join(ROOT, 'samples/cnf-all-kinds')), idle)).id as string);
    onboarded.push((await onboard(vnfm.app, buildCsarFromFiles(new Map([['TOSCA-Metadata/TOSCA.meta', Buffer.from(ONE_FILE_META)], ['Definitions/one.yaml', Buffer.from(ONE_FILE_VNFD)]])), idle)).id as string);
    const created = [await createPkg(), await createPkg()];

    // follow the Link header through every page
    const seen: Record<string, unknown>[] = [];
    let url: string | undefined = '/vnfpkgm/v1/vnf_packages?filter=(eq,onboardingState,ONBOARDED)';
    let pages = 0;
    while (url) {
      const r = await req('GET', url);
      assert.equal(r.statusCode, 200, r.body);
      const items = r.json() as Record<string, unknown>[];
      assert.ok(items.length <= 2, 'page size 2');
      seen.push(...items);
      pages++;
      const link = r.headers.link as string | undefined;
      if (link) {
        const m = /^<([^>]+)>; rel="next"$/.exec(link);
        assert.ok(m, link);
        const next = new URL(m[1] as string);
        assert.equal(next.searchParams.get('filter'), '(eq,onboardingState,ONBOARDED)', 'filter kept in the next link');
        url = `${next.pathname}${next.search}`;
      } else url = undefined;
    }
    assert.equal(pages, 2);
    assert.deepEqual(seen.map((p) => p.id).sort(), [...onboarded].sort());
    for (const p of seen) {
      assert.equal(p.onboardingState, 'ONBOARDED');
      assert.equal(p.softwareImages, undefined, 'default-excluded attributes are left out of lists');
      assert.equal(p.userDefinedData, undefined);
    }
    expectPkgValid(seen, true);

    // neq + all_fields, again across pages: exactly the packages that are not ONBOARDED, whole
    const rest: Record<string, unknown>[] = [];
    let next: string | undefined = '/vnfpkgm/v1/vnf_packages?filter=(neq,onboardingState,ONBOARDED)&all_fields';
    while (next) {
      const r = await req('GET', next);
      assert.equal(r.statusCode, 200, r.body);
      rest.push(...(r.json() as Record<string, unknown>[]));
      const link = r.headers.link as string | undefined;
      next = link ? new URL((/^<([^>]+)>/.exec(link) as RegExpExecArray)[1] as string).href.replace(vnfm.ctx.config.publicUrl, '') : undefined;
    }
    const expectedRest = (await vnfm.store.db.selectFrom('vnf_package').select('id').where('onboarding_state', '!=', 'ONBOARDED').execute()).map((r) => r.id);
    assert.deepEqual(rest.map((p) => p.id).sort(), expectedRest.sort());
    for (const c of created) assert.ok(rest.some((p) => p.id === c), 'created packages match neq');
    for (const p of rest) assert.deepEqual(p.softwareImages, [], 'all_fields keeps default-excluded attributes');
    assertProblem(await req('GET', '/vnfpkgm/v1/vnf_packages?filter=(eq,onboardingState'), 400);
    assertProblem(await req('GET', '/vnfpkgm/v1/vnf_packages?nextpage_opaque_marker=bogus!'), 400);
    assertProblem(await req('GET', '/vnfpkgm/v1/vnf_packages?fields=notAnAttribute'), 400);

    for (const id of onboarded) await disableAndDelete(id);
    for (const id of created) assert.equal((await req('DELETE', `/vnfpkgm/v1/vnf_packages/${id}`)).statusCode, 204);
    const afterIds = (await vnfm.store.db.selectFrom('vnf_package').select('id').execute()).map((r) => r.id);
    assert.deepEqual(afterIds.sort(), before.sort());
  });
});
