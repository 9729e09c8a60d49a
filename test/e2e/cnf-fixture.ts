/**
 * Scenario fixture for CNF tests: a listening VNFM (with the drift sync endpoint) and a simulated
 * Kubernetes cluster, wired the way an operator would: the cluster registered through
 * `POST /v1.0/vims`, the sample CNF package onboarded through the package API, instances driven
 * through the LCM API over HTTP. A subscription row makes the VNFM write its notifications to the
 * outbox, where the tests read them.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { KubeClient, type KubeObject } from '../../src/infra/kubernetes/index.ts';
import { INSTANCE_LABEL } from '../../src/infra/kubernetes/manifests.ts';
import type { SyncOptions } from '../../src/lcm/sync.ts';
import { type KubernetesSim, startKubernetesSim } from '../../src/sim/kubernetes/index.ts';
import type { Store } from '../../src/store/db.ts';
import { type TestVnfm, testVnfm } from '../helpers/app.ts';
import { type Reply, vnfmRequest } from '../helpers/http.ts';
import { csarOf, ROOT } from '../helpers/packages.ts';

/** Body of an API answer (parsed JSON; `{}` when empty). */
// biome-ignore lint/suspicious/noExplicitAny: API bodies are free-form JSON read by assertions
export type Json = Record<string, any>;

/** One HTTP answer. */
export type { Reply } from '../helpers/http.ts';

/** The deploy files of the sample CNF (samples/README.md). */
export const DEF_FILES = ['Files/kubernetes/pod.yaml', 'Files/kubernetes/replicaset.yaml', 'Files/kubernetes/deployment.yaml', 'Files/kubernetes/daemonset.yaml', 'Files/kubernetes/statefulset.yaml'];

/** The VDUs of the sample CNF and their workload kinds. */
export const VDU_KINDS = { VDU1: 'Pod', VDU2: 'ReplicaSet', VDU3: 'Deployment', VDU4: 'DaemonSet', VDU5: 'StatefulSet' } as const;

/** A running scenario. */
export interface CnfEnv {
  vnfm: TestVnfm;
  sim: KubernetesSim;
  /** A client of the simulated cluster for assertions (not the VNFM's). */
  kube: KubeClient;
  vimId: string;
  vnfdId: string;
  /** HTTP call to the VNFM (JSON body; `Version: 2.0.0` on /vnflcm/v2). */
  api(method: string, path: string, body?: unknown): Promise<Reply>;
  /** A `/_sim` control call to the cluster. */
  simControl(method: string, path: string, body?: unknown): Promise<Json>;
  close(): Promise<void>;
}

/**
 * Starts the cluster and the VNFM, registers the VIM and onboards the sample CNF. `store`: the
 * database to use (the caller closes it); a fresh PGlite database otherwise.
 */
