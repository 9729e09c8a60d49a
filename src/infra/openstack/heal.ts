/**
 * Heal: what {@link ./heal-plan.ts} decided, done against Heat. VNFC heal marks the targets'
 * servers (and volumes) unhealthy in the stacks that own them, then issues ONE PATCH update of
 * the top stack, which makes Heat replace exactly the marked resources; its wait reads the changed
 * stacks on the way for the observation after it. Entire heal deletes and re-creates the stack
 * from the current package and the current parameters (the scale level of now, not of
 * instantiation). Both are resumable through `ctx.state` (`vnfcHeal`, `entireHeal`).
 */
import type { HealPlan, InfraContext } from '../infra-driver.ts';
import { HeatClient, type HeatResource, type HeatStack, type HeatStackRef } from './heat-client.ts';
import { type LocatedResource, locateResources, stackRefString } from './heat-observer.ts';
import {
  type EntireHealProgress,
  healKind,
  healReason,
  isObject,
  locateInOwner,
  markAction,
  metadataLocation,
  planVnfcMarks,
  targetAtMetadata,
  type UpdateProgress,
  waitLevels,
} from './heal-plan.ts';
import { parseNfvParameter } from './hot-params.ts';
import { ensureStack, stackFields } from './instantiate.ts';
import { fingerprintOfInstance, portFactsOf } from './observe.ts';
import { OpenStackError } from './openstack-error.ts';
import { findStack, mark, type OpenStackSessions, type Prefetch, progressOf, refOf, requireStack, settle, stackOfRow, timeoutMins, type VimSession, waitStack } from './session.ts';
import { waitUpdateWatching } from './stack-watch.ts';

export async function heal(rt: OpenStackSessions, ctx: InfraContext, plan: HealPlan): Promise<void> {
  const s = rt.session(ctx.vim);
  const kind = healKind(plan);
  if (kind === 'entire') await healEntire(rt, ctx, s, plan);
  else if (kind === 'vnfcs') await healVnfcs(rt, ctx, s, plan);
  else ctx.log.info({ step: 'heal' }, 'heal: no VNFC to heal');
}

async function healVnfcs(rt: OpenStackSessions, ctx: InfraContext, s: VimSession, plan: HealPlan): Promise<void> {
  const progress = progressOf(ctx, 'vnfcHeal');
  const fresh = !progress.updateIssued && progress.marked.length === 0;
  const reason = healReason(plan);
  // The targets' own stacks are listed while the top stack is read, and the targets found there
  // are marked at once (still while it is read).
  const stackRead = requireStack(ctx, s.heat);
  stackRead.catch(() => undefined); // awaited below
  let quick = fresh ? await locateAtMetadata(ctx, s, plan) : undefined;
  if (quick !== undefined) await markTargets(ctx, s, plan, quick, progress, reason);
  const stack = await stackRead;
  const ref = refOf(stack);
  if (stack.stack_status.endsWith('_IN_PROGRESS')) {
    // A retry (or an update outside the VNFM) may find an update still running: marks are refused
    // (409) meanwhile, Heat may drop them, and what was listed may be changing. Once it has
    // ended the targets are found and marked again (a mark Heat dropped is made once more).
    await settle(rt, ctx, s.heat, ref, stack);
    quick = fresh ? await locateAtMetadata(ctx, s, plan) : undefined;
    const located = quick ?? locateResources(ref, await s.heat.listResources(ref, { nestedDepth: rt.nestedDepth, signal: ctx.signal }));
    await markTargets(ctx, s, plan, located, progress, reason);
  } else if (quick === undefined) {
    const located = locateResources(ref, await s.heat.listResources(ref, { nestedDepth: rt.nestedDepth, signal: ctx.signal }));
    await markTargets(ctx, s, plan, located, progress, reason);
  }
  progress.updateIssued = true;
  await ctx.checkpoint();
  const requestNfv = plan.additionalParams.nfv;
  const patch = isObject(requestNfv) ? (await stackFields(ctx, { current: parseNfvParameter(stack.parameters?.nfv), requestNfv })).parameters : undefined;
  if (patch !== undefined && progress.patched !== true) {
    progress.patched = true;
    await ctx.checkpoint();
  }
  ctx.log.info({ step: 'heat.update', stack: ref.name, marked: progress.marked.length }, 'updating stack (replaces the marked resources)');
  await s.heat.updateStackPatch(ref, { ...(patch === undefined ? {} : { parameters: patch }), timeoutMins: timeoutMins(ctx) }, { signal: ctx.signal });
  await waitHealUpdate(rt, ctx, s, ref, progress);
}

