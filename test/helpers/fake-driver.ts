/**
 * An in-memory infra driver for engine tests (registered only in tests): it keeps a fake VIM per
 * instance, honours target counts, replaces healed VNFCs with new resource ids, and can be told to
 * fail or to hang at a given operation.
 */
import { randomUUID } from 'node:crypto';
import type { HealPlan, InfraContext, InfraDriver, ObserveContext, ObservedResources, ScalePlan } from '../../src/infra/infra-driver.ts';

/** vimType the fake driver serves. */
export const FAKE_VIM_TYPE = 'TEST.FAKE.V_1';

/** A vimConnectionInfo entry that selects the fake driver. */
export const FAKE_VIM = { vimType: FAKE_VIM_TYPE, interfaceInfo: { endpoint: 'fake://vim' }, accessInfo: { password: 'fake-secret-pw' } };

interface FakeVnfc {
  vduId: string;
  resourceId: string;
  key: string;
}

/** The fake driver with its controls. */
export class FakeDriver implements InfraDriver {
  readonly vimTypes = [FAKE_VIM_TYPE];
  readonly vims = new Map<string, FakeVnfc[]>();
  /** Operation names that fail on their next call. */
  readonly failNext = new Set<string>();
  /** Operation name -> promise the call waits for. */
  readonly hold = new Map<string, Promise<void>>();
  /** Operation name -> errors its next calls throw, one per call (e.g. retryable VIM errors). */
  readonly errors = new Map<string, unknown[]>();
  readonly calls: string[] = [];
  delayMs = 0;

  private async gate(name: string): Promise<void> {
    this.calls.push(name);
    if (this.delayMs) await new Promise((r) => setTimeout(r, this.delayMs));
    const h = this.hold.get(name);
    if (h) await h;
    if (this.failNext.delete(name)) throw Object.assign(new Error(`fake VIM failure in ${name}`), {});
    const queued = this.errors.get(name);
    if (queued?.length) throw queued.shift();
  }

  /** Brings the VNFC counts to the targets; a scale in removes the VNFM's choice first (`remove`), then the newest. */
  private reconcile(ctx: InfraContext, remove: readonly string[] = []): void {
    const list = this.vims.get(ctx.instance.id) ?? [];
    for (const [vduId, n] of Object.entries(ctx.targetVduCounts)) {
      const mine = list.filter((v) => v.vduId === vduId);
      for (let i = mine.length; i < n; i++) list.push({ vduId, resourceId: randomUUID(), key: `${vduId}/${randomUUID().slice(0, 6)}` });
      const order = [...mine.filter((v) => remove.includes(v.resourceId)), ...mine.filter((v) => !remove.includes(v.resourceId)).reverse()];
      for (const extra of order.slice(0, Math.max(0, mine.length - n))) list.splice(list.indexOf(extra), 1);
    }
    this.vims.set(ctx.instance.id, list);
  }

  async instantiate(ctx: InfraContext): Promise<void> {
    await this.gate('instantiate');
    this.reconcile(ctx);
  }
  async terminate(ctx: InfraContext): Promise<void> {
    await this.gate('terminate');
    this.vims.delete(ctx.instance.id);
  }
  async scale(ctx: InfraContext, plan: ScalePlan): Promise<void> {
    await this.gate('scale');
    this.reconcile(ctx, plan.removeResourceIds);
  }
  async heal(ctx: InfraContext, plan: HealPlan): Promise<void> {
    await this.gate('heal');
    const list = this.vims.get(ctx.instance.id) ?? [];
    const targets = plan.entire ? list : list.filter((v) => plan.targets.some((t) => t.vnfcResourceInfo.computeResource.resourceId === v.resourceId));
    for (const t of targets) t.resourceId = randomUUID();
  }
  async observe(ctx: ObserveContext): Promise<ObservedResources> {
    this.calls.push('observe');
    const list = this.vims.get(ctx.instance.id) ?? [];
    return {
      vnfcs: list.map((v) => ({
        vduId: v.vduId,
        computeResource: { resourceId: v.resourceId, vimLevelResourceType: 'FAKE::Server' },
        stableKey: v.key,
        cps: (ctx.flavour.vdus[v.vduId]?.cpIds ?? []).map((cpdId) => ({ cpdId })),
      })),
      storages: [],
      virtualLinks: [],
      metadata: { fake: true },
    };
  }
  async rollbackInstantiate(ctx: InfraContext): Promise<void> {
    await this.gate('rollbackInstantiate');
    this.vims.delete(ctx.instance.id);
  }
  async rollbackScaleOut(ctx: InfraContext, _plan: ScalePlan): Promise<void> {
    await this.gate('rollbackScaleOut');
    this.reconcile(ctx);
  }
}
