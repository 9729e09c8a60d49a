/**
 * VNF instance resources: create, read, delete (modify: operations/modify-info.ts). Every change and the
 * notification it causes are written in one transaction; the rows are written by ./instance-state.ts.
 */
import { randomUUID } from 'node:crypto';
import { type Kysely, type Transaction, sql } from 'kysely';
import type { Logger } from 'pino';
import { vnfmError } from '../errors.ts';
import { type VnfInstanceRecord, instanceFromRow } from '../model/vnf-instance.ts';
import type { InstanceFacts, Notifier } from '../notify/notifier.ts';
import type { Database } from '../store/schema.ts';
import type { SecretBox } from '../store/secret-box.ts';
import type { VimConnection, VimRegistry } from '../vims/vim-registry.ts';
import { ALL_PROJECTS, type ProjectScope, scopeWhere } from '../model/project-scope.ts';
import { createInstanceRow, deleteInstanceRow } from './instance-state.ts';

type Db = Kysely<Database> | Transaction<Database>;

/** Facts of an instance used for subscription filtering. */
export function factsOf(i: VnfInstanceRecord): InstanceFacts {
  return { id: i.id, vnfInstanceName: i.vnfInstanceName, vnfdId: i.vnfdId, vnfProvider: i.vnfProvider, vnfProductName: i.vnfProductName, vnfSoftwareVersion: i.vnfSoftwareVersion, vnfdVersion: i.vnfdVersion };
}

/** CreateVnfRequest, both versions (v1 vimConnectionInfo arrays are converted by the API layer). */
export interface CreateInstanceInput {
  vnfdId: string;
  vnfInstanceName?: string;
  vnfInstanceDescription?: string;
  metadata?: Record<string, unknown>;
  vimConnectionInfo?: Record<string, Partial<VimConnection>>;
  /** Project (tenant) the instance belongs to; its op occs, fault notifications and heal batches inherit it. */
  project?: string;
  /** The packages (by vnfdId) and VIMs (by vimId) the caller may use; another project's is answered as unknown. @default every project */
  packageScope?: ProjectScope;
  vimScope?: ProjectScope;
}

/** VnfInfoModificationRequest, normalized to the v2 map form. */
export interface ModifyInstanceInput {
  vnfInstanceName?: string | null;
  vnfInstanceDescription?: string | null;
  vnfdId?: string;
  vnfConfigurableProperties?: Record<string, unknown> | null;
  metadata?: Record<string, unknown> | null;
  extensions?: Record<string, unknown> | null;
  vimConnectionInfo?: Record<string, Partial<VimConnection> | null>;
}

