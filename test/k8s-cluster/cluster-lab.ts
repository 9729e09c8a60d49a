/**
 * Helpers of the cluster-VNF lab scenarios (kubeadm and Kubespray): the VNFM API through
 * `app.inject`, LCM requests run to their end, the lab's own Kubernetes API (its CA and token from
 * the lab's files), the simulated cloud's admin calls, and reading the instance.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { join } from 'node:path';
import type { TestVnfm } from '../helpers/app.ts';

// biome-ignore lint/suspicious/noExplicitAny: API bodies are free-form JSON here
export type Json = any;

const V2 = { version: '2.0.0' };

/** The lab as the VNFM's context shows it. */
export function labInfo(vnfm: TestVnfm): { labDir: string; kubernetesUrl: string; serviceHosts?: { lb: string; ansible: string } } {
  const info = (vnfm.ctx as { simCloud?: { lab?: { labDir: string; kubernetesUrl: string; serviceHosts?: { lb: string; ansible: string } } } }).simCloud?.lab;
  assert.ok(info, 'the lab runs');
  return info;
}

/** The VNFM's API (v2) and its LCM requests run to their end (`settleMs`: a bound that only fails the test). */
export function vnfmApi(vnfm: () => TestVnfm, settleMs: number) {
  const call = async (method: 'GET' | 'POST' | 'DELETE', url: string, payload?: unknown) => {
    const r = await vnfm().app.inject({ method, url, headers: V2, ...(payload !== undefined ? { payload: payload as object } : {}) });
    return { status: r.statusCode, body: r.body ? (JSON.parse(r.body) as Json) : undefined, location: r.headers.location as string | undefined };
  };
  const settle = () => vnfm().ctx.engine?.runner.idle(settleMs);
  /** Runs an LCM request to its end; returns the final op occ. */
  const lcm = async (url: string, payload: unknown): Promise<Json> => {
    const r = await call('POST', url, payload);
    assert.equal(r.status, 202, JSON.stringify(r.body));
    const opId = String(r.location).split('/').pop();
    await settle();
    return (await call('GET', `/vnflcm/v2/vnf_lcm_op_occs/${opId}`)).body;
  };
  const instance = async (id: string): Promise<Json> => (await call('GET', `/vnflcm/v2/vnf_instances/${id}`)).body;
  /** The cluster's nodes as the driver recorded them (metadata.k8sCluster.nodes). */
  const clusterNodes = async (id: string): Promise<Record<string, Json>> => (await instance(id)).instantiatedVnfInfo.metadata.k8sCluster.nodes;
  /** A call to the simulated cloud's admin API. */
  const simAdmin = async (path: string, body?: unknown) => {
    const url = (vnfm().ctx as { simCloud?: { openstackUrl: string } }).simCloud?.openstackUrl;
    const r = await fetch(`${url}${path}`, { method: 'POST', headers: { 'x-sim-admin-secret': 'sim-admin-secret', 'content-type': 'application/json' }, body: JSON.stringify(body ?? {}) });
    assert.ok(r.status < 300, `${path}: ${r.status} ${await r.text()}`);
  };
  return { call, settle, lcm, instance, clusterNodes, simAdmin };
}

/**
 * The lab's Kubernetes API: a request, and the Ready state of every Node. `lab`: where the lab
 * keeps its files and where its Kubernetes listens (an in-process VNFM's {@link labInfo}, or what
 * a VNFM child process logged).
 */
export function labKubernetes(lab: () => { labDir: string; kubernetesUrl: string }) {
  const req = (method: string, path: string, body?: unknown): Promise<{ status: number; body: Json }> => {
    const info = lab();
    const creds = JSON.parse(readFileSync(join(info.labDir, 'credentials.json'), 'utf8')) as { kubernetesToken: string };
    const ca = readFileSync(join(info.labDir, 'kubernetes-ca.pem'), 'utf8');
    return new Promise((resolve, reject) => {
      const r = httpsRequest(`${info.kubernetesUrl}${path}`, { method, ca, headers: { authorization: `Bearer ${creds.kubernetesToken}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) } }, (res) => {
        let text = '';
        res.on('data', (d) => {
          text += d;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : undefined }));
      });
      r.on('error', reject);
      r.end(body === undefined ? undefined : JSON.stringify(body));
    });
  };
  const nodes = async (): Promise<Record<string, boolean>> => {
    const list = (await req('GET', '/api/v1/nodes')).body;
    return Object.fromEntries((list.items as Json[]).map((n) => [n.metadata.name, (n.status?.conditions ?? []).some((c: Json) => c.type === 'Ready' && c.status === 'True')]));
  };
  return { req, nodes };
}

/** The server (VIM resource) of a VNFC of the instance. */
export function serverOf(inst: Json, vnfcInfoId: string): string {
  const info = inst.instantiatedVnfInfo;
  const v = info.vnfcInfo.find((x: Json) => x.id === vnfcInfoId);
  return info.vnfcResourceInfo.find((r: Json) => r.id === v.vnfcResourceInfoId).computeResource.resourceId;
}

/** `sudo etcdctl` against a master's local member, with the healthcheck client certificate. */
export const ETCDCTL = 'sudo ETCDCTL_API=3 etcdctl --endpoints https://127.0.0.1:2379 --cacert /etc/kubernetes/pki/etcd/ca.crt --cert /etc/kubernetes/pki/etcd/healthcheck-client.crt --key /etc/kubernetes/pki/etcd/healthcheck-client.key';

/** What a kubeadm master shows over SSH (`ssh` runs a command on a host as the lab user). */
export function masterReads(ssh: (ip: string, cmd: string) => Promise<{ code: number; stdout: string; stderr: string }>) {
  /** etcd members as a surviving master sees them: name -> learner?. */
  const etcdMembers = async (ip: string): Promise<Record<string, boolean>> => {
    const r = await ssh(ip, `${ETCDCTL} member list -w json`);
    assert.equal(r.code, 0, r.stderr);
    return Object.fromEntries((JSON.parse(r.stdout).members as Json[]).map((m) => [m.name, m.isLearner === true]));
  };
  /** The masters a master's HAProxy configuration file lists. */
  const haproxyServers = async (ip: string): Promise<string[]> => {
    const r = await ssh(ip, 'cat /etc/haproxy/haproxy.cfg');
    return [...r.stdout.matchAll(/^\s*server\s+(master\d+)\s/gm)].map((m) => m[1] as string).sort();
  };
  return { etcdMembers, haproxyServers };
}
