/**
 * VNF package lifecycle (SOL005 as Tacker has it): create, upload, onboard (parse + validate the
 * CSAR), enable/disable, delete, and usage tracking. Onboarding runs in the background after the
 * upload is stored, in a separate worker process with a heap and a time limit
 * (`onboard-isolate.ts`), at most `maxConcurrentOnboardings` at once (further uploads get 503 with
 * Retry-After). A package left in PROCESSING by a crash is onboarded again at start-up once (the
 * attempts are counted in `onboard_attempts`), then marked ERROR: an upload is not lost, and a
 * package cannot crash-loop the VNFM. A broken package ends in onboardingState ERROR with a clear
 * message. A package belongs to the project that created it (null: shared by every project); reads
 * take a {@link ProjectScope}, another project's package being answered as unknown.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import { defaultConfig, type VnfmConfig } from '../config.ts';
import { vnfmError } from '../errors.ts';
import { ALL_PROJECTS, type ProjectScope, inScope } from '../model/project-scope.ts';
import { json } from '../store/db.ts';
import type { Database } from '../store/schema.ts';
import { declaredEntryCount, readCsar } from './csar-reader.ts';
import { extractInWorker, OnboardingAborted, parseInWorker } from './onboard-isolate.ts';
import { PackageError } from './package-error.ts';
import { type PackageInfo, packageInfoOf } from './package-info.ts';
import type { VnfPackageModel } from './vnfd-model.ts';

/** Onboarding limits (the `packages` section of the config). */
export type PackageLimits = VnfmConfig['packages'];

/** Defaults of {@link PackageLimits}: those of the config module. */
export const DEFAULT_PACKAGE_LIMITS: PackageLimits = defaultConfig().packages;

/** {@link PackageService.files} reads a package of at most this many entries on the event loop, a larger one in a worker. */
export const INLINE_READ_MAX_ENTRIES = 256;
/** ... and of at most this many bytes (zipped). */
export const INLINE_READ_MAX_BYTES = 8 * 1024 * 1024;

/** Onboarding attempts of one content: the first one plus one resume at start-up. */
export const MAX_ONBOARD_ATTEMPTS = 2;

/** A package row as the service hands it out (content excluded). */
export interface PackageRecord {
  id: string;
  onboardingState: 'CREATED' | 'UPLOADING' | 'PROCESSING' | 'ONBOARDED' | 'ERROR';
  operationalState: 'ENABLED' | 'DISABLED';
  usageState: 'IN_USE' | 'NOT_IN_USE';
  vnfdId: string | null;
  vnfProvider: string | null;
  vnfProductName: string | null;
  vnfSoftwareVersion: string | null;
  vnfdVersion: string | null;
  checksum: { algorithm: string; hash: string } | null;
  userDefinedData: Record<string, unknown>;
  vnfd: VnfPackageModel | null;
  /** softwareImages and additionalArtifacts (computed at onboarding; null for older packages). */
  packageInfo: PackageInfo | null;
  onboardingError: string | null;
  createdAt: Date;
  /** The owning project; null: shared by every project. */
  project: string | null;
}

const COLS = [
  'id',
  'onboarding_state',
  'operational_state',
  'usage_state',
  'vnfd_id',
  'vnf_provider',
  'vnf_product_name',
  'vnf_software_version',
  'vnfd_version',
  'checksum',
  'user_defined_data',
  'vnfd',
  'package_info',
  'onboarding_error',
  'created_at',
  'project',
] as const;

/** A `vnf_package` row (content excluded) as a {@link PackageRecord}. */
export function packageFromRow(r: Record<string, unknown>): PackageRecord {
  return {
    id: r.id as string,
    onboardingState: r.onboarding_state as PackageRecord['onboardingState'],
    operationalState: r.operational_state as PackageRecord['operationalState'],
    usageState: r.usage_state as PackageRecord['usageState'],
    vnfdId: r.vnfd_id as string | null,
    vnfProvider: r.vnf_provider as string | null,
    vnfProductName: r.vnf_product_name as string | null,
    vnfSoftwareVersion: r.vnf_software_version as string | null,
    vnfdVersion: r.vnfd_version as string | null,
    checksum: r.checksum as PackageRecord['checksum'],
    userDefinedData: (r.user_defined_data ?? {}) as Record<string, unknown>,
    vnfd: r.vnfd as VnfPackageModel | null,
    packageInfo: (r.package_info ?? null) as PackageInfo | null,
    onboardingError: r.onboarding_error as string | null,
    createdAt: new Date(r.created_at as string),
    project: (r.project ?? null) as string | null,
  };
}

