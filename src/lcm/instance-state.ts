/**
 * The one writer of `vnf_instance` rows: creation, every change (instantiation state,
 * instantiatedVnfInfo, vimConnectionInfo and its sealed secrets, metadata, extensions,
 * configurable properties, name and description, the package) and deletion. Other modules decide
 * what to write and call this module, in their own transaction, together with the op occ change
 * (./op-occ-state.ts) and the notification the write belongs to.
 *
 *   createInstanceRow   (none) -> NOT_INSTANTIATED, rev 0           instance-service.ts (create)
 *   updateInstanceRow   rev N -> rev N+1                            lcm-service.ts (instantiate
 *                                                                   accepted: VIM connections),
 *                                                                   operations/modify-info.ts,
 *                                                                   steps/complete.ts (COMPLETED,
 *                                                                   ROLLED_BACK), sync.ts (drift)
 *   deleteInstanceRow   rev N -> (none)                             instance-service.ts (delete)
 *
 * Concurrency rule: every write is a compare-and-set on `rev`. The writer names the `rev` of the
 * record its decision was based on; the row changes only while it still has that `rev`, and every
 * change increments it. Otherwise nothing is written and `VNFM_ERR_INST_BUSY` (409) is thrown, which
 * rolls back the caller's transaction (its op occ change and notification too). Writes take a
 * transaction, never the database handle: the instance change commits with the op occ it belongs to.
 *
 * Operations themselves are serialised by the op occ (one active op occ per instance, a unique
 * index; the executor's writes are fenced by its lease, ./lease.ts), so within an operation the
 * compare-and-set does not fail; what it refuses is a write based on a stale read: a drift sync whose
 * observation an operation overtook, an instantiate accepted on a record changed since it was read.
 * `rev` is also what caches of instance facts are revalidated by (src/autoheal/instance-facts.ts).
 *
 * Key rotation (src/store/rekey.ts) re-encrypts `vim_secrets` in place, outside this module: it
 * changes no value and keeps `rev`.
 */
import type { Transaction } from 'kysely';
import { vnfmError } from '../errors.ts';
import type { InstantiatedVnfInfo, InstantiationState, VnfInstanceRecord } from '../model/vnf-instance.ts';
import { json } from '../store/db.ts';
import type { Database } from '../store/schema.ts';

type Tx = Transaction<Database>;

/** The package an instance is of (its VNFD's identity). */
export type InstancePackage = Pick<VnfInstanceRecord, 'vnfdId' | 'vnfPkgId' | 'vnfProvider' | 'vnfProductName' | 'vnfSoftwareVersion' | 'vnfdVersion'>;

/** A new instance (NOT_INSTANTIATED). */
export interface NewInstance extends InstancePackage {
  id: string;
  vnfInstanceName: string | null;
  vnfInstanceDescription: string | null;
  /** vimConnectionInfo without credentials, and the credentials sealed (InstanceService.sealConnections). */
  vimConnectionInfo: Record<string, unknown>;
  vimSecrets: string;
  metadata: Record<string, unknown> | null;
  createdApi: 'v1' | 'v2';
  project: string | null;
}

/** A change of an instance: only the attributes given are written. */
export interface InstancePatch {
  vnfInstanceName?: string | null;
  vnfInstanceDescription?: string | null;
  vnfConfigurableProperties?: Record<string, unknown> | null;
  metadata?: Record<string, unknown> | null;
  extensions?: Record<string, unknown> | null;
  /** vimConnectionInfo without credentials. */
  vimConnectionInfo?: Record<string, unknown>;
  /** The credentials of the connections, sealed; absent: kept as they are. */
  vimSecrets?: string;
  instantiationState?: InstantiationState;
  instantiatedVnfInfo?: InstantiatedVnfInfo | null;
  package?: InstancePackage;
}

