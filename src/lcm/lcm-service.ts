/**
 * Accepts LCM requests, given as canonical commands (the API converts v1/v2 requests at the edge):
 * validates them against the instance state and the VNFD (each operation's `accept`, in
 * ./operations), then creates the op occ (STARTING) and its START notification in one transaction
 * (./op-occ-state.ts) and wakes the runner. Everything that can be decided synchronously is (409
 * busy, 404, 400/422 with the exact reason), so a 202 is only ever answered for an operation that
 * will run.
 */
import type { ProjectScope } from '../model/project-scope.ts';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import { vnfmError } from '../errors.ts';
import type { InfraDriver } from '../infra/infra-driver.ts';
import type { VimPlugins } from '../infra/vim-plugin.ts';
import type { HealCommand, InstantiateCommand, LcmCommand, ScaleCommand, TerminateCommand } from '../model/lcm-command.ts';
import { commandOf } from '../model/lcm-command.ts';
import type { OpOccRecord } from '../model/op-occ.ts';
import type { VnfInstanceRecord } from '../model/vnf-instance.ts';
import type { PackageService } from '../packages/package-service.ts';
import type { VnfPackageModel } from '../packages/vnfd-model.ts';
import type { Database } from '../store/schema.ts';
import type { VimConnection } from '../vims/vim-registry.ts';
import type { InstanceService, ModifyInstanceInput } from './instance-service.ts';
import { type InstancePatch, updateInstanceRow } from './instance-state.ts';
import type { OpOccStates } from './op-occ-state.ts';
import { findByOrigin, getOpOcc, isOriginViolation } from './op-occ-repo.ts';
import { handlerFor } from './operations/index.ts';
import type { MgmtRunner } from '../mgmt/mgmt-driver.ts';
import type { MgmtStore } from './mgmt-context.ts';
import { modifyInfo } from './operations/modify-info.ts';

/** How a command was asked for. */
export interface AcceptOptions {
  /** The facade that accepted it (links of its grant request point there). */
  apiVersion: 'v1' | 'v2';
  /** The request as received, echoed as `operationParams` (VIM credentials are removed here). */
  params: Record<string, unknown>;
  /** Started by the VNFM itself (auto-heal), not by an API client. */
  automatic?: boolean;
  /**
   * Idempotency key of the creator (e.g. `autoheal-batch:<id>`): when an op occ with this origin
   * exists, it is returned and nothing new is created.
   */
  origin?: string;
  /** The VIMs a request may name by `vimId` (another project's VIM is answered as not registered). @default every project */
  vimScope?: ProjectScope;
}

