import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type OpenStackSim, startOpenStackSim } from '../../../src/sim/openstack/index.ts';
import { call, login } from './helpers.ts';

describe('OpenStack sim: Keystone v3', () => {
  let sim: OpenStackSim;

  before(async () => {
    sim = await startOpenStackSim({
      port: 0,
      vnfmUrl: 'http://vnfm.example:9890/',
      users: [
        { name: 'admin', password: 'pw-admin', projects: ['admin', 'tenant-b'] },
        { name: 'alice', password: 'pw-alice', domain: 'Corp', projects: ['proj-a'], roles: ['member'] },
      ],
    });
  });
  after(async () => {
    await sim.close();
  });

  it('issues a project-scoped token with catalog, roles and expiry', async () => {
    const r = await call('POST', `${sim.authUrl}/auth/tokens`, undefined, {
      auth: {
        identity: { methods: ['password'], password: { user: { name: 'admin', domain: { name: 'Default' }, password: 'pw-admin' } } },
        scope: { project: { name: 'admin', domain: { name: 'Default' } } },
      },
    });
    assert.equal(r.status, 201);
    const token = r.headers.get('x-subject-token');
    assert.ok(token && token.length > 20);
    const t = r.body.token;
    assert.equal(t.user.name, 'admin');
    assert.equal(t.user.domain.id, 'default');
    assert.equal(t.project.name, 'admin');
    assert.match(t.project.id, /^[0-9a-f]{32}$/);
    assert.ok(t.roles.some((x: { name: string }) => x.name === 'admin'));
    assert.ok(Date.parse(t.expires_at) > Date.now() + 3600_000);
    const types = t.catalog.map((s: { type: string }) => s.type).sort();
    assert.deepEqual(types, ['compute', 'identity', 'network', 'nfv-orchestration', 'orchestration']);
    const url = (type: string): string =>
      t.catalog.find((s: { type: string }) => s.type === type).endpoints.find((e: { interface: string }) => e.interface === 'public').url;
    assert.equal(url('orchestration'), `${sim.url}/v1/${t.project.id}`);
    assert.equal(url('compute'), `${sim.url}/v2.1`);
    assert.equal(url('identity'), `${sim.url}/v3`);
    assert.equal(url('nfv-orchestration'), 'http://vnfm.example:9890/');
    assert.equal(t.catalog[0].endpoints[0].region_id, 'RegionOne');
  });

  it('scopes by project id and by another domain', async () => {
    const s = await login(sim);
    const byId = await call('POST', `${sim.authUrl}/auth/tokens`, undefined, {
      auth: {
        identity: { methods: ['password'], password: { user: { name: 'admin', domain: { id: 'default' }, password: 'pw-admin' } } },
        scope: { project: { id: s.projectId } },
      },
    });
    assert.equal(byId.status, 201);
    assert.equal(byId.body.token.project.id, s.projectId);
    const alice = await call('POST', `${sim.authUrl}/auth/tokens`, undefined, {
      auth: {
        identity: { methods: ['password'], password: { user: { name: 'alice', domain: { name: 'Corp' }, password: 'pw-alice' } } },
        scope: { project: { name: 'proj-a', domain: { name: 'Corp' } } },
      },
    });
    assert.equal(alice.status, 201);
    assert.deepEqual(
      alice.body.token.roles.map((x: { name: string }) => x.name),
      ['member'],
    );
  });

  it('answers 401 on bad credentials or a project without grants', async () => {
    const bad = await call('POST', `${sim.authUrl}/auth/tokens`, undefined, {
      auth: {
        identity: { methods: ['password'], password: { user: { name: 'admin', domain: { name: 'Default' }, password: 'wrong' } } },
        scope: { project: { name: 'admin', domain: { name: 'Default' } } },
      },
    });
    assert.equal(bad.status, 401);
    assert.equal(bad.body.error.code, 401);
    assert.equal(bad.headers.get('x-subject-token'), null);
    const noGrant = await call('POST', `${sim.authUrl}/auth/tokens`, undefined, {
      auth: {
        identity: { methods: ['password'], password: { user: { name: 'alice', domain: { name: 'Corp' }, password: 'pw-alice' } } },
        scope: { project: { name: 'admin', domain: { name: 'Default' } } },
      },
    });
    assert.equal(noGrant.status, 401);
  });

  it('validates tokens (200 / 404) and revokes them', async () => {
    const s = await login(sim);
    const other = await login(sim);
    const ok = await call('GET', `${sim.authUrl}/auth/tokens`, s.token, undefined, { 'X-Subject-Token': other.token });
    assert.equal(ok.status, 200);
    assert.equal(ok.body.token.project.id, other.projectId);
    const unknown = await call('GET', `${sim.authUrl}/auth/tokens`, s.token, undefined, { 'X-Subject-Token': 'gAAAAAnope' });
    assert.equal(unknown.status, 404);
    const noCaller = await call('GET', `${sim.authUrl}/auth/tokens`, undefined, undefined, { 'X-Subject-Token': other.token });
    assert.equal(noCaller.status, 401);
    const del = await call('DELETE', `${sim.authUrl}/auth/tokens`, s.token, undefined, { 'X-Subject-Token': other.token });
    assert.equal(del.status, 204);
    const gone = await call('GET', `${sim.authUrl}/auth/tokens`, s.token, undefined, { 'X-Subject-Token': other.token });
    assert.equal(gone.status, 404);
    assert.equal((await call('GET', `${other.heat}/stacks`, other.token)).status, 401);
  });

  it('serves the version document and requires a token on Heat and Nova', async () => {
    const v = await call('GET', `${sim.url}/v3`);
    assert.equal(v.status, 200);
    assert.equal(v.body.version.id, 'v3.14');
    assert.equal(v.body.version.status, 'stable');
    const root = await call('GET', `${sim.url}/`);
    assert.equal(root.status, 300);
    const s = await login(sim);
    assert.equal((await call('GET', `${s.heat}/stacks`)).status, 401);
    assert.equal((await call('GET', `${s.heat}/stacks`, 'not-a-token')).status, 401);
    assert.equal((await call('GET', `${s.nova}/servers`)).status, 401);
    assert.equal((await call('GET', `${s.heat}/stacks`, s.token)).status, 200);
    assert.equal((await call('GET', `${s.nova}/servers`, s.token)).status, 200);
    // A token scoped to another project cannot use this project's Heat URL.
    const b = await call('POST', `${sim.authUrl}/auth/tokens`, undefined, {
      auth: {
        identity: { methods: ['password'], password: { user: { name: 'admin', domain: { name: 'Default' }, password: 'pw-admin' } } },
        scope: { project: { name: 'tenant-b', domain: { name: 'Default' } } },
      },
    });
    assert.equal((await call('GET', `${s.heat}/stacks`, b.headers.get('x-subject-token') as string)).status, 403);
  });

  it('expires tokens after the configured TTL', async () => {
    const short = await startOpenStackSim({ tokenTtlSeconds: 0.2 });
    try {
      const c = short.credentials;
      const issued = await call('POST', `${short.authUrl}/auth/tokens`, undefined, {
        auth: {
          identity: { methods: ['password'], password: { user: { name: c.username, domain: { name: c.userDomain }, password: c.password } } },
          scope: { project: { name: c.project, domain: { name: c.projectDomain } } },
        },
      });
      assert.equal(issued.status, 201);
      const token = issued.headers.get('x-subject-token') as string;
      const expiresAt = Date.parse(issued.body.token.expires_at);
      assert.equal(expiresAt - Date.parse(issued.body.token.issued_at), 200, 'expires_at = issued_at + TTL');
      // The token's own expiry time is the sync point (not a guessed pause).
      while (Date.now() <= expiresAt) await new Promise((r) => setTimeout(r, expiresAt - Date.now() + 1));
      const heat = `${short.url}/v1/${c.projectId}/stacks`;
      assert.equal((await call('GET', heat, token)).status, 401, 'expired');
      // With a long TTL (changed at run time) a new token works, and finds the expired one unknown.
      const cfg = await call('PUT', `${short.url}/_sim/config`, undefined, { tokenTtlSeconds: 3600 }, { 'X-Sim-Admin-Secret': short.adminSecret });
      assert.equal(cfg.status, 200);
      const fresh = await login(short);
      assert.equal((await call('GET', `${fresh.heat}/stacks`, fresh.token)).status, 200);
      const check = await call('GET', `${short.authUrl}/auth/tokens`, fresh.token, undefined, { 'X-Subject-Token': token });
      assert.equal(check.status, 404);
    } finally {
      await short.close();
    }
  });

  it('moves the nfv-orchestration endpoint at run time', async () => {
    sim.setVnfmUrl('http://127.0.0.1:12345/');
    const s = await login(sim);
    const vnfm = s.catalog.find((x: { type: string }) => x.type === 'nfv-orchestration');
    assert.equal(vnfm.endpoints[0].url, 'http://127.0.0.1:12345/');
  });
});