/** The columns of a patch (JSON values encoded). */
function columnsOf(p: InstancePatch): Record<string, unknown> {
  const set: Record<string, unknown> = {};
  if (p.vnfInstanceName !== undefined) set.vnf_instance_name = p.vnfInstanceName;
  if (p.vnfInstanceDescription !== undefined) set.vnf_instance_description = p.vnfInstanceDescription;
  if (p.vnfConfigurableProperties !== undefined) set.vnf_configurable_properties = json(p.vnfConfigurableProperties);
  if (p.metadata !== undefined) set.metadata = json(p.metadata);
  if (p.extensions !== undefined) set.extensions = json(p.extensions);
  if (p.vimConnectionInfo !== undefined) set.vim_connection_info = json(p.vimConnectionInfo);
  if (p.vimSecrets !== undefined) set.vim_secrets = p.vimSecrets;
  if (p.instantiationState !== undefined) set.instantiation_state = p.instantiationState;
  if (p.instantiatedVnfInfo !== undefined) set.instantiated_vnf_info = json(p.instantiatedVnfInfo);
  if (p.package !== undefined) {
    Object.assign(set, {
      vnfd_id: p.package.vnfdId,
      vnf_pkg_id: p.package.vnfPkgId,
      vnf_provider: p.package.vnfProvider,
      vnf_product_name: p.package.vnfProductName,
      vnf_software_version: p.package.vnfSoftwareVersion,
      vnfd_version: p.package.vnfdVersion,
    });
  }
  return set;
}

/** Inserts a new instance, NOT_INSTANTIATED, at `rev` 0. */
export async function createInstanceRow(tx: Tx, n: NewInstance): Promise<void> {
  await tx
    .insertInto('vnf_instance')
    .values({
      id: n.id,
      vnf_instance_name: n.vnfInstanceName,
      vnf_instance_description: n.vnfInstanceDescription,
      vnfd_id: n.vnfdId,
      vnf_pkg_id: n.vnfPkgId,
      vnf_provider: n.vnfProvider,
      vnf_product_name: n.vnfProductName,
      vnf_software_version: n.vnfSoftwareVersion,
      vnfd_version: n.vnfdVersion,
      instantiation_state: 'NOT_INSTANTIATED',
      vnf_configurable_properties: json(null),
      vim_connection_info: json(n.vimConnectionInfo),
      vim_secrets: n.vimSecrets,
      instantiated_vnf_info: json(null),
      metadata: json(n.metadata),
      extensions: json(null),
      created_api: n.createdApi,
      rev: 0,
      project: n.project,
    })
    .execute();
}

/**
 * Writes `patch` on instance `id` if it is still at `rev` (the record the change was decided on);
 * the row is then at `rev + 1`, which is returned. Otherwise nothing is written and 409
 * `VNFM_ERR_INST_BUSY` is thrown (`conflict`: its detail).
 */
export async function updateInstanceRow(tx: Tx, id: string, rev: number, patch: InstancePatch, conflict?: string): Promise<number> {
  const r = await tx
    .updateTable('vnf_instance')
    .set({ ...columnsOf(patch), rev: rev + 1 } as never)
    .where('id', '=', id)
    .where('rev', '=', rev)
    .executeTakeFirst();
  if (Number(r.numUpdatedRows) !== 1) throw conflictError(id, conflict);
  return rev + 1;
}

/** Deletes instance `id` if it is still at `rev`; otherwise 409 `VNFM_ERR_INST_BUSY`, nothing deleted. */
export async function deleteInstanceRow(tx: Tx, id: string, rev: number): Promise<void> {
  const r = await tx.deleteFrom('vnf_instance').where('id', '=', id).where('rev', '=', rev).executeTakeFirst();
  if (Number(r.numDeletedRows) !== 1) throw conflictError(id);
}

function conflictError(id: string, detail?: string) {
  return vnfmError('VNFM_ERR_INST_BUSY', detail ?? `VnfInstance ${id} was changed by another request meanwhile; nothing was written. Read it again and retry.`);
}
