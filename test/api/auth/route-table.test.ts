/**
 * Every registered route (read from the app's route table, so no route escapes) under every
 * authentication mode (static tokens, the built-in OAuth 2.0 server, an external OAuth 2.0
 * authorization server by RFC 7662 introspection, Keystone, TLS client certificates), each with: no credential, a wrong one, an expired one, the wrong role, another
 * project's caller, and the right caller -> the expected status:
 * - no / wrong / expired credential: 401 ProblemDetails with `WWW-Authenticate`;
 * - wrong role: 403 naming the missing role;
 * - other project: the resource's 404 for a route naming a project's resource (instances, op occs,
 *   subscriptions, the fault ledger, VNFC health, and VNF packages and VIMs, which belong to the project that
 *   created them), lists without it;
 * - right caller: neither 401, 403 nor (for a resource it owns) 404.
 * The open routes (token endpoint, probes, and `/metrics` + `/docs` from loopback) are an explicit
 * list here; in the OAuth mode `/metrics` and `/docs` are set to `authenticated` and checked too.
 * Nothing is stored for any refused request (row counts of every table do not move).
 */
import assert from 'node:assert/strict';
import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import type { ConfigInput } from '../../../src/config.ts';
import { registeredRoutes } from '../../../src/api/auth/index.ts';
import { OAuthService } from '../../../src/api/auth/oauth2.ts';
import { credentialHash } from '../../../src/api/auth/cache.ts';
import { type TestVnfm, testVnfm } from '../../helpers/app.ts';
import { FakeKeystone, type KeyCert, TestPki, httpsCall } from '../../helpers/auth.ts';
import { FAKE_VIM, FakeDriver } from '../../helpers/fake-driver.ts';
import { ROOT, csarOf } from '../../helpers/packages.ts';
import { until } from '../../helpers/wait.ts';

type Who = 'admin' | 'operatorA' | 'readerA' | 'operatorB' | 'wrong' | 'expired' | 'none';
type Need = 'reader' | 'operator' | 'admin' | 'open';

/** A credential: headers, or a TLS client certificate. */
interface Cred {
  headers?: Record<string, string>;
  client?: KeyCert;
}

interface Answer {
  statusCode: number;
  headers: Record<string, unknown>;
  body: string;
}

/** What the test expects each route to need (written here, independently of the policy module). */
function need(method: string, url: string): Need {
  if (url === '/token' || url === '/healthz' || url === '/readyz') return 'open';
  if (url === '/metrics' || url === '/docs' || url.startsWith('/docs/')) return 'open';
  // the dashboard's static files, its login configuration and Keystone login forwarder
  if (url === '/ui' || url === '/ui/*' || url === '/vnfm/v1/ui/config' || url === '/vnfm/v1/ui/keystone-tokens') return 'open';
  if (url.startsWith('/vnfm/v1/oauth2/clients') || url.startsWith('/vnfm/v1/server-notifiers')) return 'admin';
  // VNF packages and VIMs belong to projects (auth.tenancy default): a project's operator manages its own
  if (method === 'GET' || method === 'HEAD') return 'reader';
  return 'operator';
}

/** Routes naming one resource of a project. */
const TENANT_ROUTE =
  /^\/vnflcm\/v[12]\/(vnf_instances|vnf_lcm_op_occs|subscriptions)\/:id|^\/vnfm\/v1\/(subscriptions|notifications|heal_batches|fault_notifications)\/:id|^\/vnfm\/v1\/vnf_instances\/:id\/health|^\/server_notification\/vnf_instances\/|^\/vnfpkgm\/v1\/vnf_packages\/:id|^\/vnfpkgm\/v[12]\/onboarded_vnf_packages\/:id|^\/v1\.0\/vims\/:id/;
/** List routes of project resources (other project: 200 without project A's rows). */
const TENANT_LIST = /^\/vnflcm\/v[12]\/(vnf_instances|vnf_lcm_op_occs|subscriptions)$|^\/vnfm\/v1\/(notifications|heal_batches|fault_notifications|vnfc_health)$|^\/vnfpkgm\/v1\/vnf_packages$|^\/v1\.0\/vims(\.json)?$/;

