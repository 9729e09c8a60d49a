/**
 * What the fault intake needs to know about a VNF instance to validate a notification, kept in
 * memory per instance and revalidated against the instance's `rev` (every operation, PATCH and
 * drift sync bumps it) once per intake group.
 *
 * Why: the instance row is large (`instantiated_vnf_info` holds every VNFC, storage and link) and
 * a fault storm sends many notifications for the same few instances. Reading and parsing the
 * whole row per notification made the instance lookup the main database cost of the intake. Here
 * one statement per group checks the `rev` of every instance the group names and, only for those
 * that changed, extracts the few fields validation needs with jsonb operators inside the
 * database, so nothing large crosses the session.
 */
import { type Kysely, sql } from 'kysely';
import type { Database } from '../store/schema.ts';

/** The VNFC running on one server, as validation needs it. */
export interface ServerFacts {
  /** `vnfcResourceInfo.id`. */
  vnfcResourceInfoId: string;
  /** The Server Notifier alarm registered for it (`metadata.server_notification.alarmId`). */
  alarmId: string | undefined;
  /** The `vnfcInfo.id` pointing at that resource, if any. */
  vnfcInfoId: string | undefined;
}

/** Validation facts of one instance at one `rev`. */
export interface InstanceFacts {
  id: string;
  rev: number;
  /** INSTANTIATED with an instantiatedVnfInfo. */
  instantiated: boolean;
  /** `vnfConfigurableProperties.isAutohealEnabled` is true. */
  autohealEnabled: boolean;
  /** Fault ids the instance accepts (see `configuredFaultIds`). */
  faultIds: readonly string[];
  /** Server id -> the first VNFC resource running on it. */
  servers: ReadonlyMap<string, ServerFacts>;
}

interface FactsRow {
  state: string | null;
  hasInfo: boolean | null;
  autoheal: unknown;
  mdFault: unknown;
  infoFault: unknown;
  opFault: unknown;
  res: [string | null, string | null, unknown][] | null;
  vnfcs: [string | null, string | null][] | null;
}

function asIdList(v: unknown): string[] | undefined {
  if (typeof v === 'string') return [v];
  if (Array.isArray(v)) return v.filter((x): x is string => typeof x === 'string');
  return undefined;
}

function alarmOf(sn: unknown): string | undefined {
  if (!sn || typeof sn !== 'object') return undefined;
  const a = (sn as { alarmId?: unknown }).alarmId;
  return typeof a === 'string' ? a : undefined;
}

function factsFrom(id: string, rev: number, f: FactsRow): InstanceFacts {
  const vnfcByRes = new Map<string, string>();
  for (const [vid, resId] of f.vnfcs ?? []) if (vid !== null && resId !== null && !vnfcByRes.has(resId)) vnfcByRes.set(resId, vid);
  const servers = new Map<string, ServerFacts>();
  for (const [resId, serverId, sn] of f.res ?? []) {
    if (serverId === null || servers.has(serverId)) continue;
    servers.set(serverId, { vnfcResourceInfoId: resId ?? '', alarmId: alarmOf(sn), vnfcInfoId: resId === null ? undefined : vnfcByRes.get(resId) });
  }
  return {
    id,
    rev,
    instantiated: f.state === 'INSTANTIATED' && f.hasInfo === true,
    autohealEnabled: f.autoheal === true || f.autoheal === 'true',
    faultIds: asIdList(f.mdFault) ?? asIdList(f.infoFault) ?? asIdList((f.opFault as { ServerNotifierFaultID?: unknown } | null)?.ServerNotifierFaultID) ?? [],
    servers,
  };
}

/** Per-process cache of {@link InstanceFacts}, revalidated by `rev`. */
export class InstanceFactsCache {
  private readonly cache = new Map<string, InstanceFacts>();

  constructor(
    private readonly db: Kysely<Database>,
    private readonly maxEntries = 20_000,
  ) {}

  /**
   * Current facts of the given instances, in ONE statement: instances whose `rev` is still the
   * cached one come from the cache, the others are read (small columns only). Instances that do
   * not exist are absent from the result.
   */
  async lookup(ids: readonly string[]): Promise<Map<string, InstanceFacts>> {
    const unique = [...new Set(ids)];
    // The entries the statement is checked against (the cache may change while it runs).
    const had = new Map(unique.map((id) => [id, this.cache.get(id)]));
    const revs: Record<string, number> = {};
    for (const [id, f] of had) if (f) revs[id] = f.rev;
    // migration 101_autoheal_intake
    const res = await sql<{ o_id: string; o_rev: number; o_facts: FactsRow | null }>`
      select * from autoheal_intake_facts(${unique}::text[], ${JSON.stringify(revs)}::jsonb)`.execute(this.db);
    const out = new Map<string, InstanceFacts>();
    for (const r of res.rows) {
      // No facts means the rev is the one we had: the cached entry is current.
      const f = r.o_facts ? factsFrom(r.o_id, r.o_rev, r.o_facts) : (had.get(r.o_id) as InstanceFacts);
      if (r.o_facts) this.remember(f);
      out.set(r.o_id, f);
    }
    for (const id of unique) if (!out.has(id)) this.cache.delete(id);
    return out;
  }

  /** Forgets everything (tests). */
  clear(): void {
    this.cache.clear();
  }

  private remember(f: InstanceFacts): void {
    this.cache.delete(f.id);
    if (this.cache.size >= this.maxEntries) this.cache.delete(this.cache.keys().next().value as string);
    this.cache.set(f.id, f);
  }
}
