/**
 * Package onboarding cannot be blocked or monopolised by one caller:
 *
 * - a 10,000-entry ZIP (~1.1 MB) onboards, and its files are listed for instantiation, without
 *   the VNFM's own process opening it (the `healvnfm:packages:csar-read` diagnostics channel stays
 *   silent) or walking its bytes in JavaScript (the upload's byte iterator is never used: the
 *   embedded database stores bytea in native hex); health answers while the worker holds the
 *   package (counted, not timed);
 * - a YAML alias bomb ("billion laughs") ends ERROR with the alias budget and file:line:col, and
 *   yaml's per-call `Alias.resolve` (a walk of the whole document) is never used;
 * - one caller (here: a client address, no authentication) runs at most
 *   packages.maxConcurrentOnboardingsPerCaller onboardings: its next upload gets 429 +
 *   Retry-After while another caller's valid package onboards.
 *
 * The onboarding worker is held at start by `PackageService.onWorkerStarted` (fault positioning),
 * so "while the package is PROCESSING" is a fact of the test, not a race.
 */
import assert from 'node:assert/strict';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { request } from 'node:http';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Alias } from 'yaml';
import { buildCsarFromDir, buildCsarFromFiles, readCsar } from '../../src/packages/csar-reader.ts';
import { parseVnfPackage } from '../../src/packages/vnfd-parser.ts';
import { type TestVnfm, testVnfm } from '../helpers/app.ts';
import { ROOT } from '../helpers/packages.ts';
import { aliasBombCsar, manyEntriesCsar } from '../packages/hostile-packages.ts';

const ALIAS_DETAIL = /^Definitions\/vnfd\.yaml:\d+:\d+: YAML document is too large once aliases are expanded: the package's YAML aliases expand to more than 100000 nodes \(an alias bomb\?\)$/;

