/**
 * Built-in management driver that keeps a Server Notifier's alarm registrations in step with the
 * servers of a VNF, so that the VIM-side monitor reports server faults to the VNFM's fault
 * intake (auto-heal). Enabled for an instance instantiated with
 * `additionalParams.ServerNotifierUri` and `ServerNotifierFaultID` (Tacker's parameters).
 *
 * Hooks (the same as Tacker's sample driver):
 * - `instantiate_end`, `scale_end` (SCALE_OUT), `heal_end`: register every server that has no
 *   registration for its current server id, store `{alarmId, serverId}` in
 *   `vnfcResourceInfo.metadata.server_notification`. `instantiate_end` also keeps the URI and
 *   fault ids in the instance `metadata` for later operations.
 * - `terminate_start` (all), `scale_start` (SCALE_IN: the removed servers), `heal_start` (the
 *   targets): unregister before the servers go away.
 * - `instantiate_rollback_start`, `scale_rollback_start`: unregister what this operation registered.
 *
 * Every registration and removal is journaled in the op's persisted driver state before the next
 * one starts, so a retry continues where the failure happened (no second alarm for a server, no
 * missing one) and a rollback knows exactly what to remove.
 *
 * The removal hooks are idempotent by construction (an alarm DELETE answered 404 is done, removals
 * are journaled), so the driver declares them so ({@link ServerNotifierMgmtDriver.idempotent}):
 * when the VNFM dies inside one, the restarted VNFM resumes the step by itself instead of leaving
 * the operation (often an automatic heal) FAILED_TEMP for a person.
 */
import { vnfmError } from '../../../errors.ts';
import { KeystoneAuth, keystoneAuthOptionsOf, keystoneCredentialsOf, keystoneSessionKey } from '../../../infra/openstack/keystone-auth.ts';
import type { OutboundGuard } from '../../../net/outbound.ts';
import { fetchForVimTls } from '../../../net/tls-fetch.ts';
import type { VnfcResourceInfo } from '../../../model/vnf-instance.ts';
import type { VimConnection } from '../../../vims/vim-registry.ts';
import type { HookName, MgmtContext, MgmtDriver, MgmtResult } from '../../mgmt-driver.ts';
import { type AlarmClientOptions, ServerNotifierClient } from './alarm-client.ts';

/** Instance metadata keys holding the Server Notifier settings (Tacker's names). */
export const SERVER_NOTIFIER_KEYS = { uri: 'ServerNotifierUri', id: 'ServerNotifierId', faultIds: 'ServerNotifierFaultID' } as const;

/** A Server Notifier registered by an admin, as the driver needs it. */
export interface RegisteredNotifier {
  id: string;
  uri: string;
  sendToken: boolean;
}

/**
 * Resolves the notifier a request or an instance names to its registration for one of `vimIds`;
 * throws (422) when it is not registered for them. Only registered notifiers are ever called.
 */
export type NotifierResolver = (ref: { id?: string; uri?: string }, vimIds: readonly string[]) => Promise<RegisteredNotifier>;

/** The key inside `vnfcResourceInfo.metadata` (Tacker's name). */
export const VNFC_ALARM_KEY = 'server_notification';

/** Options of {@link createServerNotifierMgmtDriver}. */
export interface ServerNotifierDriverOptions extends AlarmClientOptions {
  /** The registered notifiers (without it, no notifier is called: every hook that would is refused). */
  notifiers?: NotifierResolver;
  /** Options of the Keystone sessions (tests). */
  keystone?: { http?: import('../../../infra/openstack/http-retry.ts').HttpRetryOptions };
  /** The outbound rules of VIM endpoints, applied to every Keystone request (pinned). @default none */
  vimOutbound?: OutboundGuard;
}

/** One journal line per server. */
interface JournalEntry {
  vnfcResourceInfoId: string;
  alarmId?: string;
  state: 'registered' | 'unregistered' | 'unregister_failed';
  hook: HookName;
  at: string;
}

