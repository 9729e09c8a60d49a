/**
 * Shared pieces of the auto-heal tests: a fake infra driver whose servers carry Server Notifier
 * alarm ids, a stand-in Server Notifier alarm API, a VNFM with auto-heal wired in, and helpers to
 * instantiate a VNF and post fault notifications.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { type IncomingMessage, type Server, createServer } from 'node:http';
import { join } from 'node:path';
import type { AutohealPluginOptions } from '../../src/autoheal/autoheal-plugin.ts';
import type { Services as AutohealContext } from '../../src/core/services.ts';
import type { ConfigInput } from '../../src/config.ts';
import type { InfraContext, ObservedResources } from '../../src/infra/infra-driver.ts';
import type { Store } from '../../src/store/db.ts';
import { type TestVnfm, testVnfm } from '../helpers/app.ts';
import { FAKE_VIM, FakeDriver } from '../helpers/fake-driver.ts';
import { ROOT, csarOf, onboard } from '../helpers/packages.ts';

export const V2 = { version: '2.0.0' };

/** Secret key shared by the VNFM processes of one test (they share the database). */
export const TEST_SECRET_KEY = '7f'.repeat(32);

/** A fake VIM whose servers report `metadata.server_notification.alarmId` = `alarm-<serverId>` (when `withAlarms`). */
export class AlarmFakeDriver extends FakeDriver {
  withAlarms = true;
  override async observe(ctx: InfraContext): Promise<ObservedResources> {
    const o = await super.observe(ctx);
    if (!this.withAlarms) return o;
    return { ...o, vnfcs: o.vnfcs.map((v) => ({ ...v, metadata: { server_notification: { alarmId: `alarm-${v.computeResource.resourceId}`, serverId: v.computeResource.resourceId } } })) };
  }
}

/** The VIM connection the tests use (the project names the tenant of the alarm API). */
export const VIM = { ...FAKE_VIM, accessInfo: { ...FAKE_VIM.accessInfo, project: 'tenant-a' } };

/** One request the notifier stub got. */
export interface NotifierCall {
  method: string;
  path: string;
  body: Record<string, unknown> | undefined;
  token: string | undefined;
}

/** The token the stub's Keystone hands out. */
export const STUB_TOKEN = 'stub-keystone-token-0123';

/** A VIM connection whose Keystone is the notifier stub (so alarm calls carry a token). */
export function keystoneVim(stubUrl: string) {
  return { ...FAKE_VIM, vimId: STUB_VIM_ID, interfaceInfo: { endpoint: `${stubUrl}/v3` }, accessInfo: { username: 'vnfm', password: 'vim-password-xyz', project: 'tenant-a', userDomain: 'Default', projectDomain: 'Default' } };
}

/** The vimId of {@link keystoneVim} connections (the VIM the stub notifier is registered for). */
export const STUB_VIM_ID = 'vim-keystone-stub';

/** Registers a Server Notifier for a VIM (admin API); returns its id. */
export async function registerNotifier(v: TestVnfm, uri: string, vimId: string, name = `notifier-${randomUUID().slice(0, 8)}`): Promise<string> {
  const r = await v.app.inject({ method: 'POST', url: '/vnfm/v1/server-notifiers', payload: { name, uri, vimId } });
  assert.equal(r.statusCode, 201, r.body);
  return r.json().id as string;
}

/** A stand-in Server Notifier alarm API (plus a minimal Keystone). */
export interface NotifierStub {
  url: string;
  calls: NotifierCall[];
  /** alarm id -> registration. */
  alarms: Map<string, { tenant: string; serverId: string; faultAction: string; faultIds: string[] }>;
  /** Status 500 for the next N alarm POSTs. */
  failPosts: number;
  /** Decides per alarm POST (1-based count) whether it fails with 500. */
  failPost?: (n: number) => boolean;
  /** Alarm POSTs so far. */
  posts: number;
  close(): Promise<void>;
}

async function readBody(req: IncomingMessage): Promise<string> {
  let s = '';
  for await (const c of req) s += c;
  return s;
}

