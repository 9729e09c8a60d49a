/**
 * Instantiate: the stack's fields from the package (`BaseHOT/<flavourId>/`, the `nfv` parameter)
 * and the stack made to exist, `*_COMPLETE` (created, or adopted from an earlier attempt).
 */
import { posix } from 'node:path';
import { vnfmError } from '../../errors.ts';
import type { InfraContext } from '../infra-driver.ts';
import type { HeatStack, HeatStackRef } from './heat-client.ts';
import { stackRefString } from './heat-observer.ts';
import { isObject } from './heal-plan.ts';
import { buildNfvParameter, declaredParameters, type JsonObject } from './hot-params.ts';
import { OpenStackError } from './openstack-error.ts';
import { findStack, type OpenStackSessions, refOf, settle, stackNameOf, timeoutMins, type VimSession, waitStack } from './session.ts';
import { waitCreateListing } from './stack-watch.ts';

/** What a stack create/update sends besides the parameters. */
export interface StackFields {
  template: string;
  files: Record<string, string>;
  parameters: Record<string, unknown>;
  environment?: Record<string, unknown> | string;
}

export async function instantiate(rt: OpenStackSessions, ctx: InfraContext, req: Record<string, unknown>): Promise<void> {
  const s = rt.session(ctx.vim);
  const additional = isObject(req.additionalParams) ? req.additionalParams : {};
  const current = await findStack(ctx, s.heat);
  const fields = await stackFields(ctx, {
    current: null,
    extVirtualLinks: Array.isArray(req.extVirtualLinks) ? req.extVirtualLinks : undefined,
    requestNfv: additional.nfv,
  });
  await ensureStack(rt, ctx, s, fields, current);
}

/**
 * Template, nested files, environment and parameters of the instance's stack, from the
 * current package (`BaseHOT/<flavourId>/`) and the VIM's Heat environment.
 */
export async function stackFields(
  ctx: InfraContext,
  opts: { current: JsonObject | null; extVirtualLinks?: readonly unknown[] | undefined; requestNfv?: unknown; vduCounts?: Readonly<Record<string, number>> },
): Promise<StackFields> {
  const base = ctx.vnfd.baseHotDirs[ctx.flavour.flavourId];
  if (base === undefined) {
    throw vnfmError('VNFM_ERR_INST_INVALID', `the VNF package has no Heat templates for flavour '${ctx.flavour.flavourId}' (BaseHOT/${ctx.flavour.flavourId}/ is missing)`);
  }
  const pkg = await ctx.files();
  const text = (path: string): string => {
    const buf = pkg.get(path);
    if (buf === undefined) throw vnfmError('VNFM_ERR_INST_INVALID', `the VNF package lacks ${path}`);
    return buf.toString('utf8');
  };
  const template = text(base.topTemplate);
  const extra = ctx.vim.extra ?? {};
  const files: Record<string, string> = {};
  if (isObject(extra.heatEnvironmentFiles)) {
    for (const [k, v] of Object.entries(extra.heatEnvironmentFiles)) if (typeof v === 'string') files[k] = v;
  }
  for (const nested of base.nestedTemplates) files[posix.basename(nested)] = text(nested);
  const parameters: Record<string, unknown> = {};
  if (declaredParameters(template).has('nfv')) {
    parameters.nfv = buildNfvParameter({
      flavour: ctx.flavour,
      vduCounts: opts.vduCounts ?? ctx.targetVduCounts,
      grant: ctx.grant,
      grantRequest: ctx.grantRequest,
      current: opts.current,
      extVirtualLinks: opts.extVirtualLinks,
      requestNfv: opts.requestNfv,
    });
  }
  const env = extra.heatEnvironment;
  return { template, files, parameters, ...(isObject(env) || (typeof env === 'string' && env !== '') ? { environment: env } : {}) };
}

/**
 * Makes the stack exist and be `*_COMPLETE` with `fields`: creates it, or adopts the one a
 * previous attempt created (waits for it; re-converges a failed one with an update).
 */