/** The driver's persisted state in one op. */
interface Journal {
  uri?: string;
  notifierId?: string;
  faultIds?: string[];
  entries: Record<string, JournalEntry>;
}

const HANDLED = new Set<HookName>(['instantiate_end', 'instantiate_rollback_start', 'terminate_start', 'scale_start', 'scale_end', 'scale_rollback_start', 'heal_start', 'heal_end']);

/**
 * Hooks that only remove alarms: repeating them after an interruption is safe (a removal already
 * made answers 404, which counts as done; each removal is journaled). Registration hooks are not:
 * a POST repeated after a lost answer would leave an orphan alarm.
 */
const REMOVAL_HOOKS = new Set<HookName>(['instantiate_rollback_start', 'terminate_start', 'scale_start', 'scale_rollback_start', 'heal_start']);

function str(v: unknown): string | undefined {
  return typeof v === 'string' && v !== '' ? v : undefined;
}

function idList(v: unknown): string[] | undefined {
  if (typeof v === 'string' && v !== '') return [v];
  if (Array.isArray(v)) {
    const l = v.filter((x): x is string => typeof x === 'string' && x !== '');
    return l.length ? l : undefined;
  }
  return undefined;
}

/** The registration recorded on a VNFC, if any. */
export function registrationOf(r: Pick<VnfcResourceInfo, 'metadata'>): { alarmId: string; serverId?: string } | undefined {
  const sn = r.metadata?.[VNFC_ALARM_KEY];
  if (!sn || typeof sn !== 'object') return undefined;
  const alarmId = str((sn as Record<string, unknown>).alarmId);
  if (!alarmId) return undefined;
  const serverId = str((sn as Record<string, unknown>).serverId);
  return serverId ? { alarmId, serverId } : { alarmId };
}

/** True when a VNFC has no valid registration for its current server. */
function needsRegistration(r: VnfcResourceInfo): boolean {
  const reg = registrationOf(r);
  return !reg || (reg.serverId !== undefined && reg.serverId !== r.computeResource.resourceId);
}

/** The Server Notifier settings in force for a hook (a notifier named by uri and/or id), or undefined when the driver is off. */
function settingsOf(ctx: MgmtContext, journal: Journal | undefined): { uri?: string; id?: string; faultIds: string[] } | undefined {
  if (ctx.hook.startsWith('instantiate_')) {
    const ap = ctx.command.operation === 'INSTANTIATE' ? ctx.command.additionalParams : {};
    const uri = str(ap[SERVER_NOTIFIER_KEYS.uri]);
    const id = str(ap[SERVER_NOTIFIER_KEYS.id]);
    const faultIds = idList(ap[SERVER_NOTIFIER_KEYS.faultIds]);
    if ((uri || id) && faultIds) return { ...(uri ? { uri } : {}), ...(id ? { id } : {}), faultIds };
  }
  const md = ctx.instance.metadata ?? {};
  const imd = ctx.instance.instantiatedVnfInfo?.metadata ?? {};
  const uri = str(md[SERVER_NOTIFIER_KEYS.uri]) ?? str(imd[SERVER_NOTIFIER_KEYS.uri]) ?? journal?.uri;
  const id = str(md[SERVER_NOTIFIER_KEYS.id]) ?? str(imd[SERVER_NOTIFIER_KEYS.id]) ?? journal?.notifierId;
  const faultIds = idList(md[SERVER_NOTIFIER_KEYS.faultIds]) ?? idList(imd[SERVER_NOTIFIER_KEYS.faultIds]) ?? journal?.faultIds;
  return (uri || id) && faultIds ? { ...(uri ? { uri } : {}), ...(id ? { id } : {}), faultIds } : undefined;
}

function journalOf(ctx: MgmtContext): Journal | undefined {
  return ctx.state.serverNotifier as Journal | undefined;
}

/** The alarm registration driver. */
export class ServerNotifierMgmtDriver implements MgmtDriver {
  readonly name = 'server-notifier';
  private readonly sessions = new Map<string, KeystoneAuth>();