export async function startCnfEnv(opts: { kubeletDelayMs?: number; sync?: Partial<SyncOptions>; store?: Store; config?: Record<string, unknown> } = {}): Promise<CnfEnv> {
  const sim = await startKubernetesSim({ kubeletDelayMs: opts.kubeletDelayMs ?? 50 });
  let vnfm: TestVnfm | undefined;
  try {
    vnfm = await testVnfm({
      listen: true,
      ...(opts.store ? { store: opts.store } : {}),
      config: { ...(opts.config ?? {}), runner: { pollMs: 100 }, vim: { kubernetesWaitMs: 30_000 }, sync: { intervalMs: 0, settleAttempts: 10, settleDelayMs: 200, ...(opts.sync ?? {}) } } as never,
    });
    const v = vnfm;
    const api = (method: string, path: string, body?: unknown): Promise<Reply> => vnfmRequest(v.url, method, path, body);
    const simControl = async (method: string, path: string, body?: unknown): Promise<Json> => {
      const res = await fetch(`${sim.httpUrl}/_sim/${path}`, {
        method,
        headers: { authorization: `Bearer ${sim.token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const out = (await res.json()) as Json;
      if (!res.ok) throw new Error(`sim control ${method} ${path}: ${res.status} ${JSON.stringify(out)}`);
      return out;
    };

    // The cluster as the default Kubernetes VIM, the way `openstack vim register` does it.
    const reg = await api('POST', '/v1.0/vims', {
      vim: { name: 'sim-k8s', type: 'kubernetes', auth_url: sim.url, auth_cred: { bearer_token: sim.token, ssl_ca_cert: sim.caCert }, vim_project: { name: 'default' }, is_default: true },
    });
    assert.equal(reg.status, 201, reg.text);
    const vimId = reg.body.vim.id as string;

    // The sample CNF package through the package API.
    const pkg = await api('POST', '/vnfpkgm/v1/vnf_packages', {});
    assert.equal(pkg.status, 201, pkg.text);
    const up = await api('PUT', `/vnfpkgm/v1/vnf_packages/${pkg.body.id}/package_content`, csarOf(join(ROOT, 'samples/cnf-all-kinds')));
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
      .values({ id: 'cnf-e2e-sub', api_version: 'v2', callback_uri: 'http://127.0.0.1:9/cb', filter: JSON.stringify(null), verbosity: 'FULL', auth_types: '[]', auth_secret: null, dedupe_key: 'cnf-e2e' })
      .execute();

    const kube = KubeClient.fromVim({ vimType: 'ETSINFV.KUBERNETES.V_1', interfaceInfo: { endpoint: sim.url, ssl_ca_cert: sim.caCert }, accessInfo: { bearer_token: sim.token } }, { attempts: 1 });
    return {
      vnfm: v,
      sim,
      kube,
      vimId,
      vnfdId,
      api,
      simControl,
      async close() {
        await v.close();
        await sim.close();
      },
    };
  } catch (e) {
    await vnfm?.close();
    await sim.close();
    throw e;
  }
}

/** Creates an instance (v1 or v2) and returns its id. */
export async function createInstance(env: CnfEnv, v: 'v1' | 'v2', name: string): Promise<string> {
  const r = await env.api('POST', `/vnflcm/${v}/vnf_instances`, { vnfdId: env.vnfdId, vnfInstanceName: name });
  assert.equal(r.status, 201, r.text);
  return r.body.id as string;
}

/** The op occ id of a 202 answer (from its Location header). */
export function opIdOf(r: Reply): string {
  assert.equal(r.status, 202, r.text);
  assert.equal(r.text, '', '202 answers have no body');
  const loc = r.headers.get('location') ?? '';
  const m = /\/vnf_lcm_op_occs\/([^/]+)$/.exec(loc);
  assert.ok(m, `Location header: ${loc}`);
  return m[1] as string;
}

const FINAL = ['COMPLETED', 'FAILED_TEMP', 'FAILED', 'ROLLED_BACK'];

/** Polls the op occ until it reaches a final (or FAILED_TEMP) state; asserts `want` when given. */
export async function waitOp(env: CnfEnv, opId: string, want?: string, v: 'v1' | 'v2' = 'v2', timeoutMs = 40_000): Promise<Json> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const r = await env.api('GET', `/vnflcm/${v}/vnf_lcm_op_occs/${opId}`);
    assert.equal(r.status, 200, r.text);
    if (FINAL.includes(r.body.operationState as string)) {
      if (want !== undefined) assert.equal(r.body.operationState, want, `op ${opId}: ${JSON.stringify(r.body.error ?? null)}`);
      return r.body;
    }
    if (Date.now() > end) assert.fail(`op ${opId} still ${r.body.operationState} after ${timeoutMs} ms`);
    await sleep(40);
  }
}

/** Instantiates the sample CNF into `namespace` (created first) and waits for COMPLETED. */
export async function instantiate(env: CnfEnv, id: string, namespace: string, v: 'v1' | 'v2' = 'v2'): Promise<Json> {
  await env.kube.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } });
  const body: Json = { flavourId: 'simple', additionalParams: { 'lcm-kubernetes-def-files': DEF_FILES, namespace } };
  if (v === 'v2') body.vimConnectionInfo = { vim1: { vimId: env.vimId, vimType: 'kubernetes' } };
  const opId = opIdOf(await env.api('POST', `/vnflcm/${v}/vnf_instances/${id}/instantiate`, body));
  return waitOp(env, opId, 'COMPLETED', v);
}

/** GET of an instance. */
export async function getInstance(env: CnfEnv, id: string, v: 'v1' | 'v2' = 'v2'): Promise<Json> {
  const r = await env.api('GET', `/vnflcm/${v}/vnf_instances/${id}`);
  assert.equal(r.status, 200, r.text);
  return r.body;
}

/** The instance's pods in the cluster (any state), by name. */
export async function podsOf(env: CnfEnv, namespace: string, instanceId: string): Promise<KubeObject[]> {
  const l = await env.kube.list('v1', 'Pod', namespace, { labelSelector: `${INSTANCE_LABEL}=${instanceId}` });
  return l.items.sort((a, b) => (a.metadata.name ?? '').localeCompare(b.metadata.name ?? ''));
}

/** The PersistentVolumeClaims of a namespace: name -> uid. */
export async function claimsOf(env: CnfEnv, namespace: string): Promise<Map<string, string>> {
  const l = await env.kube.list('v1', 'PersistentVolumeClaim', namespace);
  return new Map(l.items.map((c) => [c.metadata.name ?? '', c.metadata.uid ?? '']));
}

/** The notifications the VNFM wrote for one op occ, as `operationState/notificationStatus`. */
export async function notificationsOf(env: CnfEnv, opId: string): Promise<string[]> {
  const rows = await env.vnfm.store.db.selectFrom('outbox').select(['id', 'notification']).orderBy('id').execute();
  return rows
    .map((r) => r.notification as Json)
    .filter((n) => n.vnfLcmOpOccId === opId)
    .map((n) => `${n.operationState}/${n.notificationStatus}`);
}

/** The vnfcInfo of a VDU and its vnfcResourceInfo, from a v2 instance body. */
export function vnfcsOf(inst: Json, vduId: string): { info: Json; res: Json }[] {
  const info = inst.instantiatedVnfInfo;
  return (info.vnfcInfo as Json[])
    .filter((c) => c.vduId === vduId)
    .map((c) => ({ info: c, res: (info.vnfcResourceInfo as Json[]).find((r) => r.id === c.vnfcResourceInfoId) as Json }));
}

/** Waits until `check` returns a value (not undefined), polling the cluster every 40 ms. */
export async function until<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}`);
    await sleep(40);
  }
}

/** True when the pod is Running, Ready and not being deleted. */
export function isReady(p: KubeObject): boolean {
  const conds = (p.status?.conditions ?? []) as { type?: string; status?: string }[];
  return !p.metadata.deletionTimestamp && p.status?.phase === 'Running' && conds.some((c) => c.type === 'Ready' && c.status === 'True');
}