export async function ensureStack(rt: OpenStackSessions, ctx: InfraContext, s: VimSession, fields: StackFields, existing: HeatStack | null, listWhileCreating = false): Promise<HeatStack> {
  if (existing === null) return createStack(rt, ctx, s, fields, listWhileCreating);
  const name = stackNameOf(ctx.instance.id);
  const ref = refOf(existing);
  ctx.state.stack = stackRefString(ref);
  await ctx.checkpoint();
  const settled = await settle(rt, ctx, s.heat, ref);
  const status = settled.stack_status;
  if (status === 'CREATE_COMPLETE' || status === 'UPDATE_COMPLETE') {
    ctx.log.info({ step: 'heat.adopt', stack: name, status }, 'stack already exists; adopted');
    return settled;
  }
  if (status.startsWith('DELETE_')) {
    await s.heat.deleteStack(ref, { signal: ctx.signal });
    await s.heat.waitForDeleted(ref, { timeoutMs: ctx.vimSettings.stackTimeoutMs, signal: ctx.signal, ...rt.poll(ctx.vimSettings) });
    delete ctx.state.stack;
    await ctx.checkpoint();
    return ensureStack(rt, ctx, s, fields, null);
  }
  // CREATE_FAILED / UPDATE_FAILED / ROLLBACK_*: an update with the full fields retries the failed resources.
  ctx.log.info({ step: 'heat.reconverge', stack: name, status }, 'stack exists in a failed state; updating it');
  await s.heat.updateStackPatch(ref, {
    template: fields.template,
    files: fields.files,
    parameters: fields.parameters,
    ...(fields.environment === undefined ? {} : { environment: fields.environment }),
    timeoutMins: timeoutMins(ctx),
  }, { signal: ctx.signal });
  return waitStack(rt, ctx, s.heat, ref, 'UPDATE_COMPLETE');
}

/** Creates the stack (adopting one an earlier attempt created) and waits until it is complete. */
async function createStack(rt: OpenStackSessions, ctx: InfraContext, s: VimSession, fields: StackFields, listWhileCreating: boolean): Promise<HeatStack> {
  const name = stackNameOf(ctx.instance.id);
  let ref: HeatStackRef;
  try {
    ctx.log.info({ step: 'heat.create', stack: name }, 'creating stack');
    ref = await s.heat.createStack({
      name,
      template: fields.template,
      files: fields.files,
      parameters: fields.parameters,
      ...(fields.environment === undefined ? {} : { environment: fields.environment }),
      timeoutMins: timeoutMins(ctx),
      disableRollback: true,
    }, { signal: ctx.signal });
  } catch (e) {
    if (!OpenStackError.isStatus(e, 409)) throw e;
    // Created by an earlier attempt whose answer was lost: adopt it.
    const found = await findStack(ctx, s.heat);
    if (found === null) throw e;
    return ensureStack(rt, ctx, s, fields, found);
  }
  ctx.state.stack = stackRefString(ref);
  await ctx.checkpoint();
  if (!listWhileCreating) return waitStack(rt, ctx, s.heat, ref, 'CREATE_COMPLETE');
  // Every resource of the new stack is new, so the observation after needs the whole listing:
  // it is read while Heat creates the stack.
  const { stack, listing } = await waitCreateListing(s.heat, ref, {
    ...rt.poll(ctx.vimSettings),
    timeoutMs: ctx.vimSettings.stackTimeoutMs,
    signal: ctx.signal,
    onPoll: (st) => ctx.log.debug({ step: 'heat.wait', stack: ref.name, status: st.stack_status }, 'stack status'),
    depth: rt.nestedDepth,
    withPorts: Object.keys(ctx.flavour.cps).length > 0,
  });
  rt.keepPrefetch(ref.id, { opId: ctx.op.id, stack, changedRows: new Map(), changedPorts: new Map(), listing });
  await listing; // what was left to read when the stack completed (its own rows, the last members)
  return stack;
}
