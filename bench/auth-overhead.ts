/**
 * What API authentication adds to a request, per mode, with a warm cache (target: p50 < 1 ms).
 * One in-process VNFM per mode answers `GET /vnflcm/v1/api_versions` (no database work) through
 * `app.inject`; the overhead of a mode is its p50 minus the p50 of mode `none` on the same route.
 * Modes: `token` (static), `oauth2` (built-in tokens, cached after the first lookup),
 * `oauth2-introspection` (an external server, cached), `keystone` (a fake Keystone on loopback,
 * cached). Also the tenant check of a non-admin caller on a route naming an instance
 * (`GET /vnflcm/v2/vnf_instances/:id`, one indexed query) against an admin (no check).
 * mTLS is not measured here: its per-request work is reading the verified peer certificate of the
 * connection, the TLS handshake is the connection's cost, not the request's.
 *
 *   npx tsx bench/auth-overhead.ts [--requests 3000]
 *
 * Prints one JSON object (microseconds); the numbers depend on the machine's load, which is included.
 */
import { createServer } from 'node:http';
import { cpus, loadavg } from 'node:os';
import { type ConfigInput, resolveConfig } from '../src/config.ts';
import { OAuthService } from '../src/api/auth/oauth2.ts';
import { createLogger } from '../src/logger.ts';
import { type Vnfm, startVnfm } from '../src/main/server.ts';

const arg = (name: string, def: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : def;
};
const REQUESTS = arg('requests', 3000);

async function vnfmWith(config: ConfigInput): Promise<Vnfm> {
  const c = resolveConfig({ flags: { sim: false, dataDir: 'memory://', logLevel: 'silent', sync: { intervalMs: 0 }, ...config } as ConfigInput });
  return startVnfm(c, { logger: createLogger('silent'), noListen: true, without: ['sync', 'autoheal'] });
}

async function p50(v: Vnfm, url: string, headers: Record<string, string>): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < REQUESTS + 200; i++) {
    const t0 = process.hrtime.bigint();
    const r = await v.app.inject({ method: 'GET', url, headers: { version: '2.0.0', ...headers } });
    const dt = Number(process.hrtime.bigint() - t0) / 1000;
    if (r.statusCode !== 200) throw new Error(`${url}: ${r.statusCode} ${r.body}`);
    if (i >= 200) times.push(dt); // the first 200 warm the caches and the JIT
  }
  times.sort((a, b) => a - b);
  return Math.round(times[Math.floor(times.length / 2)] as number);
}

/** A fake Keystone and introspection endpoint on loopback. */
function idp(): Promise<{ url: string; close(): void }> {
  const s = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      if (req.url === '/v3/auth/tokens' && req.method === 'POST') return res.writeHead(201, { 'x-subject-token': 'svc', 'content-type': 'application/json' }).end('{"token":{}}');
      if (req.url === '/v3/auth/tokens') return res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ token: { expires_at: new Date(Date.now() + 3_600_000).toISOString(), user: { id: 'u', name: 'u' }, project: { id: 'p' }, roles: [{ name: 'admin' }] } }));
      if (req.url === '/introspect') return res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ active: true, scope: 'admin', sub: 'x', exp: Math.floor(Date.now() / 1000) + 3600 }));
      res.writeHead(404).end();
    });
  });
  return new Promise((r) => s.listen(0, '127.0.0.1', () => r({ url: `http://127.0.0.1:${(s.address() as { port: number }).port}`, close: () => s.close() })));
}

const ROUTE = '/vnflcm/v1/api_versions';
const out: Record<string, unknown> = { requests: REQUESTS, cpus: cpus().length, loadavg: loadavg().map((x) => Math.round(x * 100) / 100), unit: 'us' };
const p = await idp();
const results: Record<string, number> = {};

const none = await vnfmWith({});
results.none = await p50(none, ROUTE, {});
await none.close();

const token = await vnfmWith({ apiAuth: 'token', apiTokens: [{ token: 'bench-admin', role: 'admin' }, { token: 'bench-op', role: 'operator', project: 'p1' }] });
results.token = await p50(token, ROUTE, { 'x-auth-token': 'bench-admin' });
{
  // tenant check: an instance row of project p1; admin (no check) vs the project's operator (one query)
  const id = '00000000-0000-4000-8000-000000000001';
  await token.ctx.store.db
    .insertInto('vnf_package')
    .values({ id: 'p', onboarding_state: 'ONBOARDED', operational_state: 'ENABLED', usage_state: 'IN_USE', vnfd_id: 'd', vnf_provider: null, vnf_product_name: null, vnf_software_version: null, vnfd_version: null, checksum: 'null', user_defined_data: '{}', vnfd: 'null', onboarding_error: null, content: null })
    .execute();
  await token.ctx.store.db
    .insertInto('vnf_instance')
    .values({ id, vnfd_id: 'd', vnf_pkg_id: 'p', vnf_provider: '', vnf_product_name: '', vnf_software_version: '', vnfd_version: '', instantiation_state: 'NOT_INSTANTIATED', vnf_configurable_properties: 'null', vim_connection_info: '{}', vim_secrets: null, instantiated_vnf_info: 'null', metadata: 'null', extensions: 'null', created_api: 'v2', rev: 0, vnf_instance_name: null, vnf_instance_description: null, project: 'p1' })
    .execute();
  results.showAsAdmin = await p50(token, `/vnflcm/v2/vnf_instances/${id}`, { 'x-auth-token': 'bench-admin' });
  results.showAsProjectOperator = await p50(token, `/vnflcm/v2/vnf_instances/${id}`, { 'x-auth-token': 'bench-op' });
}
await token.close();

const oauth = await vnfmWith({ apiAuth: 'oauth2' });
{
  const c = await new OAuthService(oauth.ctx.store.db, oauth.ctx.config.auth.oauth2).register({ name: 'bench', role: 'admin' });
  const t = await oauth.app.inject({ method: 'POST', url: '/token', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: `grant_type=client_credentials&client_id=${c.clientId}&client_secret=${c.clientSecret}` });
  results.oauth2 = await p50(oauth, ROUTE, { authorization: `Bearer ${t.json().access_token}` });
}
await oauth.close();

const intro = await vnfmWith({ apiAuth: 'oauth2', auth: { oauth2: { introspection: { endpoint: `${p.url}/introspect`, clientId: 'a', clientSecret: 'b' } } } });
results['oauth2-introspection'] = await p50(intro, ROUTE, { authorization: 'Bearer external-token' });
await intro.close();

const ks = await vnfmWith({ apiAuth: 'keystone', auth: { keystone: { authUrl: `${p.url}/v3`, username: 'svc', password: 'x', projectName: 'service' } } });
results.keystone = await p50(ks, ROUTE, { 'x-auth-token': 'keystone-token' });
await ks.close();
p.close();

out.p50 = results;
out.overheadP50 = Object.fromEntries(['token', 'oauth2', 'oauth2-introspection', 'keystone'].map((m) => [m, (results[m] as number) - (results.none as number)]));
out.tenantCheckP50 = (results.showAsProjectOperator as number) - (results.showAsAdmin as number);
out.targetMet = Object.values(out.overheadP50 as Record<string, number>).every((us) => us < 1000);
console.log(JSON.stringify(out, null, 2));
