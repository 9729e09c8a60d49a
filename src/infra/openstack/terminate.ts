/** Terminate and instantiate rollback: the instance's stack deleted, its name free again. */
import type { InfraContext } from '../infra-driver.ts';
import { stackRefString } from './heat-observer.ts';
import { findStack, type OpenStackSessions, refOf, settle, type VimSession } from './session.ts';

/** Terminate (and rollback of an instantiate): deletes the stack, if any. */
export async function terminate(rt: OpenStackSessions, ctx: InfraContext): Promise<void> {
  await deleteStack(rt, ctx, rt.session(ctx.vim));
}

/** Deletes the instance's stack (if any) and waits until its name is free. */
export async function deleteStack(rt: OpenStackSessions, ctx: InfraContext, s: VimSession): Promise<void> {
  const stack = await findStack(ctx, s.heat);
  if (stack === null) return;
  const ref = refOf(stack);
  ctx.state.stack = stackRefString(ref);
  ctx.log.info({ step: 'heat.delete', stack: ref.name }, 'deleting stack');
  await settle(rt, ctx, s.heat, ref);
  await s.heat.deleteStack(ref, { signal: ctx.signal });
  await s.heat.waitForDeleted(ref, { timeoutMs: ctx.vimSettings.stackTimeoutMs, signal: ctx.signal, ...rt.poll(ctx.vimSettings) });
}