  constructor(private readonly opts: ServerNotifierDriverOptions = {}) {}

  applies(ctx: MgmtContext): boolean {
    if (!HANDLED.has(ctx.hook)) return false;
    const journal = journalOf(ctx);
    if (ctx.hook.endsWith('_rollback_start')) return Object.values(journal?.entries ?? {}).some((e) => e.state === 'registered');
    const scaleType = ctx.command.operation === 'SCALE' ? ctx.command.type : undefined;
    if (ctx.hook === 'scale_start' && scaleType !== 'SCALE_IN') return false;
    if (ctx.hook === 'scale_end' && scaleType !== 'SCALE_OUT') return false;
    return settingsOf(ctx, journal) !== undefined;
  }

  /** Alarm removal hooks are idempotent (404 = done, journaled): a crash inside them is resumed automatically. */
  idempotent(ctx: MgmtContext): boolean {
    return REMOVAL_HOOKS.has(ctx.hook);
  }

  async run(ctx: MgmtContext): Promise<MgmtResult | undefined> {
    const journal: Journal = (ctx.state.serverNotifier as Journal | undefined) ?? { entries: {} };
    ctx.state.serverNotifier = journal;
    const settings = settingsOf(ctx, journal);
    if (settings) {
      if (settings.uri !== undefined) journal.uri = settings.uri;
      else delete journal.uri;
      if (settings.id !== undefined) journal.notifierId = settings.id;
      else delete journal.notifierId;
      journal.faultIds = settings.faultIds;
    }
    if (!journal.uri && !journal.notifierId) return;
    // Only a notifier an admin registered for this instance's VIM is ever called (checked on every
    // hook: the instance metadata naming it can change after the request was accepted).
    const notifier = await this.resolve(ctx, journal);
    const client = this.client(ctx, notifier);
    const vnfcs = ctx.instance.instantiatedVnfInfo?.vnfcResourceInfo ?? [];
    switch (ctx.hook) {
      case 'instantiate_end': {
        const r = await this.registerAll(ctx, client, journal, vnfcs);
        return { ...r, metadata: { [SERVER_NOTIFIER_KEYS.uri]: journal.uri ?? notifier.uri, ...(journal.notifierId ? { [SERVER_NOTIFIER_KEYS.id]: journal.notifierId } : {}), [SERVER_NOTIFIER_KEYS.faultIds]: journal.faultIds ?? [] } };
      }
      case 'scale_end':
      case 'heal_end':
        return this.registerAll(ctx, client, journal, vnfcs);
      case 'terminate_start': {
        await this.unregisterAll(ctx, client, journal, vnfcs);
        // Later instantiations bring their own settings.
        return { metadata: { [SERVER_NOTIFIER_KEYS.uri]: null, [SERVER_NOTIFIER_KEYS.id]: null, [SERVER_NOTIFIER_KEYS.faultIds]: null } };
      }
      case 'scale_start':
        return this.unregisterAll(ctx, client, journal, this.removedServers(ctx, vnfcs));
      case 'heal_start':
        return this.unregisterAll(ctx, client, journal, this.healTargets(ctx, vnfcs));
      case 'instantiate_rollback_start':
      case 'scale_rollback_start':
        await this.rollback(ctx, client, journal);
        return;
      default:
        return;
    }
  }