/** Marks each target's server (and, with `includeStorage`, its volumes) found in `located`. */
async function markTargets(ctx: InfraContext, s: VimSession, plan: HealPlan, located: readonly LocatedResource[], progress: UpdateProgress, reason: string): Promise<void> {
  for (const step of planVnfcMarks({ plan, located, flavour: ctx.flavour, instance: ctx.instance, progress })) {
    if ('error' in step) throw step.error;
    if ('replaced' in step) continue;
    if (step.retry) ctx.log.debug({ step: 'heal.retry', resource: step.server.path, status: step.server.row.resource_status }, 'target not replaced yet');
    await markForHeal(ctx, s, step.server, progress, reason);
    for (const vol of step.volumes) await markForHeal(ctx, s, vol, progress, reason);
  }
}

/**
 * Marks a heal resource unless this operation already did. A resource marked earlier that
 * Heat shows `*_COMPLETE` again with the SAME physical id (Heat dropped the mark) is marked once
 * more; one still `CHECK_FAILED` / `*_FAILED`, or already replaced (new id), is left as is: the
 * next update replaces or finishes it.
 */
async function markForHeal(ctx: InfraContext, s: VimSession, l: LocatedResource, progress: UpdateProgress, reason: string): Promise<void> {
  const decision = markAction(progress, l);
  if (decision.action === 'skip') return;
  if (decision.action === 'remark') {
    ctx.log.warn({ step: 'heat.mark_unhealthy', resource: l.path, status: decision.status }, 'Heat no longer holds the mark; marking again');
    progress.marked.splice(progress.marked.indexOf(decision.entry), 1);
  }
  await mark(ctx, s, l, progress, reason);
}

/**
 * The heal targets' servers (and their stacks' other resources) without listing the whole
 * stack: each target's owning stack (`metadata.stack_id`) is listed alone, and used when the
 * row named `metadata.resource_name` there still holds the target's server (and, with
 * `includeStorage`, every volume of the target is in that listing). Undefined when any target's
 * stored location is missing or stale (the caller then lists the whole stack, so a target is
 * never taken for another server).
 */
async function locateAtMetadata(ctx: InfraContext, s: VimSession, plan: HealPlan): Promise<LocatedResource[] | undefined> {
  const out: LocatedResource[] = [];
  const listed = new Map<string, LocatedResource[]>();
  for (const target of plan.targets) {
    const loc = metadataLocation(target);
    if (loc === undefined) return undefined;
    let rows = listed.get(loc.owner.id);
    if (rows === undefined) {
      let raw: HeatResource[];
      try {
        raw = await s.heat.listResources(loc.owner, { signal: ctx.signal });
      } catch (e) {
        if (OpenStackError.isStatus(e, 404)) return undefined;
        throw e;
      }
      rows = locateInOwner(loc.owner, loc.parent, raw, stackOfRow);
      listed.set(loc.owner.id, rows);
      out.push(...rows);
    }
    if (!targetAtMetadata(rows, loc, target, plan.includeStorage, ctx.instance)) return undefined;
  }
  ctx.log.debug({ step: 'heal.locate', stacks: [...listed.keys()] }, 'heal targets found where their metadata says');
  return out;
}

/**
 * Waits for a VNFC heal's update. When the observation after it can re-list only the changed
 * stacks (see `partialListing` in observe.ts), the wait follows those stacks and their parents
 * ({@link waitUpdateWatching}): each changed stack's resources and CP ports are read as soon as
 * it has finished the update, and the top stack is polled at the short interval only once its
 * completion is imminent. What was read is kept for that observation (with the top stack's last
 * poll).
 */