/** The rows of a list answer (the legacy VIM list wraps them in `vims`). */
const rowsOf = (body: string): unknown[] => {
  const b = JSON.parse(body) as unknown;
  return Array.isArray(b) ? b : ((b as { vims: unknown[] }).vims ?? []);
};

interface Ids {
  pkg: string;
  vnfdId: string;
  vim: string;
  inst: string;
  op: string;
  sub1: string;
  sub2: string;
  outbox: string;
  batch: string;
  fault: string;
  client: string;
}

function pathOf(url: string, ids: Ids): string {
  const p = url
    .replace(/^\/vnflcm\/v([12])\/vnf_instances\/:id/, (_m, v) => `/vnflcm/v${v}/vnf_instances/${ids.inst}`)
    .replace(/^\/vnflcm\/v([12])\/vnf_lcm_op_occs\/:id/, (_m, v) => `/vnflcm/v${v}/vnf_lcm_op_occs/${ids.op}`)
    .replace(/^\/vnflcm\/v1\/subscriptions\/:id/, `/vnflcm/v1/subscriptions/${ids.sub1}`)
    .replace(/^\/vnflcm\/v2\/subscriptions\/:id/, `/vnflcm/v2/subscriptions/${ids.sub2}`)
    .replace(/^\/vnfm\/v1\/subscriptions\/:id/, `/vnfm/v1/subscriptions/${ids.sub2}`)
    .replace(/^\/vnfm\/v1\/notifications\/:id/, `/vnfm/v1/notifications/${ids.outbox}`)
    .replace(/^\/vnfm\/v1\/heal_batches\/:id/, `/vnfm/v1/heal_batches/${ids.batch}`)
    .replace(/^\/vnfm\/v1\/vnf_instances\/:id/, `/vnfm/v1/vnf_instances/${ids.inst}`)
    .replace(/^\/vnfm\/v1\/fault_notifications\/:id/, `/vnfm/v1/fault_notifications/${ids.fault}`)
    .replace(/^\/vnfm\/v1\/oauth2\/clients\/:id/, `/vnfm/v1/oauth2/clients/${ids.client}`)
    .replace(/^\/server_notification\/vnf_instances\/:vnfInstanceId/, `/server_notification/vnf_instances/${ids.inst}`)
    .replace(/^\/v1\.0\/vims\/:id/, `/v1.0/vims/${ids.vim}`)
    .replace(/^\/vnfpkgm\/v([12])\/onboarded_vnf_packages\/:id/, (_m, v) => `/vnfpkgm/v${v}/onboarded_vnf_packages/${ids.vnfdId}`)
    .replace(/^\/vnfpkgm\/v1\/vnf_packages\/:id/, `/vnfpkgm/v1/vnf_packages/${ids.pkg}`);
  return p.replace(/:[A-Za-z]+/g, 'x').replace(/\*/g, 'x');
}

/** A body the route would accept, so that a refusal is the credential's doing. */
function bodyOf(method: string, url: string, ids: Ids): string | undefined {
  if (method === 'GET' || method === 'HEAD' || method === 'DELETE') return undefined;
  if (/^\/vnflcm\/v[12]\/vnf_instances$/.test(url)) return JSON.stringify({ vnfdId: ids.vnfdId });
  if (/^\/vnflcm\/v[12]\/subscriptions$/.test(url)) return JSON.stringify({ callbackUri: 'http://127.0.0.1:9/refused' });
  if (url === '/vnfm/v1/oauth2/clients') return JSON.stringify({ name: 'refused', role: 'reader' });
  if (url.startsWith('/v1.0/vims')) return JSON.stringify({ vim: { name: 'refused', type: 'openstack', auth_url: 'http://127.0.0.1:5000/v3', auth_cred: { username: 'u', password: 'p' }, vim_project: { name: 'p' } } });
  if (url.startsWith('/server_notification/')) return JSON.stringify({ notification: { alarm_id: 'a', fault_id: '1234', fault_type: '10' } });
  return '{}';
}

