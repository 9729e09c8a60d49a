/**
 * Scenario fixture for VM (OpenStack/Heat) tests: a listening VNFM plus an OpenStack, wired the
 * way an operator would: the cloud registered as the default VIM through `POST /v1.0/vims`, the
 * sample VM package onboarded through the package API, instances driven through the LCM API over
 * HTTP. The cloud is either the simulated OpenStack (always available) or the real Keystone +
 * Heat of `scripts/real-heat.sh` (test stage `real-heat`), where nova/neutron/cinder are
 * stand-in templates given to the VIM as its Heat environment. The same scenario code runs on
 * both, so the simulator is held to what a real Heat does.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parse as parseYaml } from 'yaml';
import type { ConfigInput } from '../../src/config.ts';
import type { VnfmPlugin } from '../../src/main/server.ts';
import { type OpenStackSim, startOpenStackSim } from '../../src/sim/openstack/index.ts';
import { type TestVnfm, testVnfm } from '../helpers/app.ts';
import { STAND_IN_TEMPLATES_DIR } from '../helpers/fixtures.ts';
import { type Reply, vnfmRequest } from '../helpers/http.ts';
import { csarOf, ROOT } from '../helpers/packages.ts';
import { type RealHeatSettings, realHeatSettings } from '../helpers/stages.ts';

/** Body of an API answer (parsed JSON, or `{}` when empty). */
// biome-ignore lint/suspicious/noExplicitAny: API bodies are free-form JSON in scenario tests
export type Json = Record<string, any>;

export type { Reply } from '../helpers/http.ts';

/** Which OpenStack the scenario runs against. */
export type VmTarget = 'sim' | 'real';

/** The stand-in templates that let a Heat without nova/neutron/cinder run Tacker-style HOT. */
export const FAKE_NOVA_NEUTRON_DIR = STAND_IN_TEMPLATES_DIR;

/**
 * External virtual link of every instantiate: an ext CP on the VDU CP `VDU1_CP1`, so that the
 * instance reports `extCpInfo` (one per VDU1 VNFC) and ETSI validation covers it.
 */
export const EXT_VLS = [{ id: 'ext-net-1', resourceId: 'ext-net-uuid-1', extCps: [{ cpdId: 'VDU1_CP1', cpConfig: { cp1: { cpProtocolData: [{ layerProtocol: 'IP_OVER_ETHERNET' }] } } }] }];

/** The VIM's Heat environment: nova/neutron/cinder types mapped onto the stand-in templates. */
export function standInEnvironment(): { heat_environment: Json; heat_environment_files: Record<string, string> } {
  const env = parseYaml(readFileSync(join(FAKE_NOVA_NEUTRON_DIR, 'env.yaml'), 'utf8')) as Json;
  const files: Record<string, string> = {};
  for (const f of readdirSync(FAKE_NOVA_NEUTRON_DIR)) if (f.startsWith('fake_')) files[f] = readFileSync(join(FAKE_NOVA_NEUTRON_DIR, f), 'utf8');
  return { heat_environment: env, heat_environment_files: files };
}

/** Keystone credentials of the cloud under test. */
type Credentials = Omit<RealHeatSettings, 'region'>;

/** Read-only Heat access for assertions, with its own Keystone token (independent of the VNFM's clients). */
export class HeatInspector {
  private token: { value: string; heatUrl: string } | undefined;

  constructor(private readonly creds: Credentials) {}