/** Accepts LCM operations and task requests. */
export class LcmService {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly instances: InstanceService,
    private readonly packages: PackageService,
    private readonly states: OpOccStates,
    private readonly log: Logger,
    private readonly wake: () => void,
    /** The infra driver of a VIM type (undefined: not supported); without it every type is accepted. */
    private readonly driverOf?: (vimType: string) => InfraDriver | undefined,
    /**
     * Management drivers (request validation at acceptance) and the sealing of request secrets;
     * the VIM plugins (the default VIM of a package's kind, the supported types).
     */
    private readonly mgmt?: { mgmt: MgmtRunner; mgmtStore: MgmtStore; serverNotifiers?: { resolve(ref: { id?: string; uri?: string }, vimIds: readonly string[]): Promise<unknown> }; vimPlugins?: VimPlugins },
  ) {}

  private hasDriver(vimType: string): boolean {
    return this.driverOf === undefined || this.driverOf(vimType) !== undefined;
  }

  /** The parsed VNFD of an instance's package. */
  async vnfdOf(inst: VnfInstanceRecord): Promise<VnfPackageModel> {
    return this.packages.vnfd(inst.vnfPkgId);
  }

  /** Validates `command` with its operation's checks, then creates its op occ; see {@link AcceptOptions}. */
  private async start(id: string, command: Exclude<LcmCommand, { operation: 'MODIFY_INFO' }>, o: AcceptOptions, prepare?: (inst: VnfInstanceRecord, vnfd: VnfPackageModel) => Promise<InstancePatch | undefined>): Promise<OpOccRecord> {
    if (o.origin) {
      const existing = await findByOrigin(this.db, o.origin);
      if (existing) return existing;
    }
    const inst = await this.instances.get(id);
    const vnfd = await this.vnfdOf(inst);
    const handler = handlerFor(command.operation);
    let accepted = handler.accept(inst, vnfd, command as never) as typeof command;
    const instanceUpdate = prepare ? await prepare(inst, vnfd) : undefined;
    let params = o.params;
    if (this.mgmt) {
      // Built-in management drivers check their parameters and refuse what they cannot do (400/422)
      // before any op occ exists.
      const flavourId = command.operation === 'INSTANTIATE' ? command.flavourId : inst.instantiatedVnfInfo?.flavourId;
      const flavour = flavourId ? vnfd.flavours[flavourId] : undefined;
      if (flavour) {
        await this.mgmt.mgmt.validate({
          command: accepted,
          instance: inst,
          vnfd,
          flavour,
          params: (accepted as { additionalParams?: Record<string, unknown> }).additionalParams ?? {},
          instantiateParams: command.operation === 'INSTANTIATE' ? {} : await this.mgmt.mgmtStore.instantiateParams(inst.id),
          files: () => this.packages.files(inst.vnfPkgId),
        });
      }
      // Secrets of the request (SSH passwords, keys, tokens) are stored sealed: shown as ****,
      // opened only for the management drivers.
      accepted = this.mgmt.mgmtStore.seal(accepted);
      params = this.mgmt.mgmtStore.seal(params);
    }
    let opId = '';
    try {
      await this.db.transaction().execute(async (tx) => {
        const op = await this.states.create(tx, { instance: inst, operation: command.operation, command: accepted, params, apiVersion: o.apiVersion, automatic: o.automatic ?? false, state: 'STARTING', pending: 'run', ...(o.origin ? { origin: o.origin } : {}) });
        opId = op.id;
        if (instanceUpdate) await updateInstanceRow(tx, inst.id, inst.rev, instanceUpdate);
      });
    } catch (e) {
      // Another process created the op of this origin meanwhile: that one is the op.
      const existing = o.origin && isOriginViolation(e) ? await findByOrigin(this.db, o.origin) : undefined;
      if (existing) return existing;
      throw e;
    }
    this.log.info({ vnfInstanceId: inst.id, opOccId: opId, operation: command.operation }, 'lcm operation accepted');
    this.wake();
    return getOpOcc(this.db, opId);
  }

  /** InstantiateVnfRequest; `vimConnectionInfo` (with credentials) is sealed on the instance, never stored with the op. */
  async instantiate(id: string, command: InstantiateCommand, o: AcceptOptions & { vimConnectionInfo?: Record<string, Partial<VimConnection>> }): Promise<OpOccRecord> {
    const { vimConnectionInfo: _secret, ...params } = o.params;
    return this.start(id, command, { ...o, params: { ...params, ...(o.params.vimConnectionInfo !== undefined ? { vimConnectionInfo: redactVci(o.params.vimConnectionInfo) } : {}) } }, async (inst, vnfd) => {
      // VIM: from the request, else the instance, else the default VIM of the package's kind.
      let conns: Record<string, VimConnection> | undefined;
      if (o.vimConnectionInfo !== undefined) {
        conns = await this.instances.completeConnections({ ...(await this.instances.vimConnections(id)), ...o.vimConnectionInfo } as Record<string, Partial<VimConnection>>, o.vimScope);
      } else if (Object.keys(inst.vimConnectionInfo).length === 0) {
        // the VIM plugin that deploys the package's flavour
        const kind = this.mgmt?.vimPlugins?.kindForPackage(vnfd, command.flavourId);
        if (kind === undefined) throw vnfmError('VNFM_ERR_API_BAD_REQUEST', 'no vimConnectionInfo given and no default VIM registered');
        // the instance's project's default VIM, else the shared default
        const def = await this.instances.defaultVim(kind, inst.project ?? null);
        if (!def) throw vnfmError('VNFM_ERR_API_BAD_REQUEST', `no vimConnectionInfo given and no default ${kind} VIM registered`);
        conns = { vim1: def };
      }
      // The connections the op will use: the new ones, else the instance's (read once).
      const inUse = Object.values(conns ?? (await this.instances.vimConnections(id)));
      for (const c of inUse) {
        if (!this.hasDriver(c.vimType)) throw vnfmError('VNFM_ERR_INST_INVALID', `vimType ${c.vimType} is not supported; supported: ${(this.mgmt?.vimPlugins?.vimTypes() ?? []).join(', ')}`);
      }
      await this.checkServerNotifier(command, inUse);
      // The driver decides now whether the request deploys anything (e.g. a CNF whose
      // lcm-kubernetes-def-files name no VDU's workload: 422 instead of a FAILED_TEMP later).
      const first = inUse[0];
      const driver = first ? this.driverOf?.(first.vimType) : undefined;
      const flavour = vnfd.flavours[command.flavourId];
      if (driver?.deployedVdus && flavour) {
        await driver.deployedVdus({ instance: inst, command, vnfd, flavour, files: () => this.packages.files(inst.vnfPkgId) });
      }
      if (!conns) return undefined;
      const sealed = await this.instances.sealConnections(conns);
      return { vimConnectionInfo: sealed.info, vimSecrets: sealed.secrets };
    });
  }

  /**
   * A Server Notifier named by the request (`ServerNotifierUri` / `ServerNotifierId`) must be one an
   * admin registered for the VIM the instance is deployed on: otherwise 422, and nothing is sent.
   */
  private async checkServerNotifier(command: InstantiateCommand, inUse: VimConnection[]): Promise<void> {
    const ap = command.additionalParams ?? {};
    const uri = ap.ServerNotifierUri;
    const id = ap.ServerNotifierId;
    if ((uri === undefined || uri === null || uri === '') && (id === undefined || id === null || id === '')) return;
    if ((uri !== undefined && typeof uri !== 'string') || (id !== undefined && typeof id !== 'string')) throw vnfmError('VNFM_ERR_INST_INVALID', 'additionalParams.ServerNotifierUri and ServerNotifierId must be strings');
    if (!this.mgmt?.serverNotifiers) throw vnfmError('VNFM_ERR_INST_INVALID', 'this VNFM has no Server Notifier registrations; ServerNotifierUri cannot be used');
    const vimIds = inUse.map((c) => c.vimId).filter((v): v is string => typeof v === 'string' && v !== '');
    await this.mgmt.serverNotifiers.resolve({ ...(typeof id === 'string' && id !== '' ? { id } : {}), ...(typeof uri === 'string' && uri !== '' ? { uri } : {}) }, vimIds);
  }

  /** TerminateVnfRequest. */
  async terminate(id: string, command: TerminateCommand, o: AcceptOptions): Promise<OpOccRecord> {
    return this.start(id, command, o);
  }

  /** ScaleVnfRequest: aspect and level validated against the VNFD. */
  async scale(id: string, command: ScaleCommand, o: AcceptOptions): Promise<OpOccRecord> {
    return this.start(id, command, o);
  }

  /** HealVnfRequest: unknown VNFCs -> 422 naming them. */
  async heal(id: string, command: HealCommand, o: AcceptOptions): Promise<OpOccRecord> {
    return this.start(id, command, o);
  }

  /** VnfInfoModificationRequest: a MODIFY_INFO op occ completed at once. */
  async modifyInfo(id: string, patch: ModifyInstanceInput, apiVersion: 'v1' | 'v2', scopes: { packages?: ProjectScope; vims?: ProjectScope } = {}): Promise<OpOccRecord> {
    return modifyInfo({ db: this.db, instances: this.instances, states: this.states, log: this.log }, id, patch, apiVersion, scopes);
  }

  /** retry: FAILED_TEMP -> PROCESSING, continue from the failed step. */
  async retry(opId: string): Promise<OpOccRecord> {
    return this.task(opId, 'retry');
  }

  /** rollback: FAILED_TEMP -> ROLLING_BACK, for operations that have a rollback (others 409/422 at once). */
  async rollback(opId: string): Promise<OpOccRecord> {
    const op = await getOpOcc(this.db, opId);
    if (op.operationState !== 'FAILED_TEMP') throw vnfmError('VNFM_ERR_OPOCC_STATE', `VnfLcmOpOcc ${opId} is ${op.operationState}, not FAILED_TEMP.`);
    const rb = op.operation === 'MODIFY_INFO' ? undefined : handlerFor(op.operation).rollback;
    const refused = rb ? rb.refused(commandOf(op) as never) : `Rollback of ${op.operation} is not supported; retry it or fail it.`;
    if (refused) throw vnfmError('VNFM_ERR_OPOCC_UNSUPPORTED', refused);
    return this.task(opId, 'rollback');
  }

  private async task(opId: string, kind: 'retry' | 'rollback'): Promise<OpOccRecord> {
    await this.db.transaction().execute((tx) => this.states.resumed(tx, opId, kind));
    this.log.info({ opOccId: opId, task: kind }, 'lcm task accepted');
    this.wake();
    return getOpOcc(this.db, opId);
  }

  /** fail: FAILED_TEMP -> FAILED (synchronous). */
  async fail(opId: string): Promise<OpOccRecord> {
    await this.db.transaction().execute((tx) => this.states.failed(tx, opId));
    this.log.info({ opOccId: opId }, 'lcm operation failed by request');
    return getOpOcc(this.db, opId);
  }

  /**
   * v1 cancel (SOL003 2.6.1 5.4.17): only a STARTING or PROCESSING op; marks it cancel pending
   * (`isCancelPending`, `cancelMode`) in one conditional update, so an op that finished meanwhile
   * is answered 409 and never shows a pending cancel. The runner acts at the next step boundary:
   * a STARTING op (not granted yet) ends ROLLED_BACK, a PROCESSING one FAILED_TEMP (retry or fail
   * then). Both modes let the VIM operation in flight finish (FORCEFUL does not abort it).
   */
  async cancel(opId: string, mode: string): Promise<OpOccRecord> {
    await this.states.cancelRequested(this.db, opId, mode);
    this.log.info({ opOccId: opId, cancelMode: mode }, 'lcm operation cancel requested');
    this.wake();
    return getOpOcc(this.db, opId);
  }
}

function redactVci(v: unknown): unknown {
  const strip = (c: Record<string, unknown>) => {
    const { accessInfo: _a, ...rest } = c;
    return rest;
  };
  if (Array.isArray(v)) return v.map((c) => strip(c as Record<string, unknown>));
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v as Record<string, Record<string, unknown>>).map(([k, c]) => [k, strip(c ?? {})]));
  return v;
}

