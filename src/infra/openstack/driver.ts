/**
 * The OpenStack infra driver: runs a VNF as one Heat stack built from the package's
 * `BaseHOT/<flavourId>/` templates and Tacker's `nfv` parameter, and heals, scales and observes
 * it through Heat (servers are never touched directly, so the stack stays the source of truth).
 * This file only dispatches: each operation lives in its own file (see index.ts).
 *
 * Why it is shaped this way:
 * - Stack `vnf-<instanceId>`, always addressed as `name/id`; the id is kept in `ctx.state` during
 *   an operation and reported by {@link OpenStackDriver.observe} (`metadata.stack_id`).
 * - Every operation is resumable: what was done (stack created, resources marked, update issued,
 *   stack deleted) is recorded in `ctx.state` and checkpointed before moving on, so a retry after
 *   a crash or a failed Heat update continues instead of repeating (no double marking, no second
 *   stack).
 * - VNFC heal marks the server in the stack that owns it (a group member's nested stack, found
 *   again in a fresh listing when the stored location is stale) and then issues ONE PATCH update
 *   of the top stack, which makes Heat replace exactly the marked resources.
 * - Entire heal deletes and re-creates the stack from the current package and the current
 *   parameters (the scale level of now, not of instantiation).
 * - Scale-in marks the members the VNFM chose (its grant's removals: the newest, as Tacker picks)
 *   of each shrinking AutoScalingGroup unhealthy before the update: Heat removes failed members
 *   first, so exactly those go (the management hooks acted on them). When Heat
 *   cannot be steered (other group types, a refused mark) its own choice is accepted.
 *
 * Errors: the instance's stack gone (404 or `DELETE_COMPLETE`) where one must exist (observe,
 * heal, scale) -> `VNFM_ERR_INFRA_STACK_MISSING` (terminal; observe never reports "no resources"
 * for a missing stack), Heat/Keystone 4xx -> `VNFM_ERR_VIM_FAILED` (with Heat's message), 5xx or no answer
 * after the client's retries -> `VNFM_ERR_VIM_UNREACHABLE`, a stack ending `*_FAILED` ->
 * `VNFM_ERR_VIM_FAILED` with Heat's `stack_status_reason`, a wait running out ->
 * `VNFM_ERR_LCM_TIMEOUT`. No message carries a password or token.
 */
import type { HealPlan, InfraContext, InfraDriver, ObserveContext, ObservedResources, ScalePlan } from '../infra-driver.ts';
import { heal } from './heal.ts';
import { instantiate } from './instantiate.ts';
import { observe } from './observe.ts';
import { rollbackScaleOut, scale } from './scale.ts';
import { guard, type OpenStackDriverOptions, OpenStackSessions } from './session.ts';
import { terminate } from './terminate.ts';

/** The OpenStack (Heat) implementation of {@link InfraDriver}. */
export class OpenStackDriver implements InfraDriver {
  readonly vimTypes = ['ETSINFV.OPENSTACK_KEYSTONE.V_3', 'ETSINFV.OPENSTACK_KEYSTONE.V_2', 'OPENSTACK', 'openstack'] as const;
  /** Clients per VIM connection and the observation caches, for the driver's lifetime. */
  private readonly rt: OpenStackSessions;

  constructor(options: OpenStackDriverOptions = {}) {
    this.rt = new OpenStackSessions(options);
  }

  async instantiate(ctx: InfraContext, req: Record<string, unknown>): Promise<void> {
    await guard('instantiate', () => instantiate(this.rt, ctx, req));
  }

  async terminate(ctx: InfraContext): Promise<void> {
    await guard('terminate', () => terminate(this.rt, ctx));
  }

  async rollbackInstantiate(ctx: InfraContext): Promise<void> {
    await guard('rollback instantiate', () => terminate(this.rt, ctx));
  }

  async scale(ctx: InfraContext, plan: ScalePlan): Promise<void> {
    await guard(`scale (${plan.type} ${plan.aspectId})`, () => scale(this.rt, ctx, plan));
  }

  async rollbackScaleOut(ctx: InfraContext, plan: ScalePlan): Promise<void> {
    await guard(`rollback scale out (${plan.aspectId})`, () => rollbackScaleOut(this.rt, ctx, plan));
  }

  async heal(ctx: InfraContext, plan: HealPlan): Promise<void> {
    await guard(plan.entire ? 'heal (entire VNF)' : 'heal', () => heal(this.rt, ctx, plan));
  }

  async observe(ctx: ObserveContext): Promise<ObservedResources> {
    return guard('observe', () => observe(this.rt, ctx));
  }
}

/**
 * The OpenStack driver the VNFM registers for `ETSINFV.OPENSTACK_KEYSTONE.V_3` VIMs. Keeps one
 * Keystone session per VIM connection for its lifetime.
 */
export function createOpenStackDriver(options: OpenStackDriverOptions = {}): InfraDriver {
  return new OpenStackDriver(options);
}