  /** vnfcResourceInfo ids with their new registration, keyed by id and by server id. */
  private async registerAll(ctx: MgmtContext, client: ServerNotifierClient, journal: Journal, vnfcs: VnfcResourceInfo[]): Promise<MgmtResult> {
    const out: Record<string, Record<string, unknown>> = {};
    const faultIds = journal.faultIds ?? [];
    for (const r of vnfcs) {
      const serverId = r.computeResource.resourceId;
      const prior = journal.entries[serverId];
      let alarmId: string | undefined = prior?.state === 'registered' ? prior.alarmId : undefined;
      if (!alarmId) {
        if (!needsRegistration(r)) continue;
        const faultAction = `${ctx.publicUrl}${ctx.config.faultNotification.prefix}/vnf_instances/${ctx.instance.id}/servers/${serverId}/notify`;
        alarmId = await client.register(serverId, faultAction, faultIds);
        journal.entries[serverId] = { vnfcResourceInfoId: r.id, alarmId, state: 'registered', hook: ctx.hook, at: new Date().toISOString() };
        await ctx.checkpoint();
        ctx.log.info({ hook: ctx.hook, serverId, vnfcResourceInfoId: r.id }, 'server registered with the Server Notifier');
      }
      const value = { [VNFC_ALARM_KEY]: { alarmId, serverId } };
      out[r.id] = value;
      // Also keyed by server id: new VNFCs may get their final id only when the engine rebuilds
      // the instance after this hook.
      out[serverId] = value;
    }
    return Object.keys(out).length ? { vnfcMetadata: out } : {};
  }

  private async unregisterAll(ctx: MgmtContext, client: ServerNotifierClient, journal: Journal, vnfcs: VnfcResourceInfo[]): Promise<MgmtResult> {
    const out: Record<string, Record<string, unknown>> = {};
    for (const r of vnfcs) {
      const serverId = r.computeResource.resourceId;
      const prior = journal.entries[serverId];
      const alarmId = prior?.state === 'registered' ? prior.alarmId : registrationOf(r)?.alarmId;
      if (prior && prior.state !== 'registered') {
        out[r.id] = { [VNFC_ALARM_KEY]: null };
        continue;
      }
      if (!alarmId) continue;
      await this.unregisterOne(ctx, client, journal, serverId, r.id, alarmId);
      out[r.id] = { [VNFC_ALARM_KEY]: null };
    }
    return Object.keys(out).length ? { vnfcMetadata: out } : {};
  }

  private async unregisterOne(ctx: MgmtContext, client: ServerNotifierClient, journal: Journal, serverId: string, vnfcResourceInfoId: string, alarmId: string): Promise<void> {
    let state: JournalEntry['state'] = 'unregistered';
    try {
      const r = await client.unregister(serverId, alarmId);
      ctx.log.info({ hook: ctx.hook, serverId, result: r }, 'server unregistered from the Server Notifier');
    } catch (e) {
      // The server is going away anyway; a left-over alarm only produces notifications the
      // intake rejects (its alarm id matches no VNFC). Do not block the operation for it.
      state = 'unregister_failed';
      ctx.log.warn({ hook: ctx.hook, serverId, error: (e as Error).message }, 'could not unregister the server from the Server Notifier; continuing');
    }
    journal.entries[serverId] = { vnfcResourceInfoId, alarmId, state, hook: ctx.hook, at: new Date().toISOString() };
    await ctx.checkpoint();
  }

  private async rollback(ctx: MgmtContext, client: ServerNotifierClient, journal: Journal): Promise<void> {
    for (const [serverId, e] of Object.entries(journal.entries)) {
      if (e.state !== 'registered' || !e.alarmId) continue;
      await this.unregisterOne(ctx, client, journal, serverId, e.vnfcResourceInfoId, e.alarmId);
    }
  }

  /** Servers a SCALE_IN removes: COMPUTE removeResources of the grant request. */
  private removedServers(ctx: MgmtContext, vnfcs: VnfcResourceInfo[]): VnfcResourceInfo[] {
    const ids = new Set<string>();
    for (const src of [ctx.grantRequest, ctx.grant]) {
      for (const rd of ((src?.removeResources ?? []) as { type?: string; id?: string; resource?: { resourceId?: string } }[])) {
        if (rd.type && rd.type !== 'COMPUTE') continue;
        if (rd.resource?.resourceId) ids.add(rd.resource.resourceId);
        if (rd.id) ids.add(rd.id);
      }
      if (ids.size) break;
    }
    if (ids.size === 0) ctx.log.warn({ hook: ctx.hook }, 'scale-in: no removed servers in the grant request; no alarm unregistered');
    return vnfcs.filter((r) => ids.has(r.computeResource.resourceId) || ids.has(r.id));
  }

