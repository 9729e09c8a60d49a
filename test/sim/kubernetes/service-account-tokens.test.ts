/**
 * Service-account tokens and client-registered Nodes in the simulated cluster: a
 * `kubernetes.io/service-account-token` Secret annotated with its ServiceAccount gets `data.token`
 * and `data.ca.crt` (also when the account comes later, and instead of a forged token), the token
 * is a bearer token of the Kubernetes API (not of `/_sim`) until the Secret or the account is
 * deleted, and survives a restart from saved state. A cluster started with zero nodes accepts Node
 * create/delete by clients, with the status they post (as kubelets register themselves).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { type KubernetesSim, startKubernetesSim } from '../../../src/sim/kubernetes/index.ts';
import { simFetch, waitFor } from './sim-test-helpers.ts';

// biome-ignore lint/suspicious/noExplicitAny: tests inspect arbitrary Kubernetes JSON
type Obj = any;

const SA_TOKEN = 'kubernetes.io/service-account-token';

/** GET/POST/DELETE over plain HTTP with a given bearer token. */
async function withToken(sim: KubernetesSim, token: string, method: string, path: string): Promise<number> {
  const res = await fetch(`${sim.httpUrl}${path}`, { method, headers: { authorization: `Bearer ${token}` } });
  await res.text();
  return res.status;
}

async function ok(sim: KubernetesSim, method: string, path: string, body?: unknown, expect = method === 'POST' ? 201 : 200): Promise<Obj> {
  const r = await simFetch(sim, method, path, body);
  assert.equal(r.status, expect, `${method} ${path}: ${r.text}`);
  return r.body;
}

function tokenSecret(name: string, sa: string, data?: Record<string, string>): Obj {
  return { apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace: 'kube-system', annotations: { 'kubernetes.io/service-account.name': sa } }, type: SA_TOKEN, ...(data ? { data } : {}) };
}

/** The decoded token once the controller filled the Secret. */
async function filledToken(sim: KubernetesSim, name: string): Promise<string> {
  return waitFor(`token of secret ${name}`, async () => {
    const r = await simFetch(sim, 'GET', `/api/v1/namespaces/kube-system/secrets/${name}`);
    const t = r.body?.data?.token;
    return typeof t === 'string' && t !== '' ? Buffer.from(t, 'base64').toString('utf8') : undefined;
  });
}