/** Starts the alarm API stand-in on a free port. */
export async function startNotifierStub(): Promise<NotifierStub> {
  const stub: NotifierStub = { url: '', calls: [], alarms: new Map(), failPosts: 0, posts: 0, close: async () => undefined };
  const server: Server = createServer(async (req, res) => {
    const text = await readBody(req);
    const body = text ? (JSON.parse(text) as Record<string, unknown>) : undefined;
    const path = req.url ?? '';
    stub.calls.push({ method: req.method ?? '', path, body, token: req.headers['x-auth-token'] as string | undefined });
    const m = /^\/v2\/([^/]+)\/servers\/([^/]+)\/alarms(?:\/([^/]+))?$/.exec(path);
    const send = (status: number, b?: unknown, headers: Record<string, string> = {}) => {
      res.writeHead(status, { ...headers, ...(b === undefined ? {} : { 'content-type': 'application/json' }) });
      res.end(b === undefined ? undefined : JSON.stringify(b));
    };
    if (path === '/v3/auth/tokens' && req.method === 'POST') {
      // A minimal Keystone: every password authentication gets the same token.
      const now = Date.now();
      return send(201, { token: { expires_at: new Date(now + 3600_000).toISOString(), issued_at: new Date(now).toISOString(), user: { id: 'u1', name: 'vnfm', domain: { id: 'default', name: 'Default' } }, project: { id: 'p1', name: 'tenant-a', domain: { id: 'default', name: 'Default' } }, roles: [{ name: 'admin' }], methods: ['password'], catalog: [] } }, { 'x-subject-token': STUB_TOKEN });
    }
    if (!m) return send(404, { error: 'no route' });
    const [, tenant, serverId, alarmId] = m as unknown as [string, string, string, string | undefined];
    if (req.method === 'POST' && !alarmId) {
      stub.posts++;
      if (stub.failPost?.(stub.posts)) return send(500, { error: 'injected failure' });
      if (stub.failPosts > 0) {
        stub.failPosts--;
        return send(500, { error: 'injected failure' });
      }
      const id = `alm-${randomUUID().slice(0, 8)}`;
      stub.alarms.set(id, { tenant: decodeURIComponent(tenant), serverId: decodeURIComponent(serverId), faultAction: String(body?.fault_action), faultIds: (body?.fault_id as string[]) ?? [] });
      return send(201, { alarm_id: id, fault_action: body?.fault_action, fault_id: body?.fault_id });
    }
    if (req.method === 'DELETE' && alarmId) {
      const a = stub.alarms.get(decodeURIComponent(alarmId));
      if (!a || a.serverId !== decodeURIComponent(serverId)) return send(404, { error: 'no such alarm' });
      stub.alarms.delete(decodeURIComponent(alarmId));
      return send(204);
    }
    return send(405);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const addr = server.address() as { port: number };
  stub.url = `http://127.0.0.1:${addr.port}`;
  stub.close = () => new Promise((r) => server.close(() => r()));
  return stub;
}

/** A VNFM with the fake driver and auto-heal. */
export interface AutohealVnfm {
  vnfm: TestVnfm;
  fake: FakeDriver;
  ctx: AutohealContext;
}

/** Options of {@link startAutohealVnfm}. */
export interface StartOptions {
  store?: Store;
  fake?: FakeDriver;
  windowMs?: number;
  listen?: boolean;
  workerId?: string;
  config?: ConfigInput & { autoheal?: Record<string, unknown> };
  plugin?: AutohealPluginOptions;
}

/** Starts a VNFM with the fake driver and auto-heal wired in. */
export async function startAutohealVnfm(o: StartOptions = {}): Promise<AutohealVnfm> {
  const fake = o.fake ?? new AlarmFakeDriver();
  const { autoheal, ...rest } = o.config ?? {};
  const vnfm = await testVnfm({
    ...(o.store ? { store: o.store } : {}),
    ...(o.listen ? { listen: true } : {}),
    modules: { autoheal: { noMgmtDriver: true, ...(autoheal ? { settings: autoheal } : {}), ...(o.plugin ?? {}) } },
    plugins: [(ctx) => ctx.engine.drivers.register(fake)],
    config: {
      logLevel: 'warn',
      // one key for every process of a test, so that they can all open the sealed VIM secrets
      secretKey: TEST_SECRET_KEY,
      runner: { pollMs: 50, leaseMs: 3000, concurrency: 8, workerId: o.workerId ?? `w-${randomUUID().slice(0, 6)}` },
      faultNotification: { windowMs: o.windowMs ?? 300 },
      ...rest,
    } as ConfigInput,
  });
  return { vnfm, fake, ctx: vnfm.ctx as AutohealContext };
}

/** Onboards the vm-basic sample (3 VNFCs: VDU1 x2, VDU2 x1); returns its vnfdId. */
export async function onboardSample(v: TestVnfm): Promise<string> {
  const pkg = await onboard(v.app, csarOf(join(ROOT, 'samples/vm-basic')), () => v.ctx.packages.idle());
  return pkg.vnfdId as string;
}

/** One VNFC of an instantiated test VNF. */
export interface TestVnfc {
  vnfcInfoId: string;
  vnfcResourceInfoId: string;
  serverId: string;
  alarmId: string | undefined;
  vduId: string;
}

/** Reads the VNFCs of an instance. */
export async function vnfcsOf(v: TestVnfm, id: string): Promise<TestVnfc[]> {
  const r = await v.app.inject({ method: 'GET', url: `/vnflcm/v2/vnf_instances/${id}`, headers: V2 });
  assert.equal(r.statusCode, 200, r.body);
  const info = r.json().instantiatedVnfInfo ?? {};
  return (info.vnfcInfo ?? []).map((vi: { id: string; vnfcResourceInfoId: string; vduId: string }) => {
    const res = (info.vnfcResourceInfo ?? []).find((x: { id: string }) => x.id === vi.vnfcResourceInfoId);
    return { vnfcInfoId: vi.id, vnfcResourceInfoId: res.id, serverId: res.computeResource.resourceId, alarmId: res.metadata?.server_notification?.alarmId, vduId: vi.vduId };
  });
}

/** Creates and instantiates a VNF (auto-heal enabled unless told otherwise); waits for COMPLETED. */
export async function instantiateVnf(
  v: TestVnfm,
  vnfdId: string,
  o: { autoheal?: boolean; additionalParams?: Record<string, unknown>; vnfConfigurableProperties?: Record<string, unknown>; vim?: Record<string, unknown>; expect?: string } = {},
): Promise<{ id: string; vnfcs: TestVnfc[]; opOccId: string }> {
  const c = await v.app.inject({ method: 'POST', url: '/vnflcm/v2/vnf_instances', headers: V2, payload: { vnfdId, vnfInstanceName: 'autoheal-test' } });
  assert.equal(c.statusCode, 201, c.body);
  const id = c.json().id as string;
  const payload = {
    flavourId: 'simple',
    vimConnectionInfo: { vim1: o.vim ?? VIM },
    vnfConfigurableProperties: { isAutohealEnabled: o.autoheal ?? true, ...(o.vnfConfigurableProperties ?? {}) },
    additionalParams: { ServerNotifierFaultID: ['1234'], ...(o.additionalParams ?? {}) },
  };
  const r = await v.app.inject({ method: 'POST', url: `/vnflcm/v2/vnf_instances/${id}/instantiate`, headers: V2, payload });
  assert.equal(r.statusCode, 202, r.body);
  const occ = String(r.headers.location).split('/').pop() as string;
  const want = o.expect ?? 'COMPLETED';
  await waitFor(async () => (await opOcc(v, occ)).operationState === want, 20_000, `instantiate ${occ} ${want}`);
  return { id, vnfcs: want === 'COMPLETED' ? await vnfcsOf(v, id) : [], opOccId: occ };
}

/** GET one op occ (v2). */
export async function opOcc(v: TestVnfm, id: string): Promise<Record<string, unknown> & { operationState: string; operation: string }> {
  const r = await v.app.inject({ method: 'GET', url: `/vnflcm/v2/vnf_lcm_op_occs/${id}`, headers: V2 });
  assert.equal(r.statusCode, 200, r.body);
  return r.json();
}

/** HEAL op occs of an instance (oldest first). */
export async function healsOf(v: TestVnfm, instanceId: string): Promise<{ id: string; operationState: string; isAutomaticInvocation: boolean; operationParams: { vnfcInstanceId?: string[]; cause?: string } }[]> {
  const rows = await v.store.db.selectFrom('op_occ').selectAll().where('vnf_instance_id', '=', instanceId).where('operation', '=', 'HEAL').orderBy('created_at').execute();
  return rows.map((r) => ({ id: r.id, operationState: r.operation_state, isAutomaticInvocation: r.is_automatic_invocation, operationParams: r.operation_params as { vnfcInstanceId?: string[]; cause?: string } }));
}

/** A FaultNotification body. */
export function faultBody(vnfc: Pick<TestVnfc, 'alarmId'>, over: Record<string, unknown> = {}): Record<string, unknown> {
  return { notification: { host_id: 'host-1', alarm_id: vnfc.alarmId, fault_id: '1234', fault_type: '10', fault_option: { detail: 'test' }, ...over } };
}

/** Posts a fault notification for a VNFC. */
export async function notify(v: TestVnfm, instanceId: string, serverId: string, body: unknown, headers: Record<string, string> = {}) {
  return v.app.inject({ method: 'POST', url: `/server_notification/vnf_instances/${instanceId}/servers/${serverId}/notify`, payload: body as object, headers });
}

/** Polls until `fn` is true. */
export async function waitFor(fn: () => Promise<boolean> | boolean, timeoutMs = 10_000, what = 'condition'): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (await fn()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** Blocks a fake driver operation until the returned function is called. */
export function holdDriver(fake: FakeDriver, op: string): () => void {
  let release!: () => void;
  fake.hold.set(op, new Promise<void>((r) => (release = r)));
  return () => {
    fake.hold.delete(op);
    release();
  };
}
