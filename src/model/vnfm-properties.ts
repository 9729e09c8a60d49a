/**
 * The VNFM's own keys of `vnfConfigurableProperties` (auto-heal, storm guard, health model),
 * checked when an instantiate or a modification brings them: a bad value is a 400 naming the key,
 * and nothing is changed. `null` removes a key (JSON merge patch). Other keys are the VNF's own and
 * are not checked here.
 */
import { vnfmError } from '../errors.ts';

const countOrPercent = (v: unknown) => (typeof v === 'number' && Number.isInteger(v) && v >= 0) || (typeof v === 'string' && /^\d{1,9}%?$/.test(v.trim()));
const nonNegative = (v: unknown) => typeof v === 'number' && Number.isFinite(v) && v >= 0;

/** Each checked key, with what it must be. */
const RULES: Record<string, { ok: (v: unknown) => boolean; must: string }> = {
  unhealthyFor: { ok: nonNegative, must: 'a number of seconds >= 0 (how long a VNFC stays faulty before it is healed automatically)' },
  autohealMaxUnhealthy: { ok: countOrPercent, must: 'an integer >= 0 or a percentage like "40%"' },
  autohealMaxHealsPerVnfc: { ok: (v) => typeof v === 'number' && Number.isInteger(v) && v >= 0, must: 'an integer >= 0' },
  autohealFrequencyPeriodSeconds: { ok: nonNegative, must: 'a number of seconds >= 0' },
};

/** Throws a 400 naming the first VNFM key of `props` with a bad value. */
export function checkVnfmProperties(props: unknown): void {
  if (props === null || typeof props !== 'object' || Array.isArray(props)) return;
  for (const [k, rule] of Object.entries(RULES)) {
    if (!(k in props)) continue;
    const v = (props as Record<string, unknown>)[k];
    if (v === null || rule.ok(v)) continue;
    throw vnfmError('VNFM_ERR_API_BAD_REQUEST', `vnfConfigurableProperties.${k} must be ${rule.must}, got ${JSON.stringify(v)}`);
  }
}