describe('simulated Kubernetes: service-account tokens', () => {
  let sim: KubernetesSim;

  before(async () => {
    sim = await startKubernetesSim({ nodes: 0, kubeletDelayMs: 10 });
  });
  after(async () => {
    await sim?.close();
  });

  it('fills data.token, data.ca.crt and data.namespace of a token Secret of an existing ServiceAccount; the token is a bearer token until the Secret is deleted', async () => {
    await ok(sim, 'POST', '/api/v1/namespaces/kube-system/serviceaccounts', { metadata: { name: 'admin' } });
    const crb = await ok(sim, 'POST', '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: 'admin' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
      subjects: [{ kind: 'ServiceAccount', name: 'admin', namespace: 'kube-system' }],
    });
    assert.equal(crb.roleRef.name, 'cluster-admin');
    await ok(sim, 'POST', '/api/v1/namespaces/kube-system/secrets', tokenSecret('admin-token', 'admin'));

    const token = await filledToken(sim, 'admin-token');
    assert.equal(token.split('.').length, 3, 'a JWT');
    const claims = JSON.parse(Buffer.from(token.split('.')[1] as string, 'base64url').toString('utf8'));
    assert.equal(claims.sub, 'system:serviceaccount:kube-system:admin');
    const secret = await ok(sim, 'GET', '/api/v1/namespaces/kube-system/secrets/admin-token');
    assert.equal(Buffer.from(secret.data['ca.crt'], 'base64').toString('utf8'), sim.caCert);
    assert.equal(Buffer.from(secret.data.namespace, 'base64').toString('utf8'), 'kube-system');
    const sa = await ok(sim, 'GET', '/api/v1/namespaces/kube-system/serviceaccounts/admin');
    assert.equal(secret.metadata.annotations['kubernetes.io/service-account.uid'], sa.metadata.uid);

    assert.equal(await withToken(sim, token, 'GET', '/api/v1/nodes'), 200);
    assert.equal(await withToken(sim, token, 'GET', '/_sim/state'), 401, 'the /_sim control API takes the admin token only');
    assert.equal(await withToken(sim, `${token}x`, 'GET', '/api/v1/nodes'), 401);
    assert.equal(await withToken(sim, 'not-a-token', 'GET', '/api/v1/nodes'), 401);

    // also over HTTPS with client-node, as a registered Kubernetes VIM would use it
    const kc = new k8s.KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'c', server: sim.url, caData: Buffer.from(sim.caCert).toString('base64') }],
      users: [{ name: 'u', token }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
    const ns = await kc.makeApiClient(k8s.CoreV1Api).listNamespace();
    assert.ok(ns.items.some((n) => n.metadata?.name === 'kube-system'));

    await ok(sim, 'DELETE', '/api/v1/namespaces/kube-system/secrets/admin-token');
    assert.equal(await withToken(sim, token, 'GET', '/api/v1/nodes'), 401, 'revoked with its Secret');
    // a Secret created again under the same name gets a new token; the old one stays revoked
    await ok(sim, 'POST', '/api/v1/namespaces/kube-system/secrets', tokenSecret('admin-token', 'admin'));
    const again = await filledToken(sim, 'admin-token');
    assert.notEqual(again, token);
    assert.equal(await withToken(sim, again, 'GET', '/api/v1/nodes'), 200);
    assert.equal(await withToken(sim, token, 'GET', '/api/v1/nodes'), 401);
  });

  it('fills a Secret created before its ServiceAccount once the account exists, and replaces a forged token', async () => {
    await ok(sim, 'POST', '/api/v1/namespaces/kube-system/secrets', tokenSecret('late-token', 'late'));
    const forged = `${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from(JSON.stringify({ 'kubernetes.io/serviceaccount/namespace': 'kube-system', 'kubernetes.io/serviceaccount/secret.name': 'forged-token' })).toString('base64url')}.x`;
    await ok(sim, 'POST', '/api/v1/namespaces/kube-system/secrets', tokenSecret('forged-token', 'late', { token: Buffer.from(forged).toString('base64') }));
    // no account yet: nothing filled, the forged token is refused
    const before = await ok(sim, 'GET', '/api/v1/namespaces/kube-system/secrets/late-token');
    assert.equal(before.data?.token, undefined);
    assert.equal(await withToken(sim, forged, 'GET', '/api/v1/nodes'), 401);

    await ok(sim, 'POST', '/api/v1/namespaces/kube-system/serviceaccounts', { metadata: { name: 'late' } });
    const late = await filledToken(sim, 'late-token');
    const replaced = await waitFor('forged token replaced', async () => {
      const t = await filledToken(sim, 'forged-token');
      return t !== forged ? t : undefined;
    });
    assert.equal(await withToken(sim, late, 'GET', '/api/v1/namespaces'), 200);
    assert.equal(await withToken(sim, replaced, 'GET', '/api/v1/namespaces'), 200);

    // deleting the account deletes its token Secrets, which revokes the tokens
    await ok(sim, 'DELETE', '/api/v1/namespaces/kube-system/serviceaccounts/late');
    await waitFor('token secrets of the deleted account gone', async () => (await simFetch(sim, 'GET', '/api/v1/namespaces/kube-system/secrets/late-token')).status === 404 && (await simFetch(sim, 'GET', '/api/v1/namespaces/kube-system/secrets/forged-token')).status === 404);
    assert.equal(await withToken(sim, late, 'GET', '/api/v1/namespaces'), 401);
  });

  it('leaves other Secrets alone (Opaque, and a token Secret without the account annotation)', async () => {
    await ok(sim, 'POST', '/api/v1/namespaces/kube-system/serviceaccounts', { metadata: { name: 'other' } });
    await ok(sim, 'POST', '/api/v1/namespaces/kube-system/secrets', { metadata: { name: 'plain', annotations: { 'kubernetes.io/service-account.name': 'other' } }, stringData: { a: 'b' } });
    await ok(sim, 'POST', '/api/v1/namespaces/kube-system/secrets', { metadata: { name: 'unbound' }, type: SA_TOKEN });
    await ok(sim, 'POST', '/api/v1/namespaces/kube-system/secrets', tokenSecret('bound', 'other'));
    await filledToken(sim, 'bound'); // the controller has worked through its queue past the two others
    const plain = await ok(sim, 'GET', '/api/v1/namespaces/kube-system/secrets/plain');
    assert.deepEqual(Object.keys(plain.data), ['a']);
    const unbound = await ok(sim, 'GET', '/api/v1/namespaces/kube-system/secrets/unbound');
    assert.equal(unbound.data?.token, undefined);
  });
});

