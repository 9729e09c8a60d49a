/**
 * Test fixtures for the OpenStack driver: parsed packages, a hand-built InfraContext (the way the
 * LCM engine builds one), a stand-in for the engine's "rebuild instance info from observe", and
 * a fetch wrapper that counts the Heat calls the driver makes.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { parse as parseYaml } from 'yaml';
import { defaultConfig } from '../../../src/config.ts';
import type { HealPlan, HealTarget, InfraContext, ObservedResources, ScalePlan } from '../../../src/infra/infra-driver.ts';
import { buildCsarFromDir, readCsar } from '../../../src/packages/csar-reader.ts';
import { parseVnfPackage } from '../../../src/packages/vnfd-parser.ts';
import type { VnfPackageModel } from '../../../src/packages/vnfd-model.ts';
import { commandOf } from '../../../src/model/lcm-command.ts';
import type { OpOccRecord } from '../../../src/model/op-occ.ts';
import type { VnfInstanceRecord, VnfcResourceInfo } from '../../../src/model/vnf-instance.ts';
import type { VimConnection } from '../../../src/vims/vim-registry.ts';
import { STAND_IN_TEMPLATES_DIR } from '../../helpers/fixtures.ts';
import { realHeatSettings } from '../../helpers/stages.ts';

export const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
export const VM_BASIC_DIR = join(REPO, 'samples/vm-basic');
export { LCMS_MIN_DIR } from '../../helpers/fixtures.ts';
export const FAKE_NOVA_NEUTRON_DIR = STAND_IN_TEMPLATES_DIR;

/** A package as the engine holds it: parsed model + files. */
export interface LoadedPackage {
  model: VnfPackageModel;
  files: Map<string, Buffer>;
}

/** Builds a CSAR from a package folder and parses it, as onboarding does. */
export async function loadPackage(dir: string): Promise<LoadedPackage> {
  const files = await readCsar(buildCsarFromDir(dir));
  return { model: parseVnfPackage(files), files };
}

/** The Heat environment mapping nova/neutron/cinder onto stand-ins (a Heat without those services). */
export function fakeNovaNeutronExtra(): Record<string, unknown> {
  const env = parseYaml(readFileSync(join(FAKE_NOVA_NEUTRON_DIR, 'env.yaml'), 'utf8')) as Record<string, unknown>;
  const files: Record<string, string> = {};
  for (const f of readdirSync(FAKE_NOVA_NEUTRON_DIR)) if (f.startsWith('fake_')) files[f] = readFileSync(join(FAKE_NOVA_NEUTRON_DIR, f), 'utf8');
  return { heatEnvironment: env, heatEnvironmentFiles: files };
}

/** Options of {@link makeContext}. */
export interface ContextOptions {
  instanceId: string;
  pkg: LoadedPackage;
  flavourId?: string;
  vim: VimConnection;
  vduCounts: Record<string, number>;
  scaleLevels?: Record<string, number>;
  stackTimeoutMs?: number;
}

/** A context like the engine's, with a no-op checkpoint that counts its calls. */
export interface TestContext extends InfraContext {
  checkpoints: number;
}

export function makeContext(o: ContextOptions): TestContext {
  const flavourId = o.flavourId ?? 'simple';
  const flavour = o.pkg.model.flavours[flavourId];
  if (!flavour) throw new Error(`no flavour ${flavourId}`);
  const config = defaultConfig();
  config.vim.stackTimeoutMs = o.stackTimeoutMs ?? 60_000;
  const instance: VnfInstanceRecord = {
    id: o.instanceId,
    vnfInstanceName: 'driver-test',
    vnfInstanceDescription: null,
    vnfdId: o.pkg.model.vnfdId,
    vnfPkgId: 'pkg-1',
    vnfProvider: o.pkg.model.vnfProvider,
    vnfProductName: o.pkg.model.vnfProductName,
    vnfSoftwareVersion: o.pkg.model.vnfSoftwareVersion,
    vnfdVersion: o.pkg.model.vnfdVersion,
    instantiationState: 'NOT_INSTANTIATED',
    vnfConfigurableProperties: null,
    vimConnectionInfo: { vim1: { vimType: o.vim.vimType } },
    instantiatedVnfInfo: null,
    metadata: null,
    extensions: null,
    createdApi: 'v2',
    createdAt: new Date(),
    rev: 1,
  };
  const opOcc = {
    id: `op-${o.instanceId}`,
    vnfInstanceId: o.instanceId,
    operation: 'INSTANTIATE',
    operationState: 'PROCESSING',
    stateEnteredTime: new Date(),
    startTime: new Date(),
    isAutomaticInvocation: false,
    isCancelPending: false,
    cancelMode: null,
    operationParams: {},
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
  } satisfies OpOccRecord;
  const ctx: TestContext = {
    instance,
    op: { id: opOcc.id, operation: opOcc.operation },
    command: commandOf(opOcc),
    vnfd: o.pkg.model,
    flavour,
    vim: o.vim,
    files: async () => o.pkg.files,
    grant: null,
    grantRequest: null,
    state: {},
    checkpoints: 0,
    async checkpoint() {
      ctx.checkpoints += 1;
    },
    signal: new AbortController().signal,
    targetScaleLevels: o.scaleLevels ?? {},
    targetVduCounts: { ...o.vduCounts },
    log: pino({ level: process.env.VNFM_TEST_LOG ?? 'silent' }),
    vimSettings: config.vim,
  };
  return ctx;
}

