/**
 * A driver that does nothing but report a fixed set of VNFCs: isolates the engine's own cost.
 */
import { randomUUID } from 'node:crypto';
import type { InfraContext, InfraDriver, ObservedResources } from '../src/infra/infra-driver.ts';

/** vimType served by the no-op driver. */
export const NOOP_VIM_TYPE = 'BENCH.NOOP.V_1';

/** No-op driver: remembers VNFC ids per instance, heals by changing resource ids. */
export class NoopDriver implements InfraDriver {
  readonly vimTypes = [NOOP_VIM_TYPE];
  private readonly vims = new Map<string, { vduId: string; id: string; key: string }[]>();
  private set(ctx: InfraContext) {
    const list: { vduId: string; id: string; key: string }[] = [];
    for (const [vduId, n] of Object.entries(ctx.targetVduCounts)) for (let i = 0; i < n; i++) list.push({ vduId, id: randomUUID(), key: `${vduId}/${i}` });
    this.vims.set(ctx.instance.id, list);
  }
  async instantiate(ctx: InfraContext) {
    this.set(ctx);
  }
  async terminate(ctx: InfraContext) {
    this.vims.delete(ctx.instance.id);
  }
  async scale(ctx: InfraContext) {
    this.set(ctx);
  }
  async heal(ctx: InfraContext) {
    for (const v of this.vims.get(ctx.instance.id) ?? []) v.id = randomUUID();
  }
  async observe(ctx: InfraContext): Promise<ObservedResources> {
    return { vnfcs: (this.vims.get(ctx.instance.id) ?? []).map((v) => ({ vduId: v.vduId, computeResource: { resourceId: v.id, vimLevelResourceType: 'NOOP' }, stableKey: v.key })), storages: [], virtualLinks: [] };
  }
  async rollbackInstantiate(ctx: InfraContext) {
    this.vims.delete(ctx.instance.id);
  }
  async rollbackScaleOut(ctx: InfraContext) {
    this.set(ctx);
  }
}