describe('simulated Kubernetes: a cluster without nodes', () => {
  let sim: KubernetesSim;

  before(async () => {
    sim = await startKubernetesSim({ nodes: 0, kubeletDelayMs: 10 });
  });
  after(async () => {
    await sim?.close();
  });

  it('starts with zero nodes and keeps the Nodes clients create (with their status) until they delete them', async () => {
    assert.deepEqual((await ok(sim, 'GET', '/api/v1/nodes')).items, []);
    const node = {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: 'master11', labels: { 'node-role.kubernetes.io/control-plane': '' } },
      status: { conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady' }], addresses: [{ type: 'InternalIP', address: '10.0.0.11' }] },
    };
    const created = await ok(sim, 'POST', '/api/v1/nodes', node);
    assert.equal(created.status.conditions[0].status, 'True');
    const listed = await ok(sim, 'GET', '/api/v1/nodes');
    assert.deepEqual(
      listed.items.map((n: Obj) => [n.metadata.name, n.status.addresses[0].address]),
      [['master11', '10.0.0.11']],
    );
    const state = await ok(sim, 'GET', '/_sim/state?pods=false');
    assert.deepEqual(state.nodes.map((n: Obj) => [n.name, n.ready]), [['master11', true]]);
    // a Deployment's pods run on a client-registered node
    await ok(sim, 'POST', '/apis/apps/v1/namespaces/default/deployments', {
      metadata: { name: 'web' },
      spec: { replicas: 1, selector: { matchLabels: { app: 'web' } }, template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'c', image: 'nginx' }] } } },
    });
    await waitFor('pod running on master11', async () => {
      const pods = await ok(sim, 'GET', '/api/v1/namespaces/default/pods');
      return pods.items.some((p: Obj) => p.spec.nodeName === 'master11' && p.status?.phase === 'Running');
    });
    await ok(sim, 'DELETE', '/api/v1/nodes/master11');
    assert.equal((await simFetch(sim, 'GET', '/api/v1/nodes/master11')).status, 404);
    await ok(sim, 'POST', '/api/v1/nodes', node);
    assert.equal((await ok(sim, 'GET', '/api/v1/nodes')).items.length, 1);
  });
});

describe('simulated Kubernetes: service-account tokens across a restart', () => {
  const dir = mkdtempSync(join(tmpdir(), 'k8s-sim-sa-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('a token issued before a restart from saved state is still accepted', async () => {
    const first = await startKubernetesSim({ nodes: 0, stateDir: dir, token: 'restart-admin' });
    let token: string;
    try {
      await ok(first, 'POST', '/api/v1/namespaces/kube-system/serviceaccounts', { metadata: { name: 'admin' } });
      await ok(first, 'POST', '/api/v1/namespaces/kube-system/secrets', tokenSecret('admin-token', 'admin'));
      token = await filledToken(first, 'admin-token');
    } finally {
      await first.close();
    }
    const second = await startKubernetesSim({ nodes: 0, stateDir: dir, token: 'restart-admin' });
    try {
      assert.ok(second.restored);
      assert.equal(await withToken(second, token, 'GET', '/api/v1/nodes'), 200);
      assert.equal(await filledToken(second, 'admin-token'), token, 'not re-issued');
    } finally {
      await second.close();
    }
  });
});