/** Starts a new operation on the same instance: fresh driver state, as the engine does per op occ. */
export function newOp(ctx: TestContext, operation: OpOccRecord['operation']): void {
  ctx.state = {};
  ctx.op = { id: `${ctx.op.id}-${operation}-${Date.now()}`, operation };
  ctx.command = commandOf({ operation, command: null, operationParams: {}, apiVersion: 'v2' });
}

/** What the engine does after an op: instantiatedVnfInfo rebuilt from observe (VNFC id kept by stableKey). */
export function applyObserved(ctx: TestContext, obs: ObservedResources): void {
  const old = ctx.instance.instantiatedVnfInfo?.vnfcResourceInfo ?? [];
  const byKey = new Map(old.map((r) => [String(r.metadata?.heat_resource_path ?? ''), r.id]));
  const vnfcResourceInfo: VnfcResourceInfo[] = obs.vnfcs.map((v, i) => ({
    id: byKey.get(v.stableKey ?? '') ?? `vnfc-${i}-${v.computeResource.resourceId.slice(0, 8)}`,
    vduId: v.vduId,
    computeResource: { resourceId: v.computeResource.resourceId, vimLevelResourceType: v.computeResource.vimLevelResourceType },
    ...(v.zoneId ? { zoneId: v.zoneId } : {}),
    ...(v.storageResourceIds ? { storageResourceIds: v.storageResourceIds } : {}),
    ...(v.metadata ? { metadata: v.metadata } : {}),
  }));
  ctx.instance.instantiationState = 'INSTANTIATED';
  ctx.instance.instantiatedVnfInfo = {
    flavourId: ctx.flavour.flavourId,
    vnfState: 'STARTED',
    scaleStatus: Object.entries(ctx.targetScaleLevels).map(([aspectId, scaleLevel]) => ({ aspectId, scaleLevel })),
    vnfcResourceInfo,
    vnfcInfo: vnfcResourceInfo.map((r) => ({ id: `${r.vduId}-${r.id}`, vduId: r.vduId, vnfcResourceInfoId: r.id, vnfcState: 'STARTED' })),
    virtualStorageResourceInfo: obs.storages.map((s) => ({
      id: s.resourceId,
      virtualStorageDescId: s.virtualStorageDescId,
      storageResource: { resourceId: s.resourceId, vimLevelResourceType: s.vimLevelResourceType },
      ...(s.metadata ? { metadata: s.metadata } : {}),
    })),
    metadata: { ...(obs.metadata ?? {}) },
  };
}

/** Heal targets for the given vnfcResourceInfo entries. */
export function healPlan(ctx: TestContext, resources: VnfcResourceInfo[], opts: { includeStorage?: boolean; entire?: boolean } = {}): HealPlan {
  const info = ctx.instance.instantiatedVnfInfo;
  const targets: HealTarget[] = resources.map((r) => {
    const vnfcInfo = (info?.vnfcInfo ?? []).find((c) => c.vnfcResourceInfoId === r.id);
    if (!vnfcInfo) throw new Error(`no vnfcInfo for ${r.id}`);
    return { vnfcInfo, vnfcResourceInfo: r };
  });
  return { targets, entire: opts.entire ?? false, includeStorage: opts.includeStorage ?? false, additionalParams: {}, cause: 'driver test' };
}

/** A scale plan. */
export function scalePlan(type: ScalePlan['type'], aspectId: string, fromLevel: number, toLevel: number): ScalePlan {
  return { type, aspectId, numberOfSteps: Math.abs(toLevel - fromLevel), fromLevel, toLevel, additionalParams: {} };
}

/** One Heat call the driver made. */
export interface HeatCall {
  method: string;
  path: string;
  /** The query string ('' or `?...`). */
  query: string;
}

/** Records every request made through the global fetch whose URL contains `match`. */
export function recordFetch(match: string): { calls: HeatCall[]; restore(): void } {
  const original = globalThis.fetch;
  const calls: HeatCall[] = [];
  globalThis.fetch = (async (input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]) => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    if (url.includes(match)) calls.push({ method: (init?.method ?? 'GET').toUpperCase(), path: new URL(url).pathname, query: new URL(url).search });
    return original(input, init);
  }) as typeof fetch;
  return {
    calls,
    restore: () => {
      globalThis.fetch = original;
    },
  };
}

/** Marks sent (PATCH .../resources/<name>), as `<stack id>/<name>`. */
export function markCalls(calls: readonly HeatCall[]): string[] {
  return calls
    .filter((c) => c.method === 'PATCH' && /\/resources\/[^/]+$/.test(c.path))
    .map((c) => {
      const m = /\/stacks\/[^/]+\/([^/]+)\/resources\/([^/]+)$/.exec(c.path);
      return m ? `${decodeURIComponent(m[1] as string)}/${decodeURIComponent(m[2] as string)}` : c.path;
    });
}


/** The real Heat's VIM connection (admin-openrc values, overridable by OS_* env), with the stand-in environment. */
export function realHeatVim(): VimConnection {
  const s = realHeatSettings();
  return {
    vimId: 'real-heat',
    vimType: 'ETSINFV.OPENSTACK_KEYSTONE.V_3',
    interfaceInfo: { endpoint: s.authUrl },
    accessInfo: { username: s.username, password: s.password, project: s.project, userDomain: s.userDomain, projectDomain: s.projectDomain, region: s.region },
    extra: fakeNovaNeutronExtra(),
  };
}

/** A unique instance id per run, so parallel or aborted runs never share a stack name. */
export function uniqueInstanceId(prefix: string): string {
  return `${prefix}-${process.pid}-${Date.now().toString(36)}`;
}
