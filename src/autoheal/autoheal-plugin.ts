/**
 * Builds auto-heal over the LCM engine: the ledger, the fault intake queue, the batcher (fired by
 * deadlines, by ending operations and by a periodic sweep) and the Server Notifier alarm
 * registration driver. The fault intake route and the ledger API (src/api/autoheal/) are served
 * from `Services.autoheal`.
 */
import type { PluginHooks } from '../core/plugin.ts';
import type { BaseServices } from '../core/base-services.ts';
import type { Engine } from '../lcm/engine.ts';
import { createServerNotifierMgmtDriver, type ServerNotifierDriverOptions } from '../mgmt/drivers/server-notifier/server-notifier-driver.ts';
import { HealBatcher } from './batcher.ts';
import { InstanceFactsCache } from './instance-facts.ts';
import { IntakeQueue } from './intake-queue.ts';
import { FaultLedger } from './ledger.ts';
import { type AutohealOptions, resolveAutohealOptions } from './storm-guard.ts';
import { type DetectedFault, type DetectedFaultResult, packDetectedFault } from './detected-faults.ts';

/** What auto-heal serves (tests and other modules reach the batcher through it). */
export interface AutohealHandle {
  ledger: FaultLedger;
  batcher: HealBatcher;
  /** The fault intake's group-commit queue. */
  intake: IntakeQueue;
  options: AutohealOptions;
  /** Records a fault the VNFM detected itself (its health model) like a Server Notifier report. */
  reportDetected(f: DetectedFault): Promise<DetectedFaultResult>;
}

/** What auto-heal is built over: the base services and the engine. */
export type AutohealDeps = Pick<BaseServices, 'config' | 'store' | 'log' | 'metrics' | 'instances' | 'serverNotifiers' | 'outbound' | 'vimOutbound'> & { engine: Engine };

/** Options of {@link createAutoheal} (tests). */
export interface AutohealPluginOptions {
  /** The module's settings instead of the config's `autoheal` section (filled with the defaults the same way). */
  settings?: Partial<AutohealOptions>;
  /** Options of the alarm registration driver (timeouts, fetch). */
  serverNotifier?: ServerNotifierDriverOptions;
  /** Do not register the alarm registration driver. @default false */
  noMgmtDriver?: boolean;
}

/** Builds auto-heal and its start/stop hooks (the batcher, fed by the runner's finished operations). */
export function createAutoheal(ctx: AutohealDeps, popts: AutohealPluginOptions = {}): { autoheal: AutohealHandle; hooks: PluginHooks } {
  const engine = ctx.engine;
  const options = resolveAutohealOptions(ctx.config, popts.settings);
  const ledger = new FaultLedger(ctx.store.db);
  const log = ctx.log.child({ component: 'autoheal' });
  const facts = new InstanceFactsCache(ctx.store.db);
  const windowMs = () => ctx.config.faultNotification.windowMs;
  const intake = new IntakeQueue({ ledger, facts, windowMs, workerId: ctx.config.runner.workerId });
  const batcher = new HealBatcher({ ledger, lcm: engine.lcm, instances: ctx.instances, metrics: ctx.metrics, log, options, workerId: ctx.config.runner.workerId, intake, singleProcess: ctx.store.kind === 'pglite' });
  for (const r of ['held', 'dropped']) ctx.metrics.healBatches.inc({ result: r }, 0);
  if (!popts.noMgmtDriver) {
    engine.mgmt.register(
      createServerNotifierMgmtDriver({
        // Only registered notifiers, checked against the outbound rules again at each call.
        notifiers: (ref, vimIds) => ctx.serverNotifiers.resolve(ref, vimIds),
        ...(popts.serverNotifier ?? {}),
        fetch: ctx.outbound.fetch(popts.serverNotifier?.fetch),
        vimOutbound: ctx.vimOutbound,
      }),
    );
  }
  const onFinished = (vnfInstanceId: string) => batcher.onOpFinished(vnfInstanceId);
  const hooks: PluginHooks = {
    async start() {
      engine.runner.on('finished', onFinished);
      await batcher.start();
    },
    async stop() {
      engine.runner.off('finished', onFinished);
      await batcher.stop();
    },
  };
  const reportDetected = (f: DetectedFault) => packDetectedFault({ ledger, facts, batcher, windowMs, workerId: ctx.config.runner.workerId }, f);
  return { autoheal: { ledger, batcher, intake, options, reportDetected }, hooks };
}