const TABLES = ['vnf_package', 'vim', 'vnf_instance', 'op_occ', 'subscription', 'outbox', 'oauth_client', 'oauth_token', 'fault_notification', 'autoheal_batch'];

async function counts(vnfm: TestVnfm): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const t of TABLES) out[t] = Number((await sql<{ n: string }>`select count(*) as n from ${sql.table(t)}`.execute(vnfm.store.db)).rows[0]?.n);
  return out;
}

interface Mode {
  name: string;
  config: () => Promise<ConfigInput>;
  /** Credentials of each principal once the VNFM runs. */
  creds: (vnfm: TestVnfm) => Promise<Record<Exclude<Who, 'none'>, Cred>>;
  /** Over HTTPS (mTLS) instead of app.inject. */
  https?: boolean;
  /** /metrics and /docs need authentication in this mode. */
  closedMetrics?: boolean;
  /** The built-in OAuth 2.0 routes (`POST /token`, clients) exist in this mode. */
  oauthRoutes?: boolean;
  cleanup?: () => Promise<void>;
}

const bearer = (t: string): Cred => ({ headers: { authorization: `Bearer ${t}` } });
const xAuth = (t: string): Cred => ({ headers: { 'x-auth-token': t } });

let keystone: FakeKeystone | undefined;
let introspection: IntrospectionServer | undefined;

/** A small RFC 7662 authorization server: `POST /introspect` (client authenticated by Basic) answers from `tokens`. */
class IntrospectionServer {
  readonly tokens = new Map<string, Record<string, unknown>>();
  calls = 0;
  refusedClients = 0;
  private server: Server | undefined;
  constructor(
    private readonly clientId: string,
    private readonly clientSecret: string,
  ) {}

