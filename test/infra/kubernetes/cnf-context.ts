/**
 * Test fixture for the Kubernetes driver: a simulated cluster, the parsed `samples/cnf-all-kinds`
 * package, and hand-built InfraContexts (instance record, vim connection, state + checkpoint), plus
 * a stand-in for the engine step that rebuilds instantiatedVnfInfo from `observe()`.
 */
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { defaultConfig } from '../../../src/config.ts';
import type { HealTarget, InfraContext, ObservedResources } from '../../../src/infra/infra-driver.ts';
import { KubeClient } from '../../../src/infra/kubernetes/kube-client.ts';
import { createLogger } from '../../../src/logger.ts';
import { commandOf } from '../../../src/model/lcm-command.ts';
import type { OpOccRecord } from '../../../src/model/op-occ.ts';
import type { VnfInstanceRecord } from '../../../src/model/vnf-instance.ts';
import { buildCsarFromDir, readCsar } from '../../../src/packages/csar-reader.ts';
import type { VnfPackageModel } from '../../../src/packages/vnfd-model.ts';
import { parseVnfPackage } from '../../../src/packages/vnfd-parser.ts';
import { vnfcCountAtLevel } from '../../../src/packages/vnfd-scaling.ts';
import { type KubernetesSim, startKubernetesSim } from '../../../src/sim/kubernetes/index.ts';
import type { VimConnection } from '../../../src/vims/vim-registry.ts';

/** Everything a driver test needs. */
export interface CnfFixture {
  sim: KubernetesSim;
  vnfd: VnfPackageModel;
  files: Map<string, Buffer>;
  vim: VimConnection;
  /** A client for assertions (not the driver's). */
  kube: KubeClient;
  logs: string[];
  close(): Promise<void>;
}

/** Starts the simulated cluster and loads the sample CNF package. */
export async function cnfFixture(opts: { kubeletDelayMs?: number } = {}): Promise<CnfFixture> {
  const sim = await startKubernetesSim({ kubeletDelayMs: opts.kubeletDelayMs ?? 100 });
  const files = await readCsar(buildCsarFromDir('samples/cnf-all-kinds'));
  const vnfd = parseVnfPackage(files);
  const vim: VimConnection = {
    vimId: 'vim-k8s',
    vimType: 'ETSINFV.KUBERNETES.V_1',
    interfaceInfo: { endpoint: sim.url, ssl_ca_cert: sim.caCert },
    accessInfo: { bearer_token: sim.token },
  };
  return {
    sim,
    vnfd,
    files,
    vim,
    kube: KubeClient.fromVim(vim, { attempts: 1 }),
    logs: [],
    close: () => sim.close(),
  };
}

/** A VNF instance record as the engine would hold it before instantiate. */
export function newInstance(vnfd: VnfPackageModel): VnfInstanceRecord {
  return {
    id: randomUUID(),
    vnfInstanceName: 'cnf',
    vnfInstanceDescription: null,
    vnfdId: vnfd.vnfdId,
    vnfPkgId: randomUUID(),
    vnfProvider: vnfd.vnfProvider,
    vnfProductName: vnfd.vnfProductName,
    vnfSoftwareVersion: vnfd.vnfSoftwareVersion,
    vnfdVersion: vnfd.vnfdVersion,
    instantiationState: 'NOT_INSTANTIATED',
    vnfConfigurableProperties: null,
    vimConnectionInfo: { vim1: { vimId: 'vim-k8s', vimType: 'ETSINFV.KUBERNETES.V_1' } },
    instantiatedVnfInfo: null,
    metadata: null,
    extensions: null,
    createdApi: 'v2',
    createdAt: new Date(),
    rev: 1,
  };
}