  /** Heal targets: the VNFCs named by the heal (vnfcInfo ids), else every VNFC. */
  private healTargets(ctx: MgmtContext, vnfcs: VnfcResourceInfo[]): VnfcResourceInfo[] {
    if (ctx.command.operation !== 'HEAL' || ctx.command.scope !== 'vnfcs') return vnfcs;
    const info = ctx.instance.instantiatedVnfInfo?.vnfcInfo ?? [];
    const wanted = new Set(ctx.command.vnfcInfoIds.map((id) => info.find((v) => v.id === id)?.vnfcResourceInfoId ?? id));
    return vnfcs.filter((r) => wanted.has(r.id));
  }

  private async resolve(ctx: MgmtContext, journal: Journal): Promise<RegisteredNotifier> {
    const resolver = this.opts.notifiers;
    if (!resolver) throw vnfmError('VNFM_ERR_MGMT_REFUSED', 'Server Notifier: no registered Server Notifiers are available to this driver; nothing was sent');
    const vimId = ctx.vim?.vimId;
    try {
      return await resolver({ ...(journal.notifierId ? { id: journal.notifierId } : {}), ...(journal.uri ? { uri: journal.uri } : {}) }, vimId ? [vimId] : []);
    } catch (e) {
      throw vnfmError('VNFM_ERR_MGMT_REFUSED', `Server Notifier: ${(e as Error).message}; nothing was sent`);
    }
  }

  private client(ctx: MgmtContext, notifier: RegisteredNotifier): ServerNotifierClient {
    const uri = notifier.uri;
    const vim = ctx.vim;
    // The VIM's token only when the registration asks for it (the narrowest credential that works).
    const auth = vim && notifier.sendToken ? this.keystone(vim) : undefined;
    const ai = vim?.accessInfo ?? {};
    const tenant = str(ai.project) ?? str(ai.projectName) ?? str(ai.tenant) ?? str(ai.projectId) ?? str(ai.tenantId);
    if (!tenant) throw vnfmError('VNFM_ERR_MGMT_FAILED', 'Server Notifier: the VIM connection names no project (accessInfo.project), which is the tenant of the alarm API');
    return new ServerNotifierClient(uri, tenant, async () => (auth ? auth.getToken() : undefined), { ...this.opts, signal: ctx.signal });
  }

  /** A cached Keystone session for a VIM connection with Keystone credentials, else undefined. */
  private keystone(vim: VimConnection): KeystoneAuth | undefined {
    const ii = vim.interfaceInfo ?? {};
    const creds = keystoneCredentialsOf(vim);
    const { authUrl, username, password, projectName, projectId } = creds;
    if (!authUrl || !/^https?:\/\//.test(authUrl) || !username || password === undefined || (!projectName && !projectId)) return undefined;
    const vimTls = fetchForVimTls(ii);
    const tlsFetchOf = this.opts.vimOutbound ? this.opts.vimOutbound.fetch(vimTls ?? this.opts.keystone?.http?.fetch) : vimTls;
    const key = keystoneSessionKey(creds, [ii.skipCertificateVerification ?? null, ii.ssl_ca_cert ?? ii.caCert ?? null]);
    let auth = this.sessions.get(key);
    if (!auth) {
      auth = new KeystoneAuth({
        ...keystoneAuthOptionsOf({ ...creds, authUrl, username, password }),
        ...(this.opts.keystone?.http || tlsFetchOf ? { http: { ...(this.opts.keystone?.http ?? {}), ...(tlsFetchOf ? { fetch: tlsFetchOf } : {}) } } : {}),
      });
      this.sessions.set(key, auth);
    }
    return auth;
  }
}

/** Creates the built-in Server Notifier alarm registration driver. */
export function createServerNotifierMgmtDriver(opts: ServerNotifierDriverOptions = {}): ServerNotifierMgmtDriver {
  return new ServerNotifierMgmtDriver(opts);
}

