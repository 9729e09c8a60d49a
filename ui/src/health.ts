/** Health of a VNFC as observed: the VIM's view kept in vnfcResourceInfo.metadata, vnfcState, and open faults of the auto-heal ledger. */
import type { VnfcInfo, VnfcResourceInfo, VnfInstance } from './api.ts';

export type Health = 'healthy' | 'unhealthy' | 'stopped' | 'faulty';

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

/** VNFC counts by health of an instance (without the ledger: what the instance itself says). */
export function healthCounts(i: VnfInstance): Record<Health, number> & { total: number } {
  const out = { healthy: 0, unhealthy: 0, stopped: 0, faulty: 0, total: 0 };
  const res = new Map((i.instantiatedVnfInfo?.vnfcResourceInfo ?? []).map((r) => [r.id, r]));
  for (const c of i.instantiatedVnfInfo?.vnfcInfo ?? []) {
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
