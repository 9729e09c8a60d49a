/**
 * Glue of the k8s-kubeadm driver tests: a fake cluster of VMs, the driver wired to it, the
 * context world, helpers to run hooks and to check that no secret leaked anywhere visible.
 */
import assert from 'node:assert/strict';
import { KubeadmMgmtDriver } from '../../../src/mgmt/drivers/k8s-kubeadm/driver.ts';
import type { ClusterConnection } from '../../../src/mgmt/drivers/k8s-common/kube.ts';
import type { HealCommand, LcmCommand } from '../../../src/model/lcm-command.ts';
import type { VnfInstanceRecord } from '../../../src/model/vnf-instance.ts';
import type { HookName, MgmtResult, MgmtTarget } from '../../../src/mgmt/mgmt-driver.ts';
import { CtxWorld, FakeVims, makeCtx } from './fake-ctx.ts';
import { FakeCluster } from './fake-cluster.ts';
import { instanceOf, instantiateParams, MASTER_PW, type VmSpec, WORKER_PW } from './fixtures.ts';

export interface Harness {
  cluster: FakeCluster;
  world: CtxWorld;
  driver: KubeadmMgmtDriver;
  conns: ClusterConnection[];
  inst: VnfInstanceRecord;
  params: Record<string, unknown>;
  masters: VmSpec[];
  workers: VmSpec[];
  errors: unknown[];
  results: MgmtResult[];
  run(hook: HookName, command: LcmCommand, o?: { instance?: VnfInstanceRecord; previousInstance?: VnfInstanceRecord; targets?: MgmtTarget[]; params?: Record<string, unknown>; opId?: string }): Promise<MgmtResult | undefined>;
  /** Instantiates the cluster (instantiate_end) and returns the result. */
  instantiate(): Promise<MgmtResult | undefined>;
}

export const m = (n: number, gen = 1): VmSpec => ({ id: `m${n}`, ip: `10.0.0.${n}`, resourceId: `srv-m${n}-g${gen}` });
export const w = (n: number, gen = 1): VmSpec => ({ id: `w${n}`, ip: `10.0.0.${n}`, resourceId: `srv-w${n}-g${gen}` });

export function harness(masters: VmSpec[], workers: VmSpec[], o: { ha?: boolean } = {}): Harness {
  const ha = o.ha ?? masters.length > 1;
  const clusterIp = ha ? '10.0.0.100' : (masters[0] as VmSpec).ip;
  const cluster = new FakeCluster(clusterIp, ha);
  for (const v of [...masters, ...workers]) cluster.addVm(v.ip);
  const world = new CtxWorld(new FakeVims('inst-1'));
  const conns: ClusterConnection[] = [];
  const driver = new KubeadmMgmtDriver({
    connect: cluster.connect,
    kubeApi: (c) => {
      conns.push(c);
      return cluster.kube;
    },
    clock: cluster.clock,
  });
  const inst = instanceOf(masters, workers, ha ? clusterIp : undefined);
  const params = instantiateParams({ ha });
  const h: Harness = {
    cluster,
    world,
    driver,
    conns,
    inst,
    params,
    masters,
    workers,
    errors: [],
    results: [],
    async run(hook, command, x = {}) {
      const ctx = makeCtx(world, {
        hook,
        command,
        instance: x.instance ?? h.inst,
        ...(x.previousInstance ? { previousInstance: x.previousInstance } : {}),
        targets: x.targets ?? [],
        params: x.params ?? (command as { additionalParams?: Record<string, unknown> }).additionalParams ?? {},
        instantiateParams: params,
        ...(x.opId ? { opId: x.opId } : {}),
      });
      try {
        const r = await driver.run(ctx);
        if (r) h.results.push(r);
        return r;
      } catch (e) {
        h.errors.push(e);
        throw e;
      }
    },
    async instantiate() {
      return h.run('instantiate_end', { operation: 'INSTANTIATE', flavourId: 'simple', additionalParams: params }, { opId: 'op-inst' });
    },
  };
  return h;
}

/** The instance after a heal of `vm`: same VNFC ids, a new server id. */
export function healedInstance(h: Harness, healed: VmSpec[], gen = 2): { instance: VnfInstanceRecord; specs: { masters: VmSpec[]; workers: VmSpec[] } } {
  const ids = new Set(healed.map((x) => x.id));
  const bump = (v: VmSpec) => (ids.has(v.id) ? { ...v, resourceId: v.resourceId.replace(/-g\d+$/, `-g${gen}`) } : v);
  const masters = h.masters.map(bump);
  const workers = h.workers.map(bump);
  return { instance: instanceOf(masters, workers, h.cluster.ha ? h.cluster.clusterIp : undefined), specs: { masters, workers } };
}

export function healTarget(v: VmSpec, role: 'masterNode' | 'workerNode', newResourceId?: string): MgmtTarget {
  return { vnfcInfoId: `vi-${v.id}`, vnfcResourceInfoId: v.id, vduId: role, change: 'heal', oldResourceId: v.resourceId, ...(newResourceId ? { newResourceId } : {}) };
}

export function healCommand(...ids: string[]): HealCommand {
  return { operation: 'HEAL', scope: 'vnfcs', vnfcInfoIds: ids, includeStorage: false, additionalParams: {} };
}

/** No password, join token, certificate key or admin token in any command line, progress, log, op state, result or error. */
export function assertNoSecrets(h: Harness): void {
  const secrets = [MASTER_PW, WORKER_PW, h.cluster.kube.adminToken, ...h.cluster.joinTokens, ...h.cluster.certKeys, 'bootstrap-admin-credential'];
  const places: [string, string][] = [
    ['command lines', h.cluster.commands.map((c) => c.cmd).join('\n')],
    ['progress', JSON.stringify(h.world.progress)],
    ['logs', h.world.logs.join('\n')],
    ['op state', JSON.stringify([...h.world.opState.values()])],
    ['step journal', JSON.stringify([...h.world.journals.values()].map((j) => [...j.entries()]))],
    ['results', JSON.stringify(h.results.map((r) => ({ ...r, instantiateParams: undefined })))],
    ['errors', h.errors.map((e) => `${(e as Error).message} ${JSON.stringify((e as { extra?: unknown }).extra ?? {})}`).join('\n')],
  ];
  for (const [where, text] of places) {
    for (const s of secrets) assert.ok(!text.includes(s), `a secret (${s.slice(0, 4)}…) appears in the ${where}`);
  }
  // secret files given to the install script are private and gone
  for (const u of h.cluster.uploads.filter((x) => x.path.includes('.healvnfm-join'))) {
    assert.equal(u.mode, 0o600);
    assert.ok(!h.cluster.vms.get(u.host)?.files.has(u.path), `${u.path} left behind on ${u.host}`);
  }
}
