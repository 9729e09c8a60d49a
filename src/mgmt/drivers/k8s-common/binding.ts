/**
 * How a built-in cluster driver is bound to a VNFD hook (spec §1.1): by the artifact's name (Tacker's
 * driver name) or `properties.healvnfm_driver`; and which operation each hook acts on (spec §2.4:
 * instantiate_end, terminate_end, scale_start for SCALE_IN, scale_end for SCALE_OUT, heal_start /
 * heal_end).
 */
import type { HookArtifact, HookName, MgmtContext } from '../../mgmt-driver.ts';

/** The hooks both cluster drivers serve. */
export const CLUSTER_HOOKS: ReadonlySet<HookName> = new Set<HookName>(['instantiate_end', 'terminate_end', 'scale_start', 'scale_end', 'heal_start', 'heal_end']);

/** Whether the artifact names this driver (`properties.healvnfm_driver` first, else the artifact name). */
export function claimsArtifact(a: HookArtifact, driver: string, artifactName: string): boolean {
  const named = a.properties?.healvnfm_driver;
  if (typeof named === 'string' && named !== '') return named === driver;
  return a.artifactName === artifactName;
}

/** Whether the flavour binds this hook to the driver and the operation is one the hook acts on. */
export function appliesToHook(ctx: MgmtContext, claims: (a: HookArtifact) => boolean): boolean {
  if (!CLUSTER_HOOKS.has(ctx.hook)) return false;
  const h = ctx.flavour?.lcmHooks?.[ctx.hook] as (HookArtifact & { properties?: Record<string, unknown> }) | undefined;
  if (!h || !claims({ artifactName: h.artifactName, file: h.file, type: h.type, properties: h.properties ?? {} })) return false;
  const c = ctx.command;
  switch (ctx.hook) {
    case 'instantiate_end':
      return c.operation === 'INSTANTIATE';
    case 'terminate_end':
      return c.operation === 'TERMINATE';
    case 'scale_start':
      return c.operation === 'SCALE' && c.type === 'SCALE_IN';
    case 'scale_end':
      return c.operation === 'SCALE' && c.type === 'SCALE_OUT';
    case 'heal_start':
    case 'heal_end':
      return c.operation === 'HEAL';
    default:
      return false;
  }
}

/**
 * A driver's knobs: `defaults`, overridden by the VNFM config section, then by `overrides`. An
 * unknown knob or a value of the wrong type is an error naming it (checked at start-up).
 */
export function mergeKnobs<T extends object>(defaults: Readonly<T>, driver: string, sectionName: string, section: Partial<T>, overrides: Partial<T>): T {
  const out = { ...defaults } as T;
  for (const [where, src] of [[sectionName, section], ['driver overrides', overrides]] as const) {
    for (const [k, v] of Object.entries(src)) {
      if (!(k in defaults)) throw new Error(`${where}.${k}: unknown setting of the ${driver} driver (known: ${Object.keys(defaults).join(', ')})`);
      const def = (defaults as Record<string, unknown>)[k];
      if (typeof v !== typeof def || (typeof v === 'number' && !(Number.isFinite(v) && v >= 0))) throw new Error(`${where}.${k}: must be a ${typeof def === 'number' ? 'number >= 0' : typeof def}, got ${JSON.stringify(v)}`);
      (out as Record<string, unknown>)[k] = v;
    }
  }
  return out;
}
