/**
 * The storm guard: decides whether a heal batch may become a heal, in the manner of Cluster API's
 * MachineHealthCheck. When too many VNFCs of one VNF are reported unhealthy at once, the cause is
 * rarely the VNFCs themselves (a network partition, a storage outage, a broken monitor) and
 * re-creating them all makes things worse; likewise a VNFC healed again and again is not being
 * fixed by healing. In both cases the batch is suppressed with a readable reason, the evidence
 * stays in the ledger, and an operator releases it when it is really wanted.
 *
 * Limits come from the module options and may be overridden per VNF instance through
 * `vnfConfigurableProperties` (changeable at run time with a PATCH of the instance).
 */
import { type VnfmConfig, defaultConfig } from '../config.ts';
import { checkMaxUnhealthy, validateAutoheal } from '../config/validate.ts';
import type { VnfInstanceRecord } from '../model/vnf-instance.ts';

/** Suppression reasons (metric label values). */
export const SUPPRESS_REASONS = { maxUnhealthy: 'max_unhealthy', frequency: 'frequency', disabled: 'disabled' } as const;
/** See {@link SUPPRESS_REASONS}. */
export type SuppressReason = (typeof SUPPRESS_REASONS)[keyof typeof SUPPRESS_REASONS];

/**
 * Options of the auto-heal module that are not in `config.faultNotification`: the `autoheal`
 * section of the one options module (documented there, with its defaults).
 */
export type AutohealOptions = VnfmConfig['autoheal'];

/** Defaults: never block the normal scenarios (the options module's own defaults). */
export const DEFAULT_AUTOHEAL_OPTIONS: Readonly<AutohealOptions> = defaultConfig().autoheal;

/** Raised for invalid auto-heal options (the config's error); the message names the option. */
export { ConfigError as AutohealOptionsError } from '../config/types.ts';

/**
 * The auto-heal options of `config.autoheal` with `settings` (partial, e.g. a test's) laid over
 * the defaults, checked by the config's own rules. The config's section itself was checked when
 * the config was resolved: without `settings` it is returned as it is.
 */
export function resolveAutohealOptions(config: VnfmConfig, settings?: Partial<AutohealOptions>): AutohealOptions {
  if (!settings) return config.autoheal;
  const o: AutohealOptions = { ...DEFAULT_AUTOHEAL_OPTIONS };
  for (const [k, v] of Object.entries(settings)) if (v !== undefined && k in o) (o as unknown as Record<string, unknown>)[k] = v;
  validateAutoheal(o);
  return o;
}

/** The limits that apply to one VNF. */
export interface StormPolicy {
  maxUnhealthy: number | string;
  maxHealsPerVnfc: number;
  frequencyPeriodMs: number;
}

/**
 * The policy of one instance: module options, overridden by `vnfConfigurableProperties`
 * `autohealMaxUnhealthy`, `autohealMaxHealsPerVnfc` and `autohealFrequencyPeriodSeconds`
 * (invalid overrides are ignored, so a typo never disables the guard).
 */
export function policyFor(opts: AutohealOptions, inst: Pick<VnfInstanceRecord, 'vnfConfigurableProperties'>): StormPolicy {
  const p: StormPolicy = { maxUnhealthy: opts.maxUnhealthy, maxHealsPerVnfc: opts.maxHealsPerVnfc, frequencyPeriodMs: opts.frequencyPeriodMs };
  const vcp = inst.vnfConfigurableProperties ?? {};
  if (vcp.autohealMaxUnhealthy !== undefined && !checkMaxUnhealthy(vcp.autohealMaxUnhealthy)) p.maxUnhealthy = vcp.autohealMaxUnhealthy as number | string;
  const n = vcp.autohealMaxHealsPerVnfc;
  if (typeof n === 'number' && Number.isInteger(n) && n >= 0) p.maxHealsPerVnfc = n;
  const s = vcp.autohealFrequencyPeriodSeconds;
  if (typeof s === 'number' && Number.isFinite(s) && s >= 0) p.frequencyPeriodMs = s * 1000;
  return p;
}

/** The largest unhealthy count allowed for `total` VNFCs (percentages round down, as Cluster API does). */
export function maxUnhealthyCount(maxUnhealthy: number | string, total: number): number {
  if (typeof maxUnhealthy === 'number') return maxUnhealthy;
  const t = maxUnhealthy.trim();
  if (t.endsWith('%')) return Math.floor((Number(t.slice(0, -1)) * total) / 100);
  return Number(t);
}

/** What the guard looks at for one batch. */
export interface StormInput {
  policy: StormPolicy;
  /** Number of VNFCs of the VNF. */
  totalVnfcs: number;
  /** vnfcInfo ids the batch would heal. */
  targets: readonly string[];
  /** Other VNFCs of the VNF currently reported unhealthy (recently suppressed batches). */
  alsoUnhealthy: ReadonlySet<string>;
  /** Automatic heals per vnfcInfo id within the frequency period. */
  recentHeals: ReadonlyMap<string, number>;
}

/** The guard's decision. */
export type StormVerdict = { allowed: true } | { allowed: false; reason: SuppressReason; detail: string };

/** Decides whether the batch may heal. */
export function evaluateStormGuard(i: StormInput): StormVerdict {
  const unhealthy = new Set([...i.targets, ...i.alsoUnhealthy]);
  const limit = maxUnhealthyCount(i.policy.maxUnhealthy, i.totalVnfcs);
  if (unhealthy.size > limit) {
    return {
      allowed: false,
      reason: 'max_unhealthy',
      detail: `${unhealthy.size} of ${i.totalVnfcs} VNFCs are reported unhealthy, more than maxUnhealthy ${i.policy.maxUnhealthy} allows (${limit}); not healing: check the VIM side, then release the batch to heal anyway`,
    };
  }
  const minutes = Math.round((i.policy.frequencyPeriodMs / 60_000) * 10) / 10;
  const over = i.targets.filter((t) => (i.recentHeals.get(t) ?? 0) + 1 > i.policy.maxHealsPerVnfc);
  if (over.length > 0) {
    const detail = over.map((t) => `${t} (${i.recentHeals.get(t) ?? 0} heals)`).join(', ');
    return {
      allowed: false,
      reason: 'frequency',
      detail: `VNFC ${detail} already healed automatically ${i.policy.maxHealsPerVnfc > 0 ? `the maximum of ${i.policy.maxHealsPerVnfc} times` : 'and the limit is 0'} within ${minutes} min; healing again is unlikely to help: investigate, then release the batch to heal anyway`,
    };
  }
  return { allowed: true };
}