  private async login(): Promise<{ value: string; heatUrl: string }> {
    if (this.token) return this.token;
    const c = this.creds;
    const res = await fetch(`${c.authUrl.replace(/\/+$/, '')}/auth/tokens`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        auth: {
          identity: { methods: ['password'], password: { user: { name: c.username, domain: { name: c.userDomain }, password: c.password } } },
          scope: { project: { name: c.project, domain: { name: c.projectDomain } } },
        },
      }),
    });
    assert.equal(res.status, 201, 'keystone token for the Heat inspector');
    const body = (await res.json()) as Json;
    const heat = (body.token.catalog as Json[]).find((s) => s.type === 'orchestration');
    const url = (heat?.endpoints as Json[] | undefined)?.find((e) => e.interface === 'public')?.url as string | undefined;
    assert.ok(url, 'catalog has an orchestration endpoint');
    this.token = { value: res.headers.get('x-subject-token') ?? '', heatUrl: url.replace(/\/+$/, '') };
    return this.token;
  }

  /** GET on the Heat API (`path` relative to the project endpoint); follows Heat's 302 by name. */
  async get(path: string): Promise<{ status: number; body: Json }> {
    const t = await this.login();
    const res = await fetch(`${t.heatUrl}${path}`, { headers: { 'x-auth-token': t.value, accept: 'application/json' } });
    const text = await res.text();
    return { status: res.status, body: text ? (JSON.parse(text) as Json) : {} };
  }

  /** `GET /stacks/{name}/{id}`: the stack (deleted stacks still answer). */
  async stack(name: string, id: string): Promise<Json> {
    const r = await this.get(`/stacks/${name}/${id}`);
    assert.equal(r.status, 200, `stack ${name}/${id}`);
    return r.body.stack as Json;
  }

  /** The environment Heat holds for a stack. */
  async environment(name: string, id: string): Promise<Json> {
    const r = await this.get(`/stacks/${name}/${id}/environment`);
    assert.equal(r.status, 200, `environment of ${name}/${id}`);
    return r.body;
  }

  /**
   * Every resource with a physical id in the stack and its nested stacks (depth 2), keyed by
   * `<id of the stack it lives in>/<resource name>`: a replaced resource keeps its key and
   * changes its value.
   */
  async physicalIds(name: string, id: string): Promise<Map<string, { type: string; id: string }>> {
    const r = await this.get(`/stacks/${name}/${id}/resources?nested_depth=2`);
    assert.equal(r.status, 200);
    const out = new Map<string, { type: string; id: string }>();
    for (const row of r.body.resources as Json[]) {
      if (!row.physical_resource_id) continue;
      const href = String(((row.links ?? []) as Json[]).find((l) => l.rel === 'stack')?.href ?? '');
      out.set(`${href.slice(href.lastIndexOf('/') + 1)}/${row.resource_name}`, { type: String(row.resource_type), id: String(row.physical_resource_id) });
    }
    return out;
  }

  /** Physical ids of every `OS::Nova::Server` in the stack and its nested stacks. */
  async serverIds(name: string, id: string): Promise<string[]> {
    const r = await this.get(`/stacks/${name}/${id}/resources?nested_depth=2`);
    assert.equal(r.status, 200);
    return (r.body.resources as Json[]).filter((x) => x.resource_type === 'OS::Nova::Server').map((x) => x.physical_resource_id as string).sort();
  }
}

/** A running scenario. */
export interface VmEnv {
  target: VmTarget;
  vnfm: TestVnfm;
  /** The simulated OpenStack (sim target only). */
  sim: OpenStackSim | undefined;
  heat: HeatInspector;
  vimId: string;
  vnfdId: string;
  /** How long to wait for one LCM operation. */
  opTimeoutMs: number;
  /** HTTP call to the VNFM (JSON body; `Version: 2.0.0` on /vnflcm/v2). */
  api(method: string, path: string, body?: unknown): Promise<Reply>;
  /** A `/_sim` control call (sim target only). */
  simControl(method: string, path: string, body?: unknown): Promise<Json>;
  close(): Promise<void>;
}

/** Options of {@link startVmEnv}. */
export interface VmEnvOptions {
  target: VmTarget;
  /** Heat delay of the simulator. @default 20 */
  heatDelayMs?: number;
  /** Package folder. @default samples/vm-basic */
  packageDir?: string;
  /** Extra VNFM settings (e.g. `runner.stepRetries`). */
  config?: ConfigInput;
  /** Extra VNFM plugins (e.g. an OpenStack driver with other HTTP retry settings). */
  plugins?: VnfmPlugin[];
}

function credentialsOf(target: VmTarget, sim: OpenStackSim | undefined): Credentials {
  if (target === 'sim' && sim) {
    const c = sim.credentials;
    return { authUrl: c.authUrl, username: c.username, password: c.password, project: c.project, userDomain: c.userDomain, projectDomain: c.projectDomain };
  }
  const s = realHeatSettings();
  return { authUrl: s.authUrl, username: s.username, password: s.password, project: s.project, userDomain: s.userDomain, projectDomain: s.projectDomain };
}