/** One HTTP request from a chosen local address (127.0.0.0/8 is all loopback), so callers differ by address. */
function call(url: string, method: string, path: string, from: string, body?: Buffer | string, contentType = 'application/json'): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; json: () => any }> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}${path}`, { method, localAddress: from, headers: body === undefined ? {} : { 'content-type': contentType } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({ status: res.statusCode ?? 0, headers: res.headers, json: () => JSON.parse(text) });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** Holds the worker of chosen packages at start until released. */
function workerGate(vnfm: TestVnfm) {
  const held = new Map<string, { reached: () => void; release: () => void; reachedP: Promise<void>; releaseP: Promise<void> }>();
  const slot = (id: string) => {
    let s = held.get(id);
    if (!s) {
      let reached!: () => void;
      let release!: () => void;
      const reachedP = new Promise<void>((r) => (reached = r));
      const releaseP = new Promise<void>((r) => (release = r));
      s = { reached, release, reachedP, releaseP };
      held.set(id, s);
    }
    return s;
  };
  const hold = new Set<string>();
  vnfm.ctx.packages.onWorkerStarted = async (id) => {
    if (!hold.has(id)) return;
    const s = slot(id);
    s.reached();
    await s.releaseP;
  };
  return {
    hold: (id: string) => hold.add(id),
    reached: (id: string) => slot(id).reachedP,
    release: (id: string) => slot(id).release(),
  };
}

async function createPkg(url: string, from: string): Promise<string> {
  const r = await call(url, 'POST', '/vnfpkgm/v1/vnf_packages', from, '{}');
  assert.equal(r.status, 201);
  return r.json().id as string;
}

describe('onboarding fairness and main-thread work', { timeout: 600_000 }, () => {
  let vnfm: TestVnfm;
  before(async () => {
    vnfm = await testVnfm({ listen: true, config: { packages: { maxConcurrentOnboardings: 2, maxConcurrentOnboardingsPerCaller: 1, busyRetryAfterSeconds: 3 } } });
  });
  after(async () => {
    await vnfm?.close();
  });

  it('a 10,000-entry ZIP onboards in the worker: the VNFM never opens it nor walks its bytes, health answers meanwhile', async () => {
    const gate = workerGate(vnfm);
    const { csar, vnfdId } = manyEntriesCsar(10_000);
    assert.equal((await readCsar(csar)).size, 10_000);
    const opened: unknown[] = [];
    const onRead = (m: unknown) => opened.push(m);
    subscribe('healvnfm:packages:csar-read', onRead);
    try {
      // Every per-byte walk in JavaScript (Array.from, for..of, spread) goes through the iterator.
      let walked = 0;
      Object.defineProperty(csar, Symbol.iterator, {
        value: function* () {
          walked++;
          yield* Uint8Array.prototype[Symbol.iterator].call(csar);
        },
      });
      const id = await createPkg(vnfm.url, '127.0.0.1');
      gate.hold(id);
      await vnfm.ctx.packages.upload(id, csar, 'address:127.0.0.1');
      await gate.reached(id);
      let answers = 0;
      for (let i = 0; i < 5; i++) {
        const h = await call(vnfm.url, 'GET', '/healthz', '127.0.0.1');
        assert.equal(h.status, 200);
        answers++;
      }
      const during = await call(vnfm.url, 'GET', `/vnfpkgm/v1/vnf_packages/${id}`, '127.0.0.1');
      assert.equal(during.json().onboardingState, 'PROCESSING');
      assert.equal(answers, 5, 'health answered while the package was PROCESSING');
      gate.release(id);
      await vnfm.ctx.packages.idle();
      const p = (await call(vnfm.url, 'GET', `/vnfpkgm/v1/vnf_packages/${id}`, '127.0.0.1')).json();
      assert.equal(p.onboardingState, 'ONBOARDED', JSON.stringify(p.onboardingFailureDetails));
      assert.equal(p.vnfdId, vnfdId);
      assert.equal(walked, 0, 'the package bytes were walked in JavaScript on the event loop');
      assert.ok((await vnfm.ctx.packages.content(id)).equals(csar), 'the stored content is the upload');
      assert.deepEqual(opened, [], 'the VNFM process opened the ZIP itself');
      // Its files (what instantiation and hook scripts read) come from a worker too.
      const files = await vnfm.ctx.packages.files(id);
      assert.equal(files.size, 10_000);
      assert.equal(files.get('Files/f9997.txt')?.toString(), '9997');
      assert.deepEqual(opened, [], 'the VNFM process opened the ZIP to list its files');
    } finally {
      unsubscribe('healvnfm:packages:csar-read', onRead);
    }
  });

  it("an alias bomb's caller is busy (429 + Retry-After) while another caller's package onboards; the bomb ends ERROR with the alias limit at file:line", async () => {
    const gate = workerGate(vnfm);
    const bombId = await createPkg(vnfm.url, '127.0.0.1');
    gate.hold(bombId);
    const up = await call(vnfm.url, 'PUT', `/vnfpkgm/v1/vnf_packages/${bombId}/package_content`, '127.0.0.1', aliasBombCsar(), 'application/zip');
    assert.equal(up.status, 202);
    await gate.reached(bombId);

    // The same caller again: 429, ProblemDetails, Retry-After; the package stays CREATED.
    const second = await createPkg(vnfm.url, '127.0.0.1');
    const busy = await call(vnfm.url, 'PUT', `/vnfpkgm/v1/vnf_packages/${second}/package_content`, '127.0.0.1', buildCsarFromDir(join(ROOT, 'samples/vm-basic')), 'application/zip');
    assert.equal(busy.status, 429);
    assert.equal(busy.headers['retry-after'], '3');
    assert.match(String(busy.headers['content-type']), /^application\/problem\+json/);
    const problem = busy.json();
    assert.equal(problem.type, 'urn:vnfm:error:VNFM_ERR_PKG_CALLER_BUSY');
    assert.equal(problem.status, 429);
    assert.match(problem.detail, /packages\.maxConcurrentOnboardingsPerCaller/);
    assert.equal((await call(vnfm.url, 'GET', `/vnfpkgm/v1/vnf_packages/${second}`, '127.0.0.1')).json().onboardingState, 'CREATED');

    // Another caller (another address) onboards a valid package while the bomb's worker is held.
    const other = await createPkg(vnfm.url, '127.0.0.2');
    const ok = await call(vnfm.url, 'PUT', `/vnfpkgm/v1/vnf_packages/${other}/package_content`, '127.0.0.2', buildCsarFromDir(join(ROOT, 'samples/vm-basic')), 'application/zip');
    assert.equal(ok.status, 202);
    for (;;) {
      const s = (await call(vnfm.url, 'GET', `/vnfpkgm/v1/vnf_packages/${other}`, '127.0.0.2')).json().onboardingState;
      if (s !== 'PROCESSING') {
        assert.equal(s, 'ONBOARDED');
        break;
      }
      await new Promise((r) => setImmediate(r));
    }
    assert.equal((await call(vnfm.url, 'GET', `/vnfpkgm/v1/vnf_packages/${bombId}`, '127.0.0.1')).json().onboardingState, 'PROCESSING');

    gate.release(bombId);
    await vnfm.ctx.packages.idle();
    const bomb = (await call(vnfm.url, 'GET', `/vnfpkgm/v1/vnf_packages/${bombId}`, '127.0.0.1')).json();
    assert.equal(bomb.onboardingState, 'ERROR');
    assert.match(bomb.onboardingFailureDetails.detail, ALIAS_DETAIL);
    // The caller's slot is free again.
    assert.equal((await call(vnfm.url, 'PUT', `/vnfpkgm/v1/vnf_packages/${second}/package_content`, '127.0.0.1', buildCsarFromDir(join(ROOT, 'samples/vm-basic')), 'application/zip')).status, 202);
    await vnfm.ctx.packages.idle();
  });
});

describe('YAML alias bombs', () => {
  it('fail with the alias budget at file:line:col, each alias resolved once per document (never by a walk per alias)', async () => {
    const files = await readCsar(aliasBombCsar());
    const resolve = Alias.prototype.resolve;
    let walks = 0;
    Alias.prototype.resolve = function (this: Alias, ...args: Parameters<Alias['resolve']>) {
      walks++;
      return resolve.apply(this, args);
    };
    try {
      assert.throws(() => parseVnfPackage(files), (e: Error) => ALIAS_DETAIL.test(e.message));
    } finally {
      Alias.prototype.resolve = resolve;
    }
    assert.equal(walks, 0);
  });

  it('the alias budget is one per package: a bomb split over imported files fails too', async () => {
    // Each file expands to ~46,000 nodes through aliases: under the budget alone, over it with three.
    const META = 'TOSCA-Meta-File-Version: 1.0\nCSAR-Version: 1.1\nCreated-by: test\nEntry-Definitions: Definitions/vnfd.yaml\n';
    const ten = (a: string) => `[${Array(10).fill(`*${a}`).join(', ')}]`;
    const part = (n: number) => ['tosca_definitions_version: tosca_simple_yaml_1_2', 'metadata:', '  a0: &a0 "x"', `  a1: &a1 ${ten('a0')}`, `  a2: &a2 ${ten('a1')}`, `  a3: &a3 ${ten('a2')}`, `  a4: &a4 ${ten('a3')}`, `  laughs${n}: [*a4, *a4, *a4]`].join('\n');
    const csarWith = (n: number) => {
      const files: Record<string, string> = { 'TOSCA-Metadata/TOSCA.meta': META };
      files['Definitions/vnfd.yaml'] = ['tosca_definitions_version: tosca_simple_yaml_1_2', 'imports:', ...Array.from({ length: n }, (_, i) => `  - part${i + 1}.yaml`), 'topology_template:', '  node_templates: {}'].join('\n');
      for (let i = 1; i <= n; i++) files[`Definitions/part${i}.yaml`] = part(i);
      return buildCsarFromFiles(files);
    };
    const one = await readCsar(csarWith(1));
    assert.throws(() => parseVnfPackage(one), (e: Error) => !/aliases expand/.test(e.message), 'one file alone is within the budget');
    const three = await readCsar(csarWith(3));
    assert.throws(() => parseVnfPackage(three), (e: Error) => /^Definitions\/part\d\.yaml:\d+:\d+: YAML document is too large once aliases are expanded: the package's YAML aliases expand to more than 100000 nodes/.test(e.message));
  });
});
