/**
 * Builds the LCM engine of a VNFM: driver registry (one driver per VIM plugin), management drivers,
 * grant client, request service, executor and runner. The composition root serves it to the API
 * (`Services.engine`, routes in src/api/vnflcm/lcm-routes.ts) and hands it to the modules built on it.
 */
import { readFileSync } from 'node:fs';
import type { PluginHooks } from '../core/plugin.ts';
import type { BaseServices } from '../core/base-services.ts';
import { InfraDriverRegistry } from '../infra/infra-driver.ts';
import { ownerInstanceId } from '../mgmt/lb/index.ts';
import { MgmtRunner } from '../mgmt/mgmt-driver.ts';
import { createNodePortLbDriver } from '../mgmt/drivers/cnf-nodeport-lb/index.ts';
import { createKubeadmDriver, driverConfig as kubeadmConfig } from '../mgmt/drivers/k8s-kubeadm/index.ts';
import { createKubesprayDriver, kubesprayConfig } from '../mgmt/drivers/k8s-kubespray/index.ts';
import { ScriptMgmtDriver } from '../mgmt/script-runner.ts';
import { ConfigError } from '../config.ts';
import { createGrantClient, type GrantClient } from '../nfvo/grant-client.ts';
import { tlsFetch } from '../net/tls-fetch.ts';
import { isVnfmError } from '../errors.ts';
import { Executor } from './executor.ts';
import { LcmService } from './lcm-service.ts';
import { MgmtStore } from './mgmt-context.ts';
import { activeOpOcc } from './op-occ-repo.ts';
import { OpOccStates } from './op-occ-state.ts';
import { Runner } from './runner.ts';

/** The engine parts other modules use (auto-heal, tests). */
export interface Engine {
  lcm: LcmService;
  runner: Runner;
  drivers: InfraDriverRegistry;
  mgmt: MgmtRunner;
  grants: GrantClient;
  /** Op occ state transitions (with their notifications). */
  states: OpOccStates;
}

/** What the engine is built over. */
export type EngineDeps = Pick<BaseServices, 'config' | 'store' | 'log' | 'box' | 'metrics' | 'notifier' | 'vims' | 'instances' | 'packages' | 'outbound' | 'vimOutbound' | 'serverNotifiers' | 'vimPlugins'>;

/** Builds the engine and its start/stop hooks (the runner). */
export function createEngine(ctx: EngineDeps): { engine: Engine; hooks: PluginHooks } {
  const drivers = new InfraDriverRegistry();
  // One driver per VIM plugin, registered last to first so that an earlier plugin's driver is
  // found first (a driver registered later, e.g. a test's, is found before them all). VIM
  // endpoints (and the Keystone catalog's URLs) are checked against the outbound rules of VIMs
  // before every request.
  for (const p of [...ctx.vimPlugins.list].reverse()) drivers.register(p.createDriver({ vimOutbound: ctx.vimOutbound }));
  const mgmt = new MgmtRunner();
  // Built-in drivers first (they claim VNFD hook artifacts by name or property), package scripts
  // for the hooks no built-in driver claims.
  // The cluster drivers' settings (config `mgmt.kubeadm`, `mgmt.kubespray`) are checked here, once.
  let kubeadmSettings: ReturnType<typeof kubeadmConfig>;
  let kubespraySettings: ReturnType<typeof kubesprayConfig>;
  try {
    kubeadmSettings = kubeadmConfig(ctx.config);
    kubespraySettings = kubesprayConfig(ctx.config);
  } catch (e) {
    throw new ConfigError((e as Error).message);
  }
  const mgmtStore = new MgmtStore(ctx.store.db, ctx.box, ctx.vims);
  // A section of an external LB is stale when its VNF instance is unknown here, or not
  // instantiated with no operation in progress (a failed instantiate marked failed, a deleted
  // instance): the drivers remove it when it is in the way of another owner's section.
  const lbOwnerIsStale = async (owner: string): Promise<boolean> => {
    const id = ownerInstanceId(owner);
    if (id === undefined) return false;
    try {
      const inst = await ctx.instances.get(id);
      if (inst.instantiationState === 'INSTANTIATED') return false;
    } catch (e) {
      if (isVnfmError(e) && e.code === 'VNFM_ERR_INST_NOT_FOUND') return true;
      throw e;
    }
    return (await activeOpOcc(ctx.store.db, id)) === undefined;
  };
  mgmt.register(createKubeadmDriver({ config: kubeadmSettings }));
  mgmt.register(
    createKubesprayDriver({
      config: kubespraySettings,
      // the instance whose cluster uses an inventory directory (`<ansible ip>:<path>`)
      inventoryOwner: async (key) => {
        for (const s of await mgmtStore.driverStates('k8s-kubespray')) {
          const inv = s.state.inventory as { host?: string; path?: string } | undefined;
          if (inv && `${inv.host}:${inv.path}` === key) return s.instanceId;
        }
        return undefined;
      },
      lbOwnerIsStale,
    }),
  );
  mgmt.register(createNodePortLbDriver({ kubeClient: { outbound: ctx.vimOutbound }, lb: { ownerIsStale: lbOwnerIsStale } }));
  mgmt.register(new ScriptMgmtDriver());
  const grants = createGrantClient(ctx.config, ctx.outbound.fetch(ctx.config.grants.caFile ? tlsFetch({ ca: readFileSync(ctx.config.grants.caFile, 'utf8') }) : undefined));
  let runner: Runner | undefined;
  const states = new OpOccStates({ notifier: ctx.notifier, metrics: ctx.metrics, instance: (id, tx) => ctx.instances.get(id, tx) });
  const lcm = new LcmService(ctx.store.db, ctx.instances, ctx.packages, states, ctx.log, () => runner?.wake(), (t) => drivers.find(t), { mgmt, mgmtStore, serverNotifiers: ctx.serverNotifiers, vimPlugins: ctx.vimPlugins });
  const executor = new Executor({ db: ctx.store.db, config: ctx.config, log: ctx.log, metrics: ctx.metrics, states, instances: ctx.instances, packages: ctx.packages, drivers, mgmt, mgmtStore, grants, wakeAfter: (ms) => runner?.wakeAfter(ms) });
  // the aborted ops get half of the stop margin to reach a safe point, the rest of the stop the other half
  runner = new Runner(ctx.store.db, executor, { ...ctx.config.runner, abortWaitMs: Math.min(10_000, Math.floor(ctx.config.runner.shutdownMarginMs / 2)), heartbeatDb: ctx.store.leaseDb, singleProcess: ctx.store.kind === 'pglite' }, ctx.log, ctx.metrics);
  const r = runner;
  return { engine: { lcm, runner, drivers, mgmt, grants, states }, hooks: { start: () => r.start(), stop: () => r.stop() } };
}