async function waitHealUpdate(rt: OpenStackSessions, ctx: InfraContext, s: VimSession, ref: HeatStackRef, progress: UpdateProgress): Promise<void> {
  rt.prefetched.delete(ref.id);
  const cached = rt.listings.get(ref.id);
  if (progress.patched === true || cached === undefined || cached.fingerprint !== fingerprintOfInstance(ctx)) {
    const done = await waitStack(rt, ctx, s.heat, ref, 'UPDATE_COMPLETE');
    rt.keepPrefetch(ref.id, { opId: ctx.op.id, stack: done, changedRows: new Map(), changedPorts: new Map() });
    return;
  }
  // Stacks by id, and the stack owning each nested stack, from the kept observation.
  const refs = new Map<string, HeatStackRef>([[ref.id, ref]]);
  const parentOf = new Map<string, HeatStackRef>();
  for (const r of cached.rows) {
    const own = stackOfRow(r);
    if (own === undefined) continue;
    refs.set(own.id, own);
    const nested = HeatClient.nestedStackOfResource(r);
    if (nested !== undefined) parentOf.set(nested.id, own);
  }
  const changed = new Map<string, HeatStackRef>();
  for (const m of progress.marked) {
    const id = m.slice(0, m.indexOf('/'));
    const own = refs.get(id);
    if (own !== undefined && id !== ref.id) changed.set(id, own);
  }
  const { levels, chainComplete } = waitLevels([...changed.values()], parentOf, ref.id);
  const pre: Prefetch = { opId: ctx.op.id, stack: undefined as unknown as HeatStack, changedRows: new Map(), changedPorts: new Map() };
  const stack = await waitUpdateWatching(
    s.heat,
    ref,
    levels,
    chainComplete,
    (c) => {
      ctx.log.debug({ step: 'heat.wait', stack: c.name }, 'changed stack updated; reading its resources');
      const rows = s.heat.listResources(c, { signal: ctx.signal }).catch(() => undefined);
      pre.changedRows.set(c.id, rows);
      if (cached.ports !== undefined) pre.changedPorts.set(c.id, portFactsOf(ctx, s, c, 0).catch(() => undefined));
    },
    { ...rt.poll(ctx.vimSettings), timeoutMs: ctx.vimSettings.stackTimeoutMs, signal: ctx.signal, onPoll: (st) => ctx.log.debug({ step: 'heat.wait', stack: ref.name, status: st.stack_status }, 'stack status') },
  );
  pre.stack = stack;
  rt.keepPrefetch(ref.id, pre);
}

async function healEntire(rt: OpenStackSessions, ctx: InfraContext, s: VimSession, plan: HealPlan): Promise<void> {
  let progress = ctx.state.entireHeal as EntireHealProgress | undefined;
  /** The old stack as read by this attempt (not read again before its delete). */
  let known: HeatStack | null | undefined;
  if (!isObject(progress) || typeof progress.phase !== 'string') {
    const stack = await findStack(ctx, s.heat);
    known = stack;
    const current = stack === null ? null : parseNfvParameter(stack.parameters?.nfv);
    const fields = await stackFields(ctx, { current, requestNfv: plan.additionalParams.nfv });
    progress = { phase: 'deleting', parameters: fields.parameters, ...(stack === null ? {} : { oldStack: stackRefString(refOf(stack)) }) };
    ctx.state.entireHeal = progress;
    await ctx.checkpoint();
  }
  // Whether this attempt saw the name free (the old stack deleted and no longer listed, or none).
  let nameFree = false;
  if (progress.phase === 'deleting') {
    const old =
      progress.oldStack === undefined
        ? null
        : known != null && stackRefString(refOf(known)) === progress.oldStack
          ? known
          : await s.heat.findStack(progress.oldStack, { signal: ctx.signal });
    if (old !== null && old.stack_status !== 'DELETE_COMPLETE') {
      const ref = refOf(old);
      ctx.log.info({ step: 'heat.delete', stack: ref.name }, 'entire heal: deleting stack');
      await settle(rt, ctx, s.heat, ref, old);
      await s.heat.deleteStack(ref, { signal: ctx.signal });
      // Gone once Heat no longer lists it (a create of the same name before that gets 409).
      await s.heat.waitUntilUnlisted(ref, { timeoutMs: ctx.vimSettings.stackTimeoutMs, signal: ctx.signal, ...rt.poll(ctx.vimSettings) });
      nameFree = true;
    } else nameFree = known === null;
    progress.phase = 'deleted';
    delete ctx.state.stack;
    await ctx.checkpoint();
  }
  // 'deleted' or 'created': create (or adopt what an earlier attempt created) from the current package.
  const fields = await stackFields(ctx, { current: null });
  fields.parameters = progress.parameters;
  const existing = nameFree ? null : await findStack(ctx, s.heat);
  const created = await ensureStack(rt, ctx, s, fields, existing, true);
  progress.phase = 'created';
  ctx.state.stack = stackRefString(refOf(created));
  await ctx.checkpoint();
}