/** Instance operations that do not need the VIM. */
export class InstanceService {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly notifier: Notifier,
    private readonly vims: VimRegistry,
    private readonly box: SecretBox,
    private readonly log: Logger,
  ) {}

  /** Loads an instance or throws 404 (`VnfInstance X not found.` like Tacker). */
  async get(id: string, db: Db = this.db): Promise<VnfInstanceRecord> {
    // the row as one JSON text: one value to decode instead of one per column (the cost of a show
    // on the embedded database; docs/benchmarks.md, "Restart"); timestamps arrive as ISO strings
    const r = (await sql<{ j: string }>`select row_to_json(t)::text as j from (select * from vnf_instance where id = ${id}) t`.execute(db)).rows[0];
    if (!r) throw vnfmError('VNFM_ERR_INST_NOT_FOUND', `VnfInstance ${id} not found.`);
    return instanceFromRow(JSON.parse(r.j) as Record<string, unknown>);
  }

  /** All instances, oldest first. */
  async list(): Promise<VnfInstanceRecord[]> {
    const rows = await this.db.selectFrom('vnf_instance').selectAll().orderBy('created_at').orderBy('id').execute();
    return rows.map((r) => instanceFromRow(r as unknown as Record<string, unknown>));
  }

  /**
   * Ids of the INSTANTIATED instances with a VIM connection of one of `vimTypes`, oldest first:
   * decided by the database, so a pass over 10,000 instances does not load them all.
   */
  async instantiatedIdsByVimType(vimTypes: readonly string[]): Promise<string[]> {
    if (vimTypes.length === 0) return [];
    const rows = await sql<{ id: string }>`
      select id from vnf_instance
      where instantiation_state = 'INSTANTIATED'
        and jsonb_typeof(vim_connection_info) = 'object'
        and exists (select 1 from jsonb_each(vim_connection_info) e where jsonb_typeof(e.value) = 'object' and e.value->>'vimType' in (${sql.join([...vimTypes])}))
      order by created_at, id`.execute(this.db);
    return rows.rows.map((r) => r.id);
  }

  /** The full VIM connections (with secrets) of an instance, for drivers. */
  async vimConnections(id: string, db: Db = this.db): Promise<Record<string, VimConnection>> {
    const r = await db.selectFrom('vnf_instance').select(['vim_connection_info', 'vim_secrets']).where('id', '=', id).executeTakeFirst();
    if (!r) throw vnfmError('VNFM_ERR_INST_NOT_FOUND', `VnfInstance ${id} not found.`);
    const secrets = r.vim_secrets ? this.box.open<Record<string, Record<string, unknown>>>(r.vim_secrets) : {};
    const out: Record<string, VimConnection> = {};
    for (const [k, v] of Object.entries((r.vim_connection_info ?? {}) as Record<string, VimConnection>)) out[k] = { ...v, accessInfo: secrets[k] ?? {} };
    return out;
  }

  /**
   * The connection the VNF's resources live on (the infra driver's): the first entry not added by
   * a management driver (those name VIMs the VNF itself provides, e.g. the Kubernetes cluster a
   * cluster VNF built; marked `extra['vnfm.io/registered-by']`). Stored JSON does not keep key
   * order, so entries are taken in key order.
   */
  static infraConnectionKey(conns: Record<string, { extra?: Record<string, unknown> }>): string | undefined {
    const keys = Object.keys(conns).sort();
    return keys.find((k) => conns[k]?.extra?.['vnfm.io/registered-by'] === undefined) ?? keys[0];
  }

  /** Splits completed connections into the stored (no accessInfo) part and the sealed secrets. */
  async sealConnections(conns: Record<string, VimConnection>): Promise<{ info: Record<string, unknown>; secrets: string }> {
    const info: Record<string, unknown> = {};
    const secrets: Record<string, unknown> = {};
    for (const [k, c] of Object.entries(conns)) {
      const { accessInfo, ...rest } = c;
      info[k] = rest;
      secrets[k] = accessInfo;
    }
    return { info, secrets: this.box.seal(secrets) };
  }

  /** Completes each vimConnectionInfo entry from the VIM registry where it names only a vimId (a VIM visible in `scope`). */
  async completeConnections(input: Record<string, Partial<VimConnection>> | undefined, scope: ProjectScope = ALL_PROJECTS): Promise<Record<string, VimConnection>> {
    const out: Record<string, VimConnection> = {};
    for (const [k, v] of Object.entries(input ?? {})) out[k] = await this.vims.complete(v, scope);
    return out;
  }

  /** The default VIM of a kind for an instance of `project` (its project's default, else the shared one) as a full connection. */
  async defaultVim(kind: string, project: string | null = null): Promise<VimConnection | undefined> {
    const v = await this.vims.getDefault(kind, project);
    return v ? this.vims.toConnection(v) : undefined;
  }

  /** Creates a NOT_INSTANTIATED instance from an onboarded, enabled package. */
  async create(input: CreateInstanceInput, apiVersion: 'v1' | 'v2'): Promise<VnfInstanceRecord> {
    const conns = await this.completeConnections(input.vimConnectionInfo, input.vimScope);
    const sealed = await this.sealConnections(conns);
    const id = randomUUID();
    await this.db.transaction().execute(async (tx) => {
      let q = tx
        .selectFrom('vnf_package')
        .select(['id', 'operational_state', 'vnf_provider', 'vnf_product_name', 'vnf_software_version', 'vnfd_version'])
        .where('vnfd_id', '=', input.vnfdId)
        .where('onboarding_state', '=', 'ONBOARDED');
      // another project's package is answered as not onboarded (its existence is not revealed)
      for (const w of scopeWhere(input.packageScope ?? ALL_PROJECTS)) q = q.where(w);
      const pkg = await q.forUpdate().executeTakeFirst();
      if (!pkg) throw vnfmError('VNFM_ERR_VNFD_NOT_FOUND', `VNF package with vnfdId ${input.vnfdId} is not onboarded.`);
      if (pkg.operational_state !== 'ENABLED') throw vnfmError('VNFM_ERR_PKG_STATE', `VNF package ${pkg.id} (vnfdId ${input.vnfdId}) is DISABLED.`);
      await createInstanceRow(tx, {
        id,
        vnfInstanceName: input.vnfInstanceName ?? null,
        vnfInstanceDescription: input.vnfInstanceDescription ?? null,
        vnfdId: input.vnfdId,
        vnfPkgId: pkg.id,
        vnfProvider: pkg.vnf_provider ?? '',
        vnfProductName: pkg.vnf_product_name ?? '',
        vnfSoftwareVersion: pkg.vnf_software_version ?? '',
        vnfdVersion: pkg.vnfd_version ?? '',
        vimConnectionInfo: sealed.info,
        vimSecrets: sealed.secrets,
        metadata: input.metadata ?? null,
        createdApi: apiVersion,
        project: input.project ?? null,
      });
      await tx.updateTable('vnf_package').set({ usage_state: 'IN_USE' }).where('id', '=', pkg.id).execute();
      const inst = await this.get(id, tx);
      await this.notifier.enqueue(tx, { kind: 'VnfIdentifierCreationNotification', instance: factsOf(inst) });
    });
    this.log.info({ vnfInstanceId: id, vnfdId: input.vnfdId }, 'vnf instance created');
    return this.get(id);
  }

  /** Deletes a NOT_INSTANTIATED instance with no active operation. */
  async delete(id: string): Promise<void> {
    await this.db.transaction().execute(async (tx) => {
      const inst = await this.get(id, tx);
      if (inst.instantiationState !== 'NOT_INSTANTIATED') throw vnfmError('VNFM_ERR_INST_STATE', `VnfInstance ${id} is instantiated; terminate it before deleting.`);
      const active = await tx.selectFrom('op_occ').select(['id', 'operation_state']).where('vnf_instance_id', '=', id).where('operation_state', 'in', ['STARTING', 'PROCESSING', 'FAILED_TEMP', 'ROLLING_BACK']).executeTakeFirst();
      if (active) throw vnfmError('VNFM_ERR_INST_BUSY', `Other LCM operation of vnfInstance ${id} is in progress: ${active.id} is ${active.operation_state}.`);
      await this.notifier.enqueue(tx, { kind: 'VnfIdentifierDeletionNotification', instance: factsOf(inst) });
      await deleteInstanceRow(tx, id, inst.rev);
      const others = await tx.selectFrom('vnf_instance').select('id').where('vnf_pkg_id', '=', inst.vnfPkgId).executeTakeFirst();
      if (!others) await tx.updateTable('vnf_package').set({ usage_state: 'NOT_IN_USE' }).where('id', '=', inst.vnfPkgId).execute();
    });
    this.log.info({ vnfInstanceId: id }, 'vnf instance deleted');
  }
}
