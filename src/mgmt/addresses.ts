/**
 * Addresses of a VNFC's connection points as the infra drivers observed them, for management
 * drivers that reach into a VNF (SSH to a VM, a node's cluster address).
 *
 * The engine keeps, per VNFC, `vnfcResourceInfo.metadata.cpAddresses`: CPD id -> `{fixed,
 * floating}` (fixed = the port's own addresses, floating = NAT addresses associated with it). The
 * SOL `cpProtocolInfo` carries the same addresses but cannot say which are floating.
 */
import type { VnfInstanceRecord, VnfcResourceInfo } from '../model/vnf-instance.ts';

/** The addresses of one CP of a VNFC. */
export interface CpAddresses {
  cpdId: string;
  fixed: string[];
  floating: string[];
}

function strings(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}

/** Every CP of a VNFC with its addresses (CPs without any address included, with empty lists). */
export function vnfcAddresses(vnfc: VnfcResourceInfo): CpAddresses[] {
  const out = new Map<string, CpAddresses>();
  const recorded = vnfc.metadata?.cpAddresses;
  if (recorded && typeof recorded === 'object') {
    for (const [cpdId, v] of Object.entries(recorded as Record<string, unknown>)) {
      const o = (v ?? {}) as { fixed?: unknown; floating?: unknown };
      out.set(cpdId, { cpdId, fixed: strings(o.fixed), floating: strings(o.floating) });
    }
  }
  // Fallback for VNFCs recorded before cpAddresses existed: every SOL address counts as fixed.
  for (const cp of vnfc.vnfcCpInfo ?? []) {
    if (out.has(cp.cpdId)) continue;
    const fixed: string[] = [];
    for (const pi of cp.cpProtocolInfo ?? []) for (const ip of pi.ipOverEthernet?.ipAddresses ?? []) fixed.push(...ip.addresses);
    out.set(cp.cpdId, { cpdId: cp.cpdId, fixed, floating: [] });
  }
  return [...out.values()];
}

/**
 * Which address of a CP a management driver connects to: `fixed` (the port's own address, as
 * Tacker does for a `ssh_cp_name` naming a port) or `floating` (the NAT address associated with it).
 */
export type CpAddressKind = 'fixed' | 'floating';

/**
 * The address to reach a VNFC by a name as Tacker's parameters give it (`ssh_cp_name`,
 * `nic_cp_name`, `cluster_cp_name`):
 * - the name of a CP: its first fixed address (Tacker reads the port's `fixed_ips`), or with
 *   `kind: 'floating'` its floating address (undefined when it has none: no silent fallback);
 * - the name of a floating IP resource, which is not a CP: the VNFC's only floating address.
 * Undefined when nothing matches.
 */
export function addressByCpName(vnfc: VnfcResourceInfo, name: string, kind: CpAddressKind = 'fixed'): string | undefined {
  const cps = vnfcAddresses(vnfc);
  const cp = cps.find((c) => c.cpdId === name);
  if (cp) return kind === 'floating' ? cp.floating[0] : cp.fixed[0];
  const floating = cps.flatMap((c) => c.floating);
  return floating.length === 1 ? floating[0] : undefined;
}

/** Every address (fixed and floating) of every VNFC of an instance, with the VNFC it belongs to. */
export function vnfcOfAddress(instance: VnfInstanceRecord, address: string): VnfcResourceInfo | undefined {
  return (instance.instantiatedVnfInfo?.vnfcResourceInfo ?? []).find((r) => vnfcAddresses(r).some((c) => c.fixed.includes(address) || c.floating.includes(address)));
}

/**
 * Fixed addresses of a VIM port of the VNF that belongs to no VNFC (e.g. a cluster's VIP port
 * `vip_CP` in the top Heat stack), as the infra driver reports them in
 * `instantiatedVnfInfo.metadata.ports`; `[]` when unknown.
 */
export function vnfPortAddresses(instance: VnfInstanceRecord, name: string): string[] {
  const ports = instance.instantiatedVnfInfo?.metadata?.ports as Record<string, { fixed?: unknown }> | undefined;
  return strings(ports?.[name]?.fixed);
}
