/**
 * The engine's side of the management runtime: what the executor puts into a {@link MgmtContext}
 * beyond the op's own data.
 *
 * - {@link mgmtTargets}: the VNFCs an operation acts on, resolved from the command and the
 *   instance before / after the infra step.
 * - {@link journalStep}: journaled driver steps in the op's persisted mgmt state.
 * - {@link MgmtStore}: instance-scoped sealed driver state, the stored instantiate parameters
 *   (with persisted overrides), resource locks, and the VIM facade.
 */
import type { Kysely } from 'kysely';
import { setTimeout as sleep } from 'node:timers/promises';
import { vnfmError } from '../errors.ts';
import type { MgmtInstanceState, MgmtTarget, MgmtVims } from '../mgmt/mgmt-driver.ts';
import type { LcmCommand } from '../model/lcm-command.ts';
import { isGrantSecretKey, sealParams, unsealParams } from '../model/sealed-params.ts';
import type { VnfInstanceRecord } from '../model/vnf-instance.ts';
import { mergePatch } from '../packages/package-service.ts';
import type { SecretBox } from '../store/secret-box.ts';
import type { Database } from '../store/schema.ts';
import type { VimInput, VimRegistry } from '../vims/vim-registry.ts';

/** Driver name under which persisted instantiate-parameter overrides are kept in `mgmt_state`. */
const PARAMS_OVERRIDES = '@instantiate-params';

/**
 * The VNFCs the operation acts on. `removed` (scale in) comes from the grant's removals, decided
 * before the infra step; additions (scale out) are the VNFCs present after and not before.
 */
export function mgmtTargets(command: LcmCommand, before: VnfInstanceRecord, after: VnfInstanceRecord, removedResourceIds: readonly string[] = []): MgmtTarget[] {
  const vb = before.instantiatedVnfInfo;
  const va = after.instantiatedVnfInfo;
  const resBefore = new Map((vb?.vnfcResourceInfo ?? []).map((r) => [r.id, r]));
  const resAfter = new Map((va?.vnfcResourceInfo ?? []).map((r) => [r.id, r]));
  const infoBefore = vb?.vnfcInfo ?? [];
  const infoAfter = va?.vnfcInfo ?? [];
  const out: MgmtTarget[] = [];
  if (command.operation === 'HEAL' && command.scope === 'vnfcs') {
    for (const id of command.vnfcInfoIds) {
      const info = infoBefore.find((i) => i.id === id) ?? infoAfter.find((i) => i.id === id);
      if (!info) continue;
      const old = resBefore.get(info.vnfcResourceInfoId);
      const now = resAfter.get(info.vnfcResourceInfoId);
      out.push({
        vnfcInfoId: info.id,
        vnfcResourceInfoId: info.vnfcResourceInfoId,
        vduId: info.vduId,
        change: 'heal',
        ...(old ? { oldResourceId: old.computeResource.resourceId } : {}),
        ...(now && after !== before ? { newResourceId: now.computeResource.resourceId } : {}),
      });
    }
  } else if (command.operation === 'SCALE' && command.type === 'SCALE_IN') {
    const gone = new Set(removedResourceIds);
    for (const info of infoBefore) {
      const r = resBefore.get(info.vnfcResourceInfoId);
      if (r && gone.has(r.computeResource.resourceId)) out.push({ vnfcInfoId: info.id, vnfcResourceInfoId: info.vnfcResourceInfoId, vduId: info.vduId, change: 'remove', oldResourceId: r.computeResource.resourceId });
    }
  } else if (command.operation === 'SCALE' && command.type === 'SCALE_OUT' && after !== before) {
    const had = new Set(infoBefore.map((i) => i.id));
    for (const info of infoAfter) {
      if (had.has(info.id)) continue;
      const r = resAfter.get(info.vnfcResourceInfoId);
      out.push({ vnfcInfoId: info.id, vnfcResourceInfoId: info.vnfcResourceInfoId, vduId: info.vduId, change: 'add', ...(r ? { newResourceId: r.computeResource.resourceId } : {}) });
    }
  }
  return out;
}