/** Starts the cloud (sim) and the VNFM, registers the default VIM and onboards the package. */
export async function startVmEnv(opts: VmEnvOptions): Promise<VmEnv> {
  const sim = opts.target === 'sim' ? await startOpenStackSim({ heatDelayMs: opts.heatDelayMs ?? 20 }) : undefined;
  const real = opts.target === 'real';
  let vnfm: TestVnfm | undefined;
  try {
    vnfm = await testVnfm({
      listen: true,
      config: { ...(opts.config ?? {}), runner: { pollMs: 100, ...(opts.config?.runner ?? {}) }, vim: { stackTimeoutMs: real ? 180_000 : 30_000, ...(opts.config?.vim ?? {}) } },
      ...(opts.plugins ? { plugins: opts.plugins } : {}),
    });
    const v = vnfm;
    sim?.setVnfmUrl(`${v.url}/`);
    const api = (method: string, path: string, body?: unknown): Promise<Reply> => vnfmRequest(v.url, method, path, body);
    const simControl = async (method: string, path: string, body?: unknown): Promise<Json> => {
      if (!sim) throw new Error('no simulator in a real-Heat scenario');
      const res = await fetch(`${sim.url}/_sim/${path}`, {
        method,
        headers: { 'x-sim-admin-secret': sim.adminSecret, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await res.text();
      if (!res.ok) throw new Error(`sim control ${method} ${path}: ${res.status} ${text}`);
      return text ? (JSON.parse(text) as Json) : {};
    };

    // The cloud as the default OpenStack VIM, with the stand-in Heat environment (the sim keeps
    // its native nova/neutron/cinder behaviour under it; the real Heat needs it).
    const creds = credentialsOf(opts.target, sim);
    const reg = await api('POST', '/v1.0/vims', {
      vim: {
        name: `${opts.target}-openstack`,
        type: 'openstack',
        auth_url: creds.authUrl,
        auth_cred: { username: creds.username, password: creds.password, user_domain_name: creds.userDomain },
        vim_project: { name: creds.project, project_domain_name: creds.projectDomain },
        is_default: true,
        extra: standInEnvironment(),
      },
    });
    assert.equal(reg.status, 201, reg.text);
    assert.ok(!reg.text.includes(creds.password), 'the VIM password is never returned');
    const vimId = reg.body.vim.id as string;

    const pkg = await api('POST', '/vnfpkgm/v1/vnf_packages', {});
    assert.equal(pkg.status, 201, pkg.text);
    const up = await api('PUT', `/vnfpkgm/v1/vnf_packages/${pkg.body.id}/package_content`, csarOf(opts.packageDir ?? join(ROOT, 'samples/vm-basic')));
    assert.equal(up.status, 202, up.text);
    let vnfdId = '';
    for (let i = 0; i < 200 && !vnfdId; i++) {
      const g = await api('GET', `/vnfpkgm/v1/vnf_packages/${pkg.body.id}`);
      if (g.body.onboardingState === 'ONBOARDED') vnfdId = g.body.vnfdId as string;
      else await sleep(50);
    }
    assert.ok(vnfdId, 'package onboarded');

    // A subscription so that every notification is written to the outbox.
    await v.store.db
      .insertInto('subscription')
      .values({ id: 'vm-e2e-sub', api_version: 'v2', callback_uri: 'http://127.0.0.1:9/cb', filter: JSON.stringify(null), verbosity: 'FULL', auth_types: '[]', auth_secret: null, dedupe_key: 'vm-e2e' })
      .execute();

    return {
      target: opts.target,
      vnfm: v,
      sim,
      heat: new HeatInspector(creds),
      vimId,
      vnfdId,
      opTimeoutMs: real ? 240_000 : 30_000,
      api,
      simControl,
      async close() {
        await v.close();
        await sim?.close();
      },
    };
  } catch (e) {
    await vnfm?.close();
    await sim?.close();
    throw e;
  }
}

/** The op occ id of a 202 answer (from its Location header); asserts the empty body. */
export function opIdOf(r: Reply): string {
  assert.equal(r.status, 202, r.text);
  assert.equal(r.text, '', '202 answers have no body');
  const m = /\/vnf_lcm_op_occs\/([^/]+)$/.exec(r.headers.get('location') ?? '');
  assert.ok(m, `Location header: ${r.headers.get('location')}`);
  return m[1] as string;
}

const FINAL = ['COMPLETED', 'FAILED_TEMP', 'FAILED', 'ROLLED_BACK'];

/** Polls the op occ until it reaches a final (or FAILED_TEMP) state; asserts `want` when given. */
export async function waitOp(env: VmEnv, opId: string, want?: string, v: 'v1' | 'v2' = 'v2'): Promise<Json> {
  const end = Date.now() + env.opTimeoutMs;
  const pause = env.target === 'sim' ? 25 : 250;
  for (;;) {
    const r = await env.api('GET', `/vnflcm/${v}/vnf_lcm_op_occs/${opId}`);
    assert.equal(r.status, 200, r.text);
    if (FINAL.includes(r.body.operationState as string)) {
      if (want !== undefined) assert.equal(r.body.operationState, want, `op ${opId}: ${JSON.stringify(r.body.error ?? null)}`);
      return r.body;
    }
    if (Date.now() > end) assert.fail(`op ${opId} still ${r.body.operationState} after ${env.opTimeoutMs} ms`);
    await sleep(pause);
  }
}

/** Sends an LCM request and returns the op occ id. */
export async function request(env: VmEnv, v: 'v1' | 'v2', id: string, op: string, body: unknown): Promise<string> {
  return opIdOf(await env.api('POST', `/vnflcm/${v}/vnf_instances/${id}/${op}`, body));
}

/** GET of an instance. */
export async function getInstance(env: VmEnv, id: string, v: 'v1' | 'v2' = 'v2'): Promise<Json> {
  const r = await env.api('GET', `/vnflcm/${v}/vnf_instances/${id}`);
  assert.equal(r.status, 200, r.text);
  return r.body;
}

/** Creates and instantiates an instance on the default VIM (with {@link EXT_VLS}); returns its id. */
export async function instantiated(env: VmEnv, v: 'v1' | 'v2', name: string, extra: Json = {}): Promise<string> {
  const c = await env.api('POST', `/vnflcm/${v}/vnf_instances`, { vnfdId: env.vnfdId, vnfInstanceName: name });
  assert.equal(c.status, 201, c.text);
  const id = c.body.id as string;
  const op = await request(env, v, id, 'instantiate', { flavourId: 'simple', extVirtualLinks: EXT_VLS, ...extra });
  await waitOp(env, op, 'COMPLETED', v);
  return id;
}

/** Terminates an instance (best effort, for clean-up on a real cloud). */
export async function terminate(env: VmEnv, id: string): Promise<void> {
  const r = await env.api('POST', `/vnflcm/v2/vnf_instances/${id}/terminate`, { terminationType: 'FORCEFUL' });
  if (r.status !== 202) return;
  await waitOp(env, opIdOf(r), undefined);
}

/** The notifications the VNFM wrote for one op occ, as `operationState/notificationStatus`. */
export async function notificationsOf(env: VmEnv, opId: string): Promise<string[]> {
  const rows = await env.vnfm.store.db.selectFrom('outbox').select(['id', 'notification']).orderBy('id').execute();
  return rows
    .map((r) => r.notification as Json)
    .filter((n) => n.vnfLcmOpOccId === opId)
    .map((n) => `${n.operationState}/${n.notificationStatus}`);
}

/** The notification bodies of one op occ. */
export async function notificationBodies(env: VmEnv, opId: string): Promise<Json[]> {
  const rows = await env.vnfm.store.db.selectFrom('outbox').select(['id', 'notification']).orderBy('id').execute();
  return rows.map((r) => r.notification as Json).filter((n) => n.vnfLcmOpOccId === opId);
}

/** One VNFC of a v2 instance body: its vnfcInfo and vnfcResourceInfo. */
export interface Vnfc {
  info: Json;
  res: Json;
}

/** The VNFCs of a v2 instance body (optionally of one VDU). */
export function vnfcsOf(inst: Json, vduId?: string): Vnfc[] {
  const info = inst.instantiatedVnfInfo;
  return (info.vnfcInfo as Json[])
    .filter((c) => vduId === undefined || c.vduId === vduId)
    .map((c) => ({ info: c, res: (info.vnfcResourceInfo as Json[]).find((r) => r.id === c.vnfcResourceInfoId) as Json }));
}

/** vnfcResourceInfo id -> server id. */
export function serversOf(inst: Json): Map<string, string> {
  return new Map((inst.instantiatedVnfInfo.vnfcResourceInfo as Json[]).map((r) => [r.id as string, r.computeResource.resourceId as string]));
}

/** virtualStorageResourceInfo id -> volume id. */
export function volumesOf(inst: Json): Map<string, string> {
  return new Map(((inst.instantiatedVnfInfo.virtualStorageResourceInfo ?? []) as Json[]).map((s) => [s.id as string, s.storageResource.resourceId as string]));
}

/** `vnf-<id>` and the stack id the instance reports. */
export function stackOf(inst: Json): { name: string; id: string } {
  const md = inst.instantiatedVnfInfo.metadata as Json;
  const id = String(md.stack_id);
  return { name: String(md.stack_name ?? `vnf-${inst.id}`), id: id.includes('/') ? id.slice(id.lastIndexOf('/') + 1) : id };
}