/** Builds an InfraContext; `state` is shared with the caller so a retry can reuse it. */
export function makeCtx(
  fx: CnfFixture,
  instance: VnfInstanceRecord,
  opts: {
    operation?: OpOccRecord['operation'];
    operationParams?: Record<string, unknown>;
    state?: Record<string, unknown>;
    scaleLevels?: Record<string, number>;
    levelId?: string;
    waitMs?: number;
    onCheckpoint?: (state: Record<string, unknown>) => void;
    /** The op's abort signal (lease lost, shutdown). */
    signal?: AbortSignal;
  } = {},
): InfraContext {
  const flavour = fx.vnfd.flavours.simple;
  if (!flavour) throw new Error('sample has no flavour simple');
  const config = defaultConfig();
  config.vim.kubernetesWaitMs = opts.waitMs ?? 20_000;
  const scaleLevels = opts.scaleLevels ?? { web_deploy_aspect: 1, db_aspect: 0 };
  const state = opts.state ?? {};
  const sink = new Writable({
    write(chunk, _enc, cb) {
      fx.logs.push(chunk.toString());
      cb();
    },
  });
  const opOcc: OpOccRecord = {
    id: randomUUID(),
    vnfInstanceId: instance.id,
    operation: opts.operation ?? 'INSTANTIATE',
    operationState: 'PROCESSING',
    stateEnteredTime: new Date(),
    startTime: new Date(),
    isAutomaticInvocation: false,
    isCancelPending: false,
    cancelMode: null,
    operationParams: opts.operationParams ?? {},
    error: null,
    resourceChanges: null,
    changedInfo: null,
    grantId: null,
    grantRequest: null,
    grant: null,
    ctx: {},
    pending: 'run',
    leaseOwner: null,
    leaseUntil: null,
    attempts: 1,
    stepAttempts: 0,
    nextAttemptAt: null,
    leaseEpoch: 1,
    apiVersion: 'v2',
    command: null,
    origin: null,
    createdAt: new Date(),
  };
  return {
    instance,
    op: { id: opOcc.id, operation: opOcc.operation },
    command: commandOf(opOcc),
    vnfd: fx.vnfd,
    flavour,
    vim: fx.vim,
    files: async () => fx.files,
    grant: null,
    grantRequest: null,
    state,
    checkpoint: async () => {
      // What the engine persists must survive JSON.
      JSON.parse(JSON.stringify(state));
      opts.onCheckpoint?.(state);
    },
    signal: opts.signal ?? new AbortController().signal,
    targetScaleLevels: scaleLevels,
    targetVduCounts: vnfcCountAtLevel(flavour, undefined, scaleLevels),
    log: createLogger('debug', sink),
    vimSettings: config.vim,
  };
}

/** What the engine does after a driver call: instantiatedVnfInfo rebuilt from observed resources. */
export function applyObserved(instance: VnfInstanceRecord, observed: ObservedResources, scaleLevels: Record<string, number>): void {
  instance.instantiationState = 'INSTANTIATED';
  instance.instantiatedVnfInfo = {
    flavourId: 'simple',
    vnfState: 'STARTED',
    scaleStatus: Object.entries(scaleLevels).map(([aspectId, scaleLevel]) => ({ aspectId, scaleLevel })),
    vnfcResourceInfo: observed.vnfcs.map((v) => ({
      id: v.stableKey ?? v.computeResource.resourceId,
      vduId: v.vduId,
      computeResource: { vimConnectionId: 'vim1', resourceId: v.computeResource.resourceId, vimLevelResourceType: v.computeResource.vimLevelResourceType },
      ...(v.zoneId === undefined ? {} : { zoneId: v.zoneId }),
      ...(v.storageResourceIds === undefined ? {} : { storageResourceIds: v.storageResourceIds }),
      ...(v.metadata === undefined ? {} : { metadata: v.metadata }),
    })),
    vnfcInfo: observed.vnfcs.map((v) => ({
      id: `${v.vduId}-${v.stableKey ?? v.computeResource.resourceId}`,
      vduId: v.vduId,
      vnfcResourceInfoId: v.stableKey ?? v.computeResource.resourceId,
      vnfcState: 'STARTED' as const,
    })),
    virtualStorageResourceInfo: observed.storages.map((s) => ({
      id: s.stableKey ?? s.resourceId,
      virtualStorageDescId: s.virtualStorageDescId,
      storageResource: { resourceId: s.resourceId, vimLevelResourceType: s.vimLevelResourceType },
      ...(s.metadata === undefined ? {} : { metadata: s.metadata }),
    })),
    ...(observed.metadata === undefined ? {} : { metadata: observed.metadata }),
  };
}

/** Calls a `/_sim` control endpoint. */
export async function simControl(sim: KubernetesSim, method: string, path: string, body?: unknown): Promise<unknown> {
  const res = await fetch(`${sim.httpUrl}/_sim/${path}`, {
    method,
    headers: { authorization: `Bearer ${sim.token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const json = (await res.json()) as unknown;
  if (!res.ok) throw new Error(`sim control ${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

/** The heal targets of the named pods, as the engine would resolve them. */
export function targetsFor(instance: VnfInstanceRecord, podNames: readonly string[]): HealTarget[] {
  const info = instance.instantiatedVnfInfo;
  if (!info) throw new Error('instance not instantiated');
  return podNames.map((name) => {
    const r = (info.vnfcResourceInfo ?? []).find((x) => x.computeResource.resourceId === name);
    if (!r) throw new Error(`no vnfcResourceInfo for pod ${name}`);
    const c = (info.vnfcInfo ?? []).find((x) => x.vnfcResourceInfoId === r.id);
    if (!c) throw new Error(`no vnfcInfo for ${r.id}`);
    return { vnfcInfo: c, vnfcResourceInfo: r };
  });
}
