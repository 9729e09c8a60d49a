/** Health of a VNFC as observed: the VIM's view kept in vnfcResourceInfo.metadata, vnfcState, and open faults of the auto-heal ledger. */
import type { VnfcInfo, VnfcResourceInfo, VnfInstance } from './api.ts';

export type Health = 'healthy' | 'unhealthy' | 'stopped' | 'faulty';

/** One row of the VNFM's VNFC health model (`GET /vnfm/v1/vnfc_health`, `/vnfm/v1/vnf_instances/{id}/health`). */
export interface VnfcHealthRow {
  vnfInstanceId: string;
  vnfcInfoId: string;
  vnfcResourceInfoId: string;
  resourceId: string | null;
  condition: 'healthy' | 'degraded' | 'faulty' | 'unknown';
  reason: string | null;
  detail?: string | null;
  source: string;
  since: string;
}

/** What the health model says of a VNFC, as a badge value and a title (reason, source, since). */
export function modelHealth(row: VnfcHealthRow | undefined): { value: string; title: string } | undefined {
  if (!row) return undefined;
  const parts = [row.reason, row.detail, `by ${row.source}`, `since ${new Date(row.since).toLocaleString()}`].filter(Boolean);
  return { value: row.condition, title: parts.join(' · ') };
}

/** Fault notification states that mean "reported and not healed yet". */
export const OPEN_FAULT_STATES: ReadonlySet<string> = new Set(['open', 'packed', 'suppressed', 'held', 'waiting']);

export function healthOf(info: VnfcInfo, res: VnfcResourceInfo | undefined, faulty: boolean): Health {
  if (faulty) return 'faulty';
  const m = (res?.metadata ?? {}) as Record<string, unknown>;
  if (m.ready === false || (typeof m.podPhase === 'string' && m.podPhase !== 'Running')) return 'unhealthy';
  if (typeof m.status === 'string' && /ERROR|SHUTOFF|FAULT/i.test(m.status)) return 'unhealthy';
  if (info.vnfcState === 'STOPPED') return 'stopped';
  return 'healthy';
}

/**
 * VNFC counts by health of an instance (without the ledger: what the instance itself says);
 * VNFCs in `counted` (vnfcResourceInfo ids the health model already counts) are left out.
 */
export function healthCounts(i: VnfInstance, counted: ReadonlySet<string> = new Set()): Record<Health, number> & { total: number } {
  const out = { healthy: 0, unhealthy: 0, stopped: 0, faulty: 0, total: 0 };
  const res = new Map((i.instantiatedVnfInfo?.vnfcResourceInfo ?? []).map((r) => [r.id, r]));
  for (const c of i.instantiatedVnfInfo?.vnfcInfo ?? []) {
    if (counted.has(c.vnfcResourceInfoId)) {
      out.total++;
      continue;
    }
    out[healthOf(c, res.get(c.vnfcResourceInfoId), false)]++;
    out.total++;
  }
  return out;
}

/** Where a VNFC runs: the Kubernetes node, the compute host, or the zone. */
export function hostOf(res: VnfcResourceInfo | undefined): string {
  const m = (res?.metadata ?? {}) as Record<string, unknown>;
  for (const k of ['nodeName', 'host', 'hostId', 'hypervisor_hostname']) if (typeof m[k] === 'string' && m[k]) return m[k] as string;
  return res?.zoneId ?? '—';
}

/** The CP addresses of a VNFC: `cpdId: address, ...`. */
export function addressesOf(res: VnfcResourceInfo | undefined): string[] {
  const out: string[] = [];
  for (const cp of res?.vnfcCpInfo ?? []) {
    for (const p of cp.cpProtocolInfo ?? []) {
      for (const a of p.ipOverEthernet?.ipAddresses ?? []) for (const x of a.addresses ?? []) out.push(`${cp.cpdId}: ${x}`);
    }
  }
  const m = (res?.metadata ?? {}) as Record<string, unknown>;
  if (out.length === 0 && typeof m.podIP === 'string') out.push(`pod: ${m.podIP}`);
  return out;
}