/** Package operations used by the API and the engine. */
export class PackageService {
  private readonly inflight = new Set<Promise<void>>();
  /** Onboarded VNFDs never change: cache them by package id. */
  private readonly vnfdCache = new Map<string, VnfPackageModel>();
  private readonly filesCache = new Map<string, Map<string, Buffer>>();
  /** Onboardings holding a slot now (uploads and resumed ones). */
  private running = 0;
  /** Uploaded onboardings running now, per caller ({@link upload}'s `caller`). */
  private readonly byCaller = new Map<string, number>();
  /** Resumed onboardings waiting for a slot (start-up recovery queues; uploads are refused instead). */
  private readonly waiting: (() => void)[] = [];
  readonly limits: PackageLimits;
  /** Aborted at shutdown: stops the worker processes of this service. */
  private readonly stopping = new AbortController();
  /**
   * Fault positioning: awaited when the worker process of package `id` has started, before it
   * gets the package (the package is PROCESSING and holds its slot meanwhile).
   */
  onWorkerStarted: ((id: string) => Promise<void>) | undefined;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly log: Logger,
    private readonly onOnboarded?: (result: 'ONBOARDED' | 'ERROR') => void,
    limits: Partial<PackageLimits> = {},
  ) {
    this.limits = { ...DEFAULT_PACKAGE_LIMITS, ...limits };
  }

  /** True when an upload would be accepted now (the API checks this before reading a body). */
  hasOnboardingCapacity(): boolean {
    return this.running + this.waiting.length < this.limits.maxConcurrentOnboardings;
  }

  /**
   * Why an upload of `caller` cannot start now (the 429 of {@link callerBusyError} or the 503 of
   * {@link busyError}), or undefined when it can. The API checks this before reading a body, and
   * {@link upload} again, atomically.
   */
  admissionError(caller?: string): Error | undefined {
    if (caller !== undefined && (this.byCaller.get(caller) ?? 0) >= this.limits.maxConcurrentOnboardingsPerCaller) return this.callerBusyError();
    return this.hasOnboardingCapacity() ? undefined : this.busyError();
  }

  /** The 429 of an upload beyond the caller's share of the onboarding capacity. */
  callerBusyError(): Error {
    const n = this.limits.maxConcurrentOnboardingsPerCaller;
    return vnfmError('VNFM_ERR_PKG_CALLER_BUSY', `${n === 1 ? 'an onboarding' : `${n} onboardings`} of this caller ${n === 1 ? 'is' : 'are'} running (packages.maxConcurrentOnboardingsPerCaller); retry the upload in ${this.limits.busyRetryAfterSeconds} s, once it has finished`, {
      retryAfterMs: this.limits.busyRetryAfterSeconds * 1000,
    });
  }

  /** The 503 of an upload beyond the onboarding capacity. */
  busyError(): Error {
    return vnfmError('VNFM_ERR_PKG_BUSY', `${this.limits.maxConcurrentOnboardings} VNF package onboardings are running (packages.maxConcurrentOnboardings); retry the upload in ${this.limits.busyRetryAfterSeconds} s`, {
      retryAfterMs: this.limits.busyRetryAfterSeconds * 1000,
    });
  }

  private release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.running--;
  }

  private acquireQueued(): Promise<void> {
    if (this.running < this.limits.maxConcurrentOnboardings) {
      this.running++;
      return Promise.resolve();
    }
    // The slot is handed over by release() (running stays as is).
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  /** Creates an empty package resource (onboardingState CREATED) of `project` (null: shared). */
  async create(userDefinedData: Record<string, unknown> = {}, project: string | null = null): Promise<PackageRecord> {
    const id = randomUUID();
    await this.db
      .insertInto('vnf_package')
      .values({ id, onboarding_state: 'CREATED', operational_state: 'DISABLED', usage_state: 'NOT_IN_USE', checksum: json(null), user_defined_data: json(userDefinedData), vnfd: json(null), project })
      .execute();
    return this.get(id);
  }

  /** Finds a package visible in `scope` or throws 404 (another project's package: the same 404). */
  async get(id: string, scope: ProjectScope = ALL_PROJECTS): Promise<PackageRecord> {
    const r = await this.db.selectFrom('vnf_package').select(COLS).where('id', '=', id).executeTakeFirst();
    if (!r || !inScope(scope, r.project)) throw vnfmError('VNFM_ERR_PKG_NOT_FOUND', `VNF package ${id} not found`);
    return packageFromRow(r);
  }

  /** All packages, oldest first. */
  async list(): Promise<PackageRecord[]> {
    const rows = await this.db.selectFrom('vnf_package').select(COLS).orderBy('created_at').orderBy('id').execute();
    return rows.map(packageFromRow);
  }

  /** The onboarded package that carries a VNFD id (visible in `scope`), or 404. */
  async getOnboardedByVnfdId(vnfdId: string, scope: ProjectScope = ALL_PROJECTS): Promise<PackageRecord> {
    const r = await this.db.selectFrom('vnf_package').select(COLS).where('vnfd_id', '=', vnfdId).where('onboarding_state', '=', 'ONBOARDED').executeTakeFirst();
    if (!r || !inScope(scope, r.project)) throw vnfmError('VNFM_ERR_PKG_NOT_FOUND', `no onboarded VNF package with vnfdId ${vnfdId}`);
    return packageFromRow(r);
  }

  /** The raw CSAR of a package (404 when none was uploaded). */
  async content(id: string): Promise<Buffer> {
    const r = await this.db.selectFrom('vnf_package').select(['content', 'onboarding_state']).where('id', '=', id).executeTakeFirst();
    if (!r) throw vnfmError('VNFM_ERR_PKG_NOT_FOUND', `VNF package ${id} not found`);
    if (!r.content) throw vnfmError('VNFM_ERR_PKG_STATE', `VNF package ${id} has no content (onboardingState ${r.onboarding_state})`);
    return Buffer.from(r.content);
  }

  /**
   * The files of an onboarded package, read from its stored CSAR (cached: content is immutable
   * once onboarded). A small package (at most {@link INLINE_READ_MAX_ENTRIES} entries, as its ZIP
   * declares, and {@link INLINE_READ_MAX_BYTES}) is read here; a larger one in a worker process, so
   * the event loop's share does not grow with the package's entry count.
   */
  async files(id: string): Promise<Map<string, Buffer>> {
    const hit = this.filesCache.get(id);
    if (hit) return hit;
    const zip = await this.content(id);
    const entries = declaredEntryCount(zip);
    const l = this.limits;
    const files =
      entries !== undefined && entries <= INLINE_READ_MAX_ENTRIES && zip.length <= INLINE_READ_MAX_BYTES
        ? await readCsar(zip, l)
        : await extractInWorker(zip, { maxFileBytes: l.maxFileBytes, maxVnfdBytes: l.maxVnfdBytes, maxTotalBytes: l.maxTotalBytes, maxEntries: l.maxEntries, maxOldGenerationSizeMb: l.maxOldGenerationSizeMb, timeoutMs: l.onboardTimeoutMs }, this.stopping.signal);
    if (this.filesCache.size > 64) this.filesCache.clear();
    this.filesCache.set(id, files);
    return files;
  }

  /** The VNFD model of an onboarded package (cached). */
  async vnfd(id: string): Promise<VnfPackageModel> {
    const hit = this.vnfdCache.get(id);
    if (hit) return hit;
    const r = await this.db.selectFrom('vnf_package').select(['vnfd', 'onboarding_state']).where('id', '=', id).executeTakeFirst();
    if (!r) throw vnfmError('VNFM_ERR_PKG_NOT_FOUND', `VNF package ${id} not found`);
    if (r.onboarding_state !== 'ONBOARDED' || !r.vnfd) throw vnfmError('VNFM_ERR_PKG_STATE', `VNF package ${id} is not onboarded`);
    const model = r.vnfd as VnfPackageModel;
    this.vnfdCache.set(id, model);
    return model;
  }

  /**
   * Stores uploaded content and starts onboarding in the background. Only a package in CREATED
   * (or ERROR, to retry an upload) accepts content: 409 otherwise. `caller` (the API's caller
   * key: project, principal or client address) may run at most
   * `packages.maxConcurrentOnboardingsPerCaller` onboardings at once: 429 beyond.
   */
  async upload(id: string, zip: Buffer, caller?: string): Promise<void> {
    if (zip.length === 0) throw vnfmError('VNFM_ERR_API_BAD_REQUEST', 'package content is empty');
    // Reserve the slot synchronously, before any await, so concurrent uploads cannot overbook.
    const refused = this.admissionError(caller);
    if (refused) throw refused;
    this.running++;
    if (caller !== undefined) this.byCaller.set(caller, (this.byCaller.get(caller) ?? 0) + 1);
    const release = (): void => {
      if (caller !== undefined) {
        const n = (this.byCaller.get(caller) ?? 1) - 1;
        if (n > 0) this.byCaller.set(caller, n);
        else this.byCaller.delete(caller);
      }
      this.release();
    };
    let started = false;
    try {
      const res = await this.db
        .updateTable('vnf_package')
        .set({ onboarding_state: 'PROCESSING', content: zip, onboarding_error: null, onboard_attempts: 0, checksum: json({ algorithm: 'SHA-256', hash: createHash('sha256').update(zip).digest('hex') }) })
        .where('id', '=', id)
        .where('onboarding_state', 'in', ['CREATED', 'ERROR'])
        .executeTakeFirst();
      if (Number(res.numUpdatedRows) === 0) {
        const p = await this.get(id);
        throw vnfmError('VNFM_ERR_PKG_STATE', `VNF package ${id} is in onboardingState ${p.onboardingState}; content can only be uploaded in CREATED`);
      }
      started = true;
      // The worker gets the uploaded bytes as they are: reading them back from the database would
      // cost the event loop time in proportion to the package's size for nothing.
      this.track(this.onboard(id, zip).finally(release));
    } finally {
      if (!started) release();
    }
  }

  private track(p: Promise<void>): void {
    this.inflight.add(p);
    void p.finally(() => this.inflight.delete(p));
  }

  /** Waits for background onboardings (tests and shutdown). */
  async idle(): Promise<void> {
    while (this.inflight.size > 0) await Promise.allSettled([...this.inflight]);
  }

  /**
   * Start-up: packages left in PROCESSING (the VNFM stopped while onboarding them) are onboarded
   * again, unless they already had {@link MAX_ONBOARD_ATTEMPTS} attempts: those are marked ERROR
   * (the package may be what stopped the VNFM). Resumed onboardings wait for a slot.
   */
  async recover(): Promise<void> {
    const rows = await this.db.selectFrom('vnf_package').select(['id', 'onboard_attempts']).where('onboarding_state', 'in', ['PROCESSING', 'UPLOADING']).execute();
    for (const r of rows) {
      if (r.onboard_attempts >= MAX_ONBOARD_ATTEMPTS) {
        const msg = `onboarding was interrupted ${r.onboard_attempts} times (the VNFM stopped while processing this package) and is not resumed again; upload the package content again to retry`;
        this.log.warn({ vnfPkgId: r.id, attempts: r.onboard_attempts }, 'package left in PROCESSING too often; marked ERROR');
        await this.db.updateTable('vnf_package').set({ onboarding_state: 'ERROR', onboarding_error: msg }).where('id', '=', r.id).where('onboarding_state', 'in', ['PROCESSING', 'UPLOADING']).execute();
        this.onOnboarded?.('ERROR');
        continue;
      }
      this.log.info({ vnfPkgId: r.id, attempts: r.onboard_attempts }, 'resuming the onboarding of a package left in PROCESSING');
      this.track(this.acquireQueued().then(() => this.onboard(r.id).finally(() => this.release())));
    }
  }

  /** Stops onboarding workers (shutdown); their packages stay PROCESSING and are resumed at the next start. */
  stopWorkers(): void {
    this.stopping.abort();
  }

  private async onboard(id: string, uploaded?: Buffer): Promise<void> {
    try {
      // Counted before the work starts: an attempt that takes the process down still counts.
      await this.db.updateTable('vnf_package').set((eb) => ({ onboard_attempts: eb('onboard_attempts', '+', 1) })).where('id', '=', id).execute();
      const zip = uploaded ?? (await this.content(id));
      const l = this.limits;
      const model = await parseInWorker(zip, {
        maxFileBytes: l.maxFileBytes,
        maxVnfdBytes: l.maxVnfdBytes,
        maxTotalBytes: l.maxTotalBytes,
        maxEntries: l.maxEntries,
        maxOldGenerationSizeMb: l.maxOldGenerationSizeMb,
        timeoutMs: l.onboardTimeoutMs,
      }, this.stopping.signal, this.onWorkerStarted ? () => (this.onWorkerStarted as (id: string) => Promise<void>)(id) : undefined);
      await this.db.transaction().execute(async (tx) => {
        const clash = await tx.selectFrom('vnf_package').select(['id', 'project']).where('vnfd_id', '=', model.vnfdId).where('onboarding_state', '=', 'ONBOARDED').where('id', '!=', id).executeTakeFirst();
        if (clash) {
          // vnfdIds are unique across projects (as in Tacker); another project's package id is not named
          const own = await tx.selectFrom('vnf_package').select('project').where('id', '=', id).executeTakeFirst();
          const visible = clash.project === null || clash.project === (own?.project ?? null);
          throw new PackageError(`a package with vnfdId ${model.vnfdId} is already onboarded${visible ? ` (${clash.id})` : ''}`);
        }
        await tx
          .updateTable('vnf_package')
          .set({
            onboarding_state: 'ONBOARDED',
            operational_state: 'ENABLED',
            vnfd_id: model.vnfdId,
            vnf_provider: model.vnfProvider,
            vnf_product_name: model.vnfProductName,
            vnf_software_version: model.vnfSoftwareVersion,
            vnfd_version: model.vnfdVersion,
            vnfd: json(model),
            package_info: json(packageInfoOf(model, new Date())),
          })
          .where('id', '=', id)
          .execute();
      });
      this.log.info({ vnfPkgId: id, vnfdId: model.vnfdId }, 'package onboarded');
      this.onOnboarded?.('ONBOARDED');
    } catch (e) {
      if (e instanceof OnboardingAborted) {
        // A clean shutdown is not a crash: give the attempt back; the next start resumes it.
        this.log.info({ vnfPkgId: id }, 'package onboarding stopped by shutdown; resumed at the next start');
        await this.db.updateTable('vnf_package').set((eb) => ({ onboard_attempts: eb('onboard_attempts', '-', 1) })).where('id', '=', id).where('onboard_attempts', '>', 0).execute().catch(() => undefined);
        return;
      }
      const msg = e instanceof PackageError ? e.message : `package could not be processed: ${(e as Error)?.message ?? String(e)}`;
      this.log.warn({ vnfPkgId: id, err: msg }, 'package onboarding failed');
      await this.db.updateTable('vnf_package').set({ onboarding_state: 'ERROR', onboarding_error: msg }).where('id', '=', id).execute();
      this.onOnboarded?.('ERROR');
    }
  }

  /** PATCH: operationalState and/or userDefinedData (merged). */
  async modify(id: string, patch: { operationalState?: 'ENABLED' | 'DISABLED'; userDefinedData?: Record<string, unknown> }): Promise<Record<string, unknown>> {
    const p = await this.get(id);
    if (patch.operationalState !== undefined) {
      if (p.onboardingState !== 'ONBOARDED') throw vnfmError('VNFM_ERR_PKG_STATE', `VNF package ${id} is not onboarded (onboardingState ${p.onboardingState})`);
      if (patch.operationalState === p.operationalState) throw vnfmError('VNFM_ERR_PKG_STATE', `VNF package ${id} is already ${p.operationalState}`);
    }
    const udd = patch.userDefinedData ? mergePatch(p.userDefinedData, patch.userDefinedData) : p.userDefinedData;
    await this.db
      .updateTable('vnf_package')
      .set({ ...(patch.operationalState ? { operational_state: patch.operationalState } : {}), user_defined_data: json(udd) })
      .where('id', '=', id)
      .execute();
    return { ...(patch.operationalState ? { operationalState: patch.operationalState } : {}), ...(patch.userDefinedData ? { userDefinedData: udd } : {}) };
  }

  /** Deletes a package: refused while ENABLED (onboarded) or IN_USE. */
  async delete(id: string): Promise<void> {
    const p = await this.get(id);
    if (p.usageState === 'IN_USE') throw vnfmError('VNFM_ERR_PKG_STATE', `VNF package ${id} is in use by VNF instances`);
    if (p.onboardingState === 'ONBOARDED' && p.operationalState === 'ENABLED') throw vnfmError('VNFM_ERR_PKG_STATE', `VNF package ${id} is ENABLED; disable it first (PATCH operationalState DISABLED)`);
    if (p.onboardingState === 'PROCESSING') throw vnfmError('VNFM_ERR_PKG_STATE', `VNF package ${id} is being processed`);
    const inUse = await this.db.selectFrom('vnf_instance').select('id').where('vnf_pkg_id', '=', id).executeTakeFirst();
    if (inUse) throw vnfmError('VNFM_ERR_PKG_STATE', `VNF package ${id} is referenced by VNF instance ${inUse.id}`);
    await this.db.deleteFrom('vnf_package').where('id', '=', id).execute();
    this.vnfdCache.delete(id);
    this.filesCache.delete(id);
  }
}

/** RFC 7396 JSON merge patch. */
export function mergePatch(target: unknown, patch: unknown): Record<string, unknown> {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return patch as Record<string, unknown>;
  const out: Record<string, unknown> = target !== null && typeof target === 'object' && !Array.isArray(target) ? { ...(target as Record<string, unknown>) } : {};
  for (const [k, v] of Object.entries(patch as Record<string, unknown>)) {
    if (v === null) delete out[k];
    else out[k] = v !== null && typeof v === 'object' && !Array.isArray(v) ? mergePatch(out[k], v) : v;
  }
  return out;
}
