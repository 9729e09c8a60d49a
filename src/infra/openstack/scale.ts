/**
 * Scale and scale-out rollback: one PATCH of the stack's `nfv` (desired capacities). For every
 * shrinking AutoScalingGroup the members the VNFM chose (its grant's removals), then the newest,
 * are marked unhealthy first: Heat removes failed members first, so exactly those go. When Heat
 * cannot be steered (other group types, a refused mark) its own choice is accepted.
 */
import { vnfcCountAtLevel } from '../../packages/vnfd-scaling.ts';
import type { InfraContext, ScalePlan } from '../infra-driver.ts';
import { HeatClient, type HeatResource, type HeatStackRef } from './heat-client.ts';
import { HEAT_TYPES, type LocatedResource, locateResources } from './heat-observer.ts';
import type { UpdateProgress } from './heal-plan.ts';
import { parseNfvParameter } from './hot-params.ts';
import { stackFields } from './instantiate.ts';
import { mark, type OpenStackSessions, progressOf, refOf, requireStack, settle, timeoutMins, type VimSession, waitStack } from './session.ts';

const GROUP_SCALING = 'OS::Heat::AutoScalingGroup';

export async function scale(rt: OpenStackSessions, ctx: InfraContext, plan: ScalePlan): Promise<void> {
  await resize(rt, ctx, rt.session(ctx.vim), 'scale', ctx.targetVduCounts, plan.additionalParams.nfv, new Set(plan.removeResourceIds ?? []));
}

/** Back to `plan.fromLevel` of the aspect (the other aspects at their current or target level). */
export async function rollbackScaleOut(rt: OpenStackSessions, ctx: InfraContext, plan: ScalePlan): Promise<void> {
  const levels: Record<string, number> = {};
  for (const a of ctx.instance.instantiatedVnfInfo?.scaleStatus ?? []) levels[a.aspectId] = a.scaleLevel;
  Object.assign(levels, ctx.targetScaleLevels);
  levels[plan.aspectId] = plan.fromLevel;
  const known: Record<string, number> = {};
  for (const [k, v] of Object.entries(levels)) if (Object.hasOwn(ctx.flavour.scalingAspects, k)) known[k] = v;
  const counts = vnfcCountAtLevel(ctx.flavour, undefined, known);
  await resize(rt, ctx, rt.session(ctx.vim), 'scaleRollback', counts, undefined);
}

/**
 * PATCHes the stack's `nfv` so each VDU has `counts` members. For every shrinking
 * AutoScalingGroup the members the VNFM chose (`preferred` server ids: its grant's removals),
 * then the newest, are marked unhealthy first (Heat removes failed members first); their marks
 * and the update are recorded in `ctx.state[key]`.
 */
async function resize(rt: OpenStackSessions, ctx: InfraContext, s: VimSession, key: 'scale' | 'scaleRollback', counts: Readonly<Record<string, number>>, requestNfv: unknown, preferred: ReadonlySet<string> = new Set()): Promise<void> {
  const stack = await requireStack(ctx, s.heat);
  const ref = refOf(stack);
  const progress = progressOf(ctx, key);
  const fields = await stackFields(ctx, { current: parseNfvParameter(stack.parameters?.nfv), requestNfv, vduCounts: counts });
  const currentVdus = (parseNfvParameter(stack.parameters?.nfv)?.VDU ?? null) as Record<string, { desired_capacity?: unknown } | undefined> | null;
  const shrinking = currentVdus === null || Object.entries(counts).some(([vdu, n]) => {
    const was = currentVdus[vdu]?.desired_capacity;
    return typeof was !== 'number' || n < was;
  });
  await settle(rt, ctx, s.heat, ref);
  if (!progress.updateIssued && shrinking) {
    const rows = await s.heat.listResources(ref, { nestedDepth: rt.nestedDepth, signal: ctx.signal });
    await markScaleInVictims(ctx, s, ref, rows, counts, progress, preferred);
  }
  progress.updateIssued = true;
  await ctx.checkpoint();
  ctx.log.info({ step: 'heat.update', stack: ref.name, counts }, 'updating stack (desired capacity)');
  await s.heat.updateStackPatch(ref, { parameters: fields.parameters, timeoutMins: timeoutMins(ctx) }, { signal: ctx.signal });
  await waitStack(rt, ctx, s.heat, ref, 'UPDATE_COMPLETE');
}

/** The scale-in choice of one VDU: the group members to remove, or none when the VDU is not in an AutoScalingGroup. */
export type ScaleInChoice = { vduId: string; members: LocatedResource[] } | { vduId: string; notInGroup: true };

/**
 * Which members of each shrinking VDU go (pure): the VNFM's choice (`preferred` server ids)
 * first, then the newest, as many as the VDU has above `counts`. A member is the resource (in the
 * group's nested stack) whose nested stack holds the server.
 */
export function scaleInVictims(located: readonly LocatedResource[], counts: Readonly<Record<string, number>>, preferred: ReadonlySet<string>): ScaleInChoice[] {
  const ownerOf = new Map<string, LocatedResource>();
  for (const l of located) {
    const nested = HeatClient.nestedStackOfResource(l.row);
    if (nested !== undefined) ownerOf.set(nested.id, l);
  }
  const out: ScaleInChoice[] = [];
  for (const [vduId, want] of Object.entries(counts)) {
    const servers = located.filter((l) => l.row.resource_type === HEAT_TYPES.server && l.row.resource_name === vduId && l.row.physical_resource_id);
    if (servers.length <= want) continue;
    const members: LocatedResource[] = [];
    for (const srv of servers) {
      const member = ownerOf.get(srv.stack.id);
      const group = member === undefined ? undefined : ownerOf.get(member.stack.id);
      if (member !== undefined && group?.row.resource_type === GROUP_SCALING) members.push(member);
    }
    if (members.length !== servers.length) {
      out.push({ vduId, notInGroup: true });
      continue;
    }
    const chosen = (m: LocatedResource): boolean => servers.some((srv) => preferred.has(srv.row.physical_resource_id) && ownerOf.get(srv.stack.id) === m);
    members.sort((a, b) => Number(chosen(b)) - Number(chosen(a)) || String(b.row.creation_time ?? '').localeCompare(String(a.row.creation_time ?? '')));
    out.push({ vduId, members: members.slice(0, servers.length - want) });
  }
  return out;
}

async function markScaleInVictims(
  ctx: InfraContext,
  s: VimSession,
  top: HeatStackRef,
  rows: readonly HeatResource[],
  counts: Readonly<Record<string, number>>,
  progress: UpdateProgress,
  preferred: ReadonlySet<string> = new Set(),
): Promise<void> {
  for (const choice of scaleInVictims(locateResources(top, rows), counts, preferred)) {
    if ('notInGroup' in choice) {
      ctx.log.info({ step: 'heat.scale_in', vduId: choice.vduId }, 'VDU is not in an AutoScalingGroup: Heat chooses the members to remove');
      continue;
    }
    for (const m of choice.members) {
      if (/_FAILED$/.test(m.row.resource_status ?? '')) continue; // removed first anyway
      await mark(ctx, s, m, progress, 'scale in: removed by the VNFM', true);
    }
  }
}
