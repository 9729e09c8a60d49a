/**
 * The first thing every execution does: load what the op needs (instance, command, VNFD, flavour,
 * VIM connection, package files) and freeze its plan (levels, VNFC counts) in its checkpoint, so a
 * retry or a resume works towards the same targets.
 */
import { vnfmError } from '../../errors.ts';
import type { InfraDriverRegistry } from '../../infra/infra-driver.ts';
import { commandOf, type LcmCommand } from '../../model/lcm-command.ts';
import type { OpOccRecord } from '../../model/op-occ.ts';
import type { PackageService } from '../../packages/package-service.ts';
import { InstanceService } from '../instance-service.ts';
import type { MgmtStore } from '../mgmt-context.ts';
import type { OpPlan } from '../operations/handler.ts';
import { handlerFor } from '../operations/index.ts';
import { type Loaded, type OpCtx, planOf } from './op-ctx.ts';

/** What loading needs. */
export interface LoadDeps {
  instances: InstanceService;
  packages: PackageService;
  drivers: InfraDriverRegistry;
  mgmtStore: MgmtStore;
}

/** Loads what the op needs; freezes its command and flavour in `ctx` at the first run. */
export async function loadOp(d: LoadDeps, op: OpOccRecord, ctx: OpCtx): Promise<Loaded> {
  const instance = await d.instances.get(op.vnfInstanceId);
  const handler = handlerFor(op.operation);
  // Frozen at the first run: a legacy row's command (derived from its request) names the VNFCs as they were then.
  ctx.command ??= commandOf(op, instance);
  // Stored sealed (secrets of additionalParams); the engine and its drivers work on the clear command.
  const command = d.mgmtStore.unseal(ctx.command as LcmCommand);
  const vnfd = await d.packages.vnfd(instance.vnfPkgId);
  const flavourId = ctx.flavourId ?? handler.flavourId(command as never, instance);
  const flavour = flavourId ? vnfd.flavours[flavourId] : undefined;
  if (!flavour) throw vnfmError('VNFM_ERR_INST_INVALID', `flavour ${flavourId} not found in VNFD ${vnfd.vnfdId}`);
  ctx.flavourId = flavour.flavourId;
  const conns = await d.instances.vimConnections(instance.id);
  const vimKey = InstanceService.infraConnectionKey(conns);
  const vim = vimKey ? conns[vimKey] : undefined;
  let filesCache: Promise<Map<string, Buffer>> | undefined;
  const files = () => {
    filesCache ??= d.packages.files(instance.vnfPkgId);
    return filesCache;
  };
  return { instance, handler, command, vnfd, flavour, vim, vimKey: vimKey ?? 'vim1', files };
}

/** Computes and freezes the op's targets (levels, VNFC counts) in its checkpoint, so retries use the same. */
export async function planOp(d: Pick<LoadDeps, 'drivers'>, ctx: OpCtx, all: Loaded): Promise<OpPlan> {
  if (!ctx.targetScaleLevels || !ctx.targetVduCounts) {
    const p = all.handler.plan(all.command as never, all.instance, all.flavour);
    // VDUs the VIM driver does not deploy for this VNF (a subset instantiate) have no VNFCs.
    const drv = all.vim ? d.drivers.find(all.vim.vimType) : undefined;
    const deployed = drv?.deployedVdus ? await drv.deployedVdus({ instance: all.instance, command: all.command, vnfd: all.vnfd, flavour: all.flavour, files: all.files }) : undefined;
    if (deployed !== undefined) for (const vdu of Object.keys(p.targetVduCounts)) if (!deployed.includes(vdu)) p.targetVduCounts[vdu] = 0;
    ctx.targetScaleLevels = p.targetScaleLevels;
    ctx.targetVduCounts = p.targetVduCounts;
    if (p.instantiationLevelId !== undefined) ctx.instantiationLevelId = p.instantiationLevelId;
    if (p.fromLevel !== undefined) ctx.fromLevel = p.fromLevel;
    if (p.toLevel !== undefined) ctx.toLevel = p.toLevel;
  }
  return planOf(ctx);
}