  async start(): Promise<string> {
    this.server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        const want = `Basic ${Buffer.from(`${this.clientId}:${this.clientSecret}`).toString('base64')}`;
        if (req.method !== 'POST' || req.url !== '/introspect' || req.headers.authorization !== want || !String(req.headers['content-type']).startsWith('application/x-www-form-urlencoded')) {
          this.refusedClients++;
          res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"invalid_client"}');
          return;
        }
        this.calls++;
        const token = new URLSearchParams(body).get('token') ?? '';
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(this.tokens.get(token) ?? { active: false }));
      });
    });
    await new Promise<void>((resolve) => (this.server as Server).listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/introspect`;
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
let pki: TestPki | undefined;
let pkiCerts: Record<string, KeyCert> = {};

const MODES: Mode[] = [
  {
    name: 'token',
    config: async () => ({
      apiAuth: 'token',
      apiTokens: [
        { token: 'tok-admin-1f9e', name: 'admin', role: 'admin' },
        { token: 'tok-operator-a-77c1', name: 'op-a', project: 'proj-a', role: 'operator' },
        { token: 'tok-reader-a-0b2d', name: 'rd-a', project: 'proj-a', role: 'reader' },
        { token: 'tok-operator-b-5e3a', name: 'op-b', project: 'proj-b', role: 'operator' },
      ],
    }),
    creds: async () => ({
      admin: xAuth('tok-admin-1f9e'),
      operatorA: bearer('tok-operator-a-77c1'),
      readerA: xAuth('tok-reader-a-0b2d'),
      operatorB: bearer('tok-operator-b-5e3a'),
      wrong: xAuth('tok-admin-1f9f'),
      // static tokens do not expire: a token removed from the configuration is the nearest thing
      expired: bearer('tok-retired-9999'),
    }),
  },
  {
    name: 'oauth2',
    closedMetrics: true,
    oauthRoutes: true,
    config: async () => ({ apiAuth: 'oauth2', auth: { metrics: 'authenticated', docs: 'authenticated', oauth2: { scopeMap: { 'vnflcm:write': 'operator' } } } }),
    creds: async (vnfm) => {
      const svc = new OAuthService(vnfm.store.db, vnfm.ctx.config.auth.oauth2);
      const token = async (c: { clientId: string; clientSecret: string }, how: 'basic' | 'post', scope?: string) => {
        const form = new URLSearchParams({ grant_type: 'client_credentials', ...(scope ? { scope } : {}), ...(how === 'post' ? { client_id: c.clientId, client_secret: c.clientSecret } : {}) });
        const r = await vnfm.app.inject({
          method: 'POST',
          url: '/token',
          headers: { 'content-type': 'application/x-www-form-urlencoded', ...(how === 'basic' ? { authorization: `Basic ${Buffer.from(`${c.clientId}:${c.clientSecret}`).toString('base64')}` } : {}) },
          payload: form.toString(),
        });
        assert.equal(r.statusCode, 200, r.body);
        assert.equal(r.headers['cache-control'], 'no-store');
        const b = r.json() as { access_token: string; token_type: string; expires_in: number };
        assert.equal(b.token_type, 'Bearer');
        assert.equal(b.expires_in, 3600);
        return b.access_token;
      };
      const admin = await svc.register({ name: 'nfvo-admin', role: 'admin' });
      const opA = await svc.register({ name: 'nfvo-a', role: 'operator', project: 'proj-a' });
      const opB = await svc.register({ name: 'nfvo-b', role: 'operator', project: 'proj-b' });
      const expiredToken = 'vnfmat_expired-token-of-the-admin-client-000000000';
      await vnfm.store.db.insertInto('oauth_token').values({ token_hash: credentialHash(expiredToken), client_id: admin.clientId, role: 'admin', scope: 'admin', cnf_x5t: null, expires_at: new Date(Date.now() - 60_000) }).execute();
      return {
        admin: bearer(await token(admin, 'basic')),
        operatorA: bearer(await token(opA, 'post', 'vnflcm:write')),
        // the operator client asking only for the reader scope gets a reader token
        readerA: bearer(await token(opA, 'basic', 'reader')),
        operatorB: bearer(await token(opB, 'basic')),
        wrong: bearer('vnfmat_forged-token-nobody-issued-0000000000000000000'),
        expired: bearer(expiredToken),
      };
    },
  },
  {
    // an external authorization server: a real HTTP server answering RFC 7662 introspection
    name: 'oauth2-introspection',
    oauthRoutes: true,
    config: async () => {
      introspection = new IntrospectionServer('vnfm-rs', 'rs-secret-6a0f');
      const endpoint = await introspection.start();
      return { apiAuth: 'oauth2', auth: { oauth2: { scopeMap: { 'vnflcm:write': 'operator' }, introspection: { endpoint, clientId: 'vnfm-rs', clientSecret: 'rs-secret-6a0f' } } } };
    },
    creds: async () => {
      const s = introspection as IntrospectionServer;
      const exp = Math.floor(Date.now() / 1000) + 3600;
      s.tokens.set('at-admin-31c7', { active: true, sub: 'u-admin', client_id: 'nfvo-admin', scope: 'admin', exp });
      s.tokens.set('at-op-a-8d02', { active: true, sub: 'u-op-a', client_id: 'nfvo-a', scope: 'vnflcm:write', project: 'proj-a', exp });
      s.tokens.set('at-rd-a-4b9e', { active: true, sub: 'u-rd-a', client_id: 'viewer-a', scope: 'reader', project: 'proj-a', exp });
      s.tokens.set('at-op-b-c615', { active: true, sub: 'u-op-b', client_id: 'nfvo-b', scope: 'operator', project: 'proj-b', exp });
      // the server still calls it active, but its exp has passed: the VNFM refuses it
      s.tokens.set('at-expired-77aa', { active: true, sub: 'u-old', client_id: 'nfvo-admin', scope: 'admin', exp: Math.floor(Date.now() / 1000) - 60 });
      s.tokens.set('at-revoked-1e1e', { active: false });
      return { admin: bearer('at-admin-31c7'), operatorA: bearer('at-op-a-8d02'), readerA: xAuth('at-rd-a-4b9e'), operatorB: bearer('at-op-b-c615'), wrong: bearer('at-revoked-1e1e'), expired: bearer('at-expired-77aa') };
    },
    cleanup: async () => {
      const s = introspection as IntrospectionServer;
      // the VNFM authenticated itself to the server and asked about tokens
      assert.ok(s.calls > 0 && s.refusedClients === 0, `introspection calls ${s.calls}, refused ${s.refusedClients}`);
      await s.close();
    },
  },
  {
    name: 'keystone',
    config: async () => {
      keystone = new FakeKeystone({ username: 'vnfm-svc', password: 'svc-pass-4d1c' });
      const url = await keystone.start();
      return { apiAuth: 'keystone', auth: { keystone: { authUrl: url, username: 'vnfm-svc', password: 'svc-pass-4d1c', projectName: 'service' } } };
    },
    creds: async () => {
      const k = keystone as FakeKeystone;
      k.tokens.set('ks-admin', { id: 'u-admin', name: 'admin', project: 'proj-admin', roles: ['admin', 'member', 'reader'] });
      k.tokens.set('ks-op-a', { id: 'u-op-a', name: 'alice', project: 'proj-a', roles: ['member', 'reader'] });
      k.tokens.set('ks-rd-a', { id: 'u-rd-a', name: 'rita', project: 'proj-a', roles: ['reader'] });
      k.tokens.set('ks-op-b', { id: 'u-op-b', name: 'bob', project: 'proj-b', roles: ['member'] });
      k.tokens.set('ks-expired', { id: 'u-old', name: 'old', project: 'proj-a', roles: ['admin'], expiresAt: new Date(Date.now() - 1000).toISOString() });
      return { admin: xAuth('ks-admin'), operatorA: xAuth('ks-op-a'), readerA: xAuth('ks-rd-a'), operatorB: xAuth('ks-op-b'), wrong: xAuth('ks-forged'), expired: xAuth('ks-expired') };
    },
    cleanup: async () => keystone?.close(),
  },
  {
    name: 'mtls',
    https: true,
    config: async () => {
      pki = new TestPki();
      const other = pki.selfSigned('other-ca', 'Some Other CA');
      pkiCerts = {
        admin: pki.issue('c-admin', 'vnfm-admin'),
        operatorA: pki.issue('c-op-a', 'nfvo-a'),
        readerA: pki.issue('c-rd-a', 'viewer-a'),
        operatorB: pki.issue('c-op-b', 'nfvo-b'),
        wrong: pki.issue('c-wrong', 'vnfm-admin', other),
        expired: pki.expired('c-expired', 'vnfm-admin'),
      };
      return {
        apiAuth: 'mtls',
        auth: {
          mtls: {
            certFile: pki.server.certFile,
            keyFile: pki.server.keyFile,
            caFile: pki.ca.certFile,
            clients: [
              { subjectCn: 'vnfm-admin', name: 'admin', role: 'admin' },
              { subjectCn: 'nfvo-a', name: 'nfvo-a', project: 'proj-a', role: 'operator' },
              { subjectCn: 'viewer-a', name: 'viewer-a', project: 'proj-a', role: 'reader' },
              { subjectCn: 'nfvo-b', name: 'nfvo-b', project: 'proj-b', role: 'operator' },
            ],
          },
        },
      };
    },
    creds: async () => Object.fromEntries(Object.entries(pkiCerts).map(([k, v]) => [k, { client: v }])) as Record<Exclude<Who, 'none'>, Cred>,
    cleanup: async () => pki?.close(),
  },
];

for (const mode of MODES) {
  describe(`route table under apiAuth ${mode.name}`, () => {
    let vnfm: TestVnfm;
    let creds: Record<Exclude<Who, 'none'>, Cred>;
    let ids: Ids;
    const fake = new FakeDriver();

    const send = async (method: string, path: string, who: Who, body?: string): Promise<Answer> => {
      const c: Cred = who === 'none' ? {} : creds[who];
      const headers: Record<string, string> = { version: '2.0.0', ...(c.headers ?? {}), ...(body !== undefined ? { 'content-type': 'application/json' } : {}) };
      if (mode.https) {
        const r = await httpsCall(vnfm.url, { method, path, ca: (pki as TestPki).ca.cert, ...(c.client ? { client: c.client } : {}), headers, ...(body !== undefined ? { body } : {}) });
        return { statusCode: r.statusCode, headers: r.headers, body: r.body };
      }
      const r = await vnfm.app.inject({ method: method as 'GET', url: path, headers, ...(body !== undefined ? { payload: body } : {}) });
      return { statusCode: r.statusCode, headers: r.headers, body: r.body };
    };
    const ok = async (method: string, path: string, who: Who, body?: unknown, status = [200, 201, 202, 204]) => {
      const r = await send(method, path, who, body === undefined ? undefined : JSON.stringify(body));
      assert.ok(status.includes(r.statusCode), `${method} ${path} as ${who}: ${r.statusCode} ${r.body}`);
      return r;
    };

    before(async () => {
      vnfm = await testVnfm({
        listen: Boolean(mode.https),
        plugins: [(ctx) => ctx.engine?.drivers.register(fake)],
        // every route is called with wrong credentials from one address: the per-address failure
        // limit (test/security/auth-failures.test.ts) is off so each gets its 401
        config: await mode.config().then((c) => ({ ...c, auth: { ...(c as { auth?: object }).auth, failureLimit: { burst: 0, perMinute: 60, maxClients: 10_000 } }, notifications: { testCallback: false }, runner: { pollMs: 20 } }) as ConfigInput),
      });
      creds = await mode.creds(vnfm);
      // project A's VNF package and VIM, created by A's operator (they belong to project A)
      const c = await ok('POST', '/vnfpkgm/v1/vnf_packages', 'operatorA', {});
      const pkg = JSON.parse(c.body).id as string;
      const zip = csarOf(join(ROOT, 'samples/vm-basic'));
      const up = mode.https
        ? await httpsCall(vnfm.url, { method: 'PUT', path: `/vnfpkgm/v1/vnf_packages/${pkg}/package_content`, ca: (pki as TestPki).ca.cert, client: creds.operatorA.client as KeyCert, headers: { 'content-type': 'application/zip' }, body: zip as unknown as string })
        : await vnfm.app.inject({ method: 'PUT', url: `/vnfpkgm/v1/vnf_packages/${pkg}/package_content`, headers: { ...(creds.operatorA.headers ?? {}), 'content-type': 'application/zip' }, payload: zip });
      assert.equal(up.statusCode, 202);
      await vnfm.ctx.packages.idle();
      const shown = JSON.parse((await ok('GET', `/vnfpkgm/v1/vnf_packages/${pkg}`, 'readerA')).body) as { vnfdId: string; onboardingState: string };
      assert.equal(shown.onboardingState, 'ONBOARDED');
      const vim = JSON.parse((await ok('POST', '/v1.0/vims', 'operatorA', { vim: { name: 'vim-a', type: 'openstack', auth_url: 'http://127.0.0.1:5000/v3', auth_cred: { username: 'u', password: 'vim-pass-91ab' }, vim_project: { name: 'p' } } })).body).vim.id as string;
      // project A's resources, created by A's operator
      const sub1 = JSON.parse((await ok('POST', '/vnflcm/v1/subscriptions', 'operatorA', { callbackUri: 'http://127.0.0.1:9/a1' })).body).id as string;
      const sub2 = JSON.parse((await ok('POST', '/vnflcm/v2/subscriptions', 'operatorA', { callbackUri: 'http://127.0.0.1:9/a2' })).body).id as string;
      const inst = JSON.parse((await ok('POST', '/vnflcm/v2/vnf_instances', 'operatorA', { vnfdId: shown.vnfdId, vimConnectionInfo: { vim1: FAKE_VIM } })).body).id as string;
      const started = await ok('POST', `/vnflcm/v2/vnf_instances/${inst}/instantiate`, 'operatorA', { flavourId: 'simple' });
      const op = String(started.headers.location).split('/').pop() as string;
      await until('instantiate completed', async () => JSON.parse((await send('GET', `/vnflcm/v2/vnf_lcm_op_occs/${op}`, 'operatorA')).body).operationState === 'COMPLETED', 60_000, 50);
      const outbox = (await vnfm.store.db.selectFrom('outbox').select('id').where('subscription_id', '=', sub2).orderBy('id').executeTakeFirstOrThrow()).id;
      await sql`insert into autoheal_batch (id, vnf_instance_id, status, deadline) values ('batch-a', ${inst}, 'done', now())`.execute(vnfm.store.db);
      await sql`insert into fault_notification (id, vnf_instance_id, server_id, alarm_id, fault_id, fault_type, status) values ('fault-a', ${inst}, 'srv', 'alarm', '1234', '10', 'ignored')`.execute(vnfm.store.db);
      await sql`insert into vnfc_health (id, vnf_instance_id, project, vnfc_info_id, vnfc_resource_info_id, vdu_id, resource_id, condition, source, since, observed_at)
        values (${`${inst}/rid-a`}, ${inst}, 'proj-a', 'vnfc-a', 'rid-a', 'VDU1', 'srv', 'healthy', 'vim-watch', now(), now())`.execute(vnfm.store.db);
      const client = await new OAuthService(vnfm.store.db, vnfm.ctx.config.auth.oauth2).register({ name: 'spare', role: 'reader' });
      ids = { pkg, vnfdId: shown.vnfdId, vim, inst, op, sub1, sub2, outbox: String(outbox), batch: 'batch-a', fault: 'fault-a', client: client.clientId };
      // every project resource of A carries project A (set at creation or inherited from the instance)
      for (const t of ['vnf_package', 'vim', 'vnf_instance', 'op_occ', 'subscription', 'autoheal_batch', 'fault_notification', 'vnfc_health']) {
        const rows = (await sql<{ project: string | null }>`select project from ${sql.table(t)}`.execute(vnfm.store.db)).rows;
        assert.ok(rows.length > 0 && rows.every((r) => r.project === 'proj-a'), `${t}: ${JSON.stringify(rows)}`);
      }
    });
    after(async () => {
      await vnfm?.close();
      await mode.cleanup?.();
    });

    it('the route table is complete: every route is reached and none is left unguarded', async () => {
      const routes = registeredRoutes(vnfm.app);
      assert.ok(routes.length >= 75, `only ${routes.length} routes registered`);
      const oauth = mode.oauthRoutes ? ['POST /token', 'POST /vnfm/v1/oauth2/clients', 'DELETE /vnfm/v1/oauth2/clients/:id'] : [];
      if (!mode.oauthRoutes) assert.ok(!routes.some((r) => r.url === '/token'), 'the token endpoint exists only with apiAuth oauth2');
      for (const must of [...oauth, 'POST /vnflcm/v2/vnf_instances/:id/heal', 'POST /server_notification/vnf_instances/:vnfInstanceId/servers/:serverId/notify', 'POST /vnfm/v1/heal_batches/:id/release']) {
        assert.ok(routes.some((r) => `${r.method} ${r.url}` === must), `${must} is registered`);
      }
    });

    it('no, wrong and expired credentials: 401 with WWW-Authenticate; wrong role: 403; other project: 404 or filtered; nothing stored', async () => {
      const before = await counts(vnfm);
      let checked = 0;
      for (const r of registeredRoutes(vnfm.app)) {
        const n = need(r.method, r.url);
        const path = pathOf(r.url, ids);
        const body = bodyOf(r.method, r.url, ids);
        const what = `${r.method} ${r.url} (${path})`;
        const isMetrics = r.url === '/metrics' || r.url === '/docs' || r.url.startsWith('/docs/');
        if (n === 'open' && !(isMetrics && mode.closedMetrics)) {
          const a = await send(r.method, path, 'none', body);
          assert.ok(a.statusCode !== 401 && a.statusCode !== 403, `${what} is open: ${a.statusCode}`);
          continue;
        }
        for (const who of ['none', 'wrong', 'expired'] as const) {
          const a = await send(r.method, path, who, body);
          assert.equal(a.statusCode, 401, `${what} as ${who}: ${a.statusCode} ${a.body}`);
          assert.ok(a.headers['www-authenticate'], `${what} as ${who}: WWW-Authenticate`);
          if (r.method !== 'HEAD') assert.equal(JSON.parse(a.body).status, 401, `${what}: ProblemDetails`);
        }
        if (n === 'operator' || n === 'admin') {
          const who = n === 'operator' ? 'readerA' : 'operatorA';
          const a = await send(r.method, path, who, body);
          assert.equal(a.statusCode, 403, `${what} as ${who}: ${a.statusCode} ${a.body}`);
          if (r.method !== 'HEAD') assert.match(JSON.parse(a.body).detail, new RegExp(`role ${n} is required`), what);
        }
        if (n !== 'admin' && TENANT_ROUTE.test(r.url)) {
          const a = await send(r.method, path, 'operatorB', body);
          assert.equal(a.statusCode, 404, `${what} as another project: ${a.statusCode} ${a.body}`);
        }
        if (r.method === 'GET' && TENANT_LIST.test(r.url)) {
          const a = await send(r.method, path, 'operatorB');
          assert.equal(a.statusCode, 200, `${what} as another project: ${a.body}`);
          for (const id of [ids.inst, ids.op, ids.sub1, ids.sub2, ids.batch, ids.fault, ids.pkg, ids.vim]) assert.ok(!a.body.includes(id), `${what} as another project lists ${id}`);
          const own = await send(r.method, path, 'readerA');
          assert.equal(own.statusCode, 200);
          assert.ok(rowsOf(own.body).length > 0, `${what}: project A sees its rows`);
        }
        checked++;
      }
      assert.ok(checked >= 70, `${checked} guarded routes checked`);
      assert.deepEqual(await counts(vnfm), before, 'refused requests stored nothing');
    });

    it('the right caller passes authentication, authorization and the tenant check on every route', async () => {
      // an admin sees every project (before the sweep below deletes what it may)
      const all = await send('GET', '/vnflcm/v2/vnf_instances', 'admin');
      assert.ok(all.body.includes(ids.inst), 'an admin lists project A instances');
      assert.equal((await send('GET', `/vnflcm/v1/vnf_lcm_op_occs/${ids.op}`, 'admin')).statusCode, 200);
      const routes = [...registeredRoutes(vnfm.app)].sort((a, b) => Number(a.method === 'DELETE') - Number(b.method === 'DELETE'));
      const deleted = new Set<string>();
      for (const r of routes) {
        const n = need(r.method, r.url);
        const path = pathOf(r.url, ids);
        const who: Who = n === 'admin' ? 'admin' : 'operatorA';
        const a = await send(r.method, path, who, bodyOf(r.method, r.url, ids));
        assert.ok(a.statusCode !== 401 && a.statusCode !== 403, `${r.method} ${r.url} as ${who}: ${a.statusCode} ${a.body}`);
        const id = (path.startsWith('/v1.0/') ? path.split('/')[3] : path.split('/')[4]) ?? '';
        // (a resource deleted through one facade is gone from the other: that 404 is its own)
        if (TENANT_ROUTE.test(r.url) && !deleted.has(id)) assert.notEqual(a.statusCode, 404, `${r.method} ${path} as its own project: ${a.body}`);
        if (r.method === 'DELETE' && a.statusCode === 204) deleted.add(id);
      }
    });
  });
}

describe('route table under apiAuth none (loopback)', () => {
  let vnfm: TestVnfm;
  before(async () => {
    vnfm = await testVnfm({ config: { notifications: { testCallback: false } } });
  });
  after(async () => vnfm?.close());

  it('every route answers without a credential (an admin of every project); none asks for one', async () => {
    const routes = registeredRoutes(vnfm.app).filter((r) => r.method !== 'DELETE');
    assert.ok(routes.length >= 60);
    for (const r of routes) {
      const path = r.url.replace(/:[A-Za-z]+/g, 'x').replace(/\*/g, 'x');
      const a = await vnfm.app.inject({ method: r.method as 'GET', url: path, headers: { version: '2.0.0', ...(r.method === 'GET' || r.method === 'HEAD' ? {} : { 'content-type': 'application/json' }) }, ...(r.method === 'GET' || r.method === 'HEAD' ? {} : { payload: '{}' }) });
      assert.ok(a.statusCode !== 401 && a.statusCode !== 403, `${r.method} ${r.url}: ${a.statusCode} ${a.body}`);
      assert.equal(a.headers['www-authenticate'], undefined);
    }
  });
});