/**
 * Runs `fn` as journaled step `name` of `journal` (the driver's part of the op's mgmt state):
 * skipped with its recorded result when done; recorded and checkpointed when it completes.
 */
export async function journalStep<T>(journal: Record<string, unknown>, name: string, fn: () => Promise<T>, checkpoint: () => Promise<void>): Promise<T> {
  const done = (journal.done ??= {}) as Record<string, { result?: unknown; at: string }>;
  const prior = done[name];
  if (prior) return prior.result as T;
  const result = await fn();
  done[name] = { ...(result === undefined ? {} : { result: JSON.parse(JSON.stringify(result)) }), at: new Date().toISOString() };
  await checkpoint();
  return result;
}

/** Persistence and registry access behind management contexts. */
export class MgmtStore {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly box: SecretBox,
    private readonly vimRegistry: VimRegistry,
  ) {}

  /** Opens the sealed values of a parameter tree. */
  unseal<T>(tree: T): T {
    return unsealParams(tree, (s) => this.box.open(s));
  }

  /** Seals the secret values of a parameter tree. */
  seal<T>(tree: T): T {
    return sealParams(tree, (v) => this.box.seal(v));
  }

  /** Seals an NFVO's Grant for storage: its VIM credentials (`accessInfo`) and secret-named values. */
  sealGrant<T>(grant: T): T {
    return sealParams(grant, (v) => this.box.seal(v), isGrantSecretKey);
  }

  /** Instance-scoped state of one driver. */
  instanceState(instanceId: string, driver: string): MgmtInstanceState {
    return {
      get: async () => {
        const row = await this.db.selectFrom('mgmt_state').select('sealed').where('instance_id', '=', instanceId).where('driver', '=', driver).executeTakeFirst();
        return row ? this.box.open<Record<string, unknown>>(row.sealed) : {};
      },
      save: async (state) => {
        const sealed = this.box.seal(state);
        await this.db
          .insertInto('mgmt_state')
          .values({ instance_id: instanceId, driver, sealed })
          .onConflict((oc) => oc.columns(['instance_id', 'driver']).doUpdateSet({ sealed, updated_at: new Date() }))
          .execute();
      },
    };
  }

  /**
   * The additionalParams of the instance's last completed INSTANTIATE (secrets opened), with the
   * overrides later operations persisted.
   */
  async instantiateParams(instanceId: string): Promise<Record<string, unknown>> {
    const row = await this.db
      .selectFrom('op_occ')
      .select(['operation_params', 'command'])
      .where('vnf_instance_id', '=', instanceId)
      .where('operation', '=', 'INSTANTIATE')
      .where('operation_state', '=', 'COMPLETED')
      .orderBy('start_time', 'desc')
      .limit(1)
      .executeTakeFirst();
    const fromCommand = (row?.command as { additionalParams?: Record<string, unknown> } | null)?.additionalParams;
    const fromParams = (row?.operation_params as { additionalParams?: Record<string, unknown> } | null)?.additionalParams;
    const base = fromCommand ?? fromParams ?? {};
    const overrides = await this.instanceState(instanceId, PARAMS_OVERRIDES).get();
    return this.unseal(Object.keys(overrides).length ? (mergePatch(base, overrides) as Record<string, unknown>) : base);
  }

  /** Merges overrides into the stored instantiate parameters (kept sealed). */
  async persistInstantiateParams(instanceId: string, overrides: Record<string, unknown>): Promise<void> {
    const st = this.instanceState(instanceId, PARAMS_OVERRIDES);
    await st.save(mergePatch(await st.get(), overrides) as Record<string, unknown>);
  }

  /**
   * Waits until `key` is free or held by `opId` (a holder op that is no longer running loses it),
   * then holds it for `opId`.
   */
  async lock(key: string, opId: string, signal: AbortSignal, pollMs = 1000): Promise<() => Promise<void>> {
    for (;;) {
      signal.throwIfAborted();
      const inserted = await this.db.insertInto('mgmt_lock').values({ key, op_occ_id: opId }).onConflict((oc) => oc.column('key').doNothing()).returning('key').executeTakeFirst();
      if (inserted) break;
      const held = await this.db.selectFrom('mgmt_lock').leftJoin('op_occ', 'op_occ.id', 'mgmt_lock.op_occ_id').select(['mgmt_lock.op_occ_id', 'op_occ.operation_state', 'op_occ.lease_owner']).where('mgmt_lock.key', '=', key).executeTakeFirst();
      if (!held) continue;
      if (held.op_occ_id === opId) break;
      const holderRunning = held.operation_state === 'PROCESSING' || held.operation_state === 'ROLLING_BACK' || held.operation_state === 'STARTING';
      if (!holderRunning || !held.lease_owner) {
        // The holder is not executing: take the lock over (conditional on the same holder).
        const r = await this.db.updateTable('mgmt_lock').set({ op_occ_id: opId, acquired_at: new Date() }).where('key', '=', key).where('op_occ_id', '=', held.op_occ_id).executeTakeFirst();
        if (Number(r.numUpdatedRows) === 1) break;
        continue;
      }
      await sleep(pollMs, undefined, { signal }).catch(() => undefined);
    }
    return async () => {
      await this.db.deleteFrom('mgmt_lock').where('key', '=', key).where('op_occ_id', '=', opId).execute();
    };
  }

  /** Every instance's sealed state of one driver (few rows: one per instance using the driver). */
  async driverStates(driver: string): Promise<{ instanceId: string; state: Record<string, unknown> }[]> {
    const rows = await this.db.selectFrom('mgmt_state').select(['instance_id', 'sealed']).where('driver', '=', driver).execute();
    return rows.map((r) => ({ instanceId: r.instance_id, state: this.box.open<Record<string, unknown>>(r.sealed) }));
  }

  /** Releases every lock an op holds. */
  async releaseLocks(opId: string): Promise<void> {
    await this.db.deleteFrom('mgmt_lock').where('op_occ_id', '=', opId).execute();
  }

  /** The VIM facade for drivers acting for `instanceId`. */
  vims(instanceId: string): MgmtVims {
    const reg = this.vimRegistry;
    const db = this.db;
    // a VIM a driver registers belongs to the instance's project (names are unique per project)
    const projectOfInstance = async (): Promise<string | null> => (await db.selectFrom('vnf_instance').select('project').where('id', '=', instanceId).executeTakeFirst())?.project ?? null;
    const sameNamespace = async (name: string) => {
      const project = reg.ownerFor(await projectOfInstance());
      return { project, found: (await reg.list()).find((v) => v.name === name && v.project === project) };
    };
    const view = (v: { id: string; config: { authUrl: string; extra?: Record<string, unknown> } }) => {
      const createdFor = v.config.extra?.['vnfm.io/created-for'];
      return { id: v.id, authUrl: v.config.authUrl, ...(typeof createdFor === 'string' ? { createdFor } : {}) };
    };
    return {
      async register(input: VimInput) {
        if (!input.name) throw vnfmError('VNFM_ERR_MGMT_FAILED', 'a VIM registered by a management driver needs a name');
        const { project, found: existing } = await sameNamespace(input.name);
        if (existing) {
          const e = view(existing as never);
          if (e.authUrl === input.auth_url && e.createdFor === instanceId) {
            // Same VIM for the same instance (a retried step): refresh its credentials.
            await reg.update(existing.id, { ...input, extra: { ...(input.extra ?? {}), 'vnfm.io/created-for': instanceId } });
            return { id: existing.id, created: false };
          }
          throw vnfmError('VNFM_ERR_MGMT_REFUSED', `a VIM named ${input.name} already exists (${existing.id}, ${e.authUrl}) and was not created for VNF instance ${instanceId}: choose another vim_name`);
        }
        const v = await reg.register({ ...input, extra: { ...(input.extra ?? {}), 'vnfm.io/created-for': instanceId } }, project);
        return { id: v.id, created: true };
      },
      async findByName(name: string) {
        const v = (await sameNamespace(name)).found;
        return v ? view(v as never) : undefined;
      },
      async delete(id: string) {
        try {
          await reg.delete(id, { exceptInstance: instanceId });
        } catch (e) {
          if ((e as { code?: string }).code !== 'VNFM_ERR_VIM_NOT_FOUND') throw e;
        }
      },
    };
  }
}
