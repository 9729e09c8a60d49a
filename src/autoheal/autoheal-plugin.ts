/**
 * Wires auto-heal into a VNFM: the ledger, the fault intake queue, the batcher (fired by
 * deadlines, by ending operations and by a periodic sweep) and the Server Notifier alarm
 * registration driver, set on `ctx.autoheal`. Must run after the engine plugin (it uses
 * `ctx.engine`). The fault intake route and the ledger API (src/api/autoheal/) are served from
 * `ctx.autoheal`.
 */
import type { PluginHooks } from '../core/plugin.ts';
import type { AppContext } from '../core/services.ts';
import type { Engine } from '../lcm/engine.ts';
import { createServerNotifierMgmtDriver, type ServerNotifierDriverOptions } from '../mgmt/drivers/server-notifier/server-notifier-driver.ts';
import { HealBatcher } from './batcher.ts';
import { InstanceFactsCache } from './instance-facts.ts';
import { IntakeQueue } from './intake-queue.ts';
import { FaultLedger } from './ledger.ts';
import { type AutohealOptions, resolveAutohealOptions } from './storm-guard.ts';

/** What auto-heal adds to the context (tests and other modules reach the batcher through it). */
export interface AutohealHandle {
  ledger: FaultLedger;
  batcher: HealBatcher;
  /** The fault intake's group-commit queue. */
  intake: IntakeQueue;
  options: AutohealOptions;
}

/** A context after {@link setupAutoheal}. */
export type AutohealContext = AppContext & { engine?: Engine; autoheal?: AutohealHandle };

/** Options of {@link createAutohealPlugin} (tests). */
export interface AutohealPluginOptions {
  /** Options of the alarm registration driver (timeouts, fetch). */
  serverNotifier?: ServerNotifierDriverOptions;
  /** Do not register the alarm registration driver. @default false */
  noMgmtDriver?: boolean;
}

/** Builds the auto-heal plugin with explicit options. */
export function createAutohealPlugin(popts: AutohealPluginOptions = {}): (ctx: AutohealContext) => PluginHooks {
  return (ctx) => {
    const engine = ctx.engine;
    if (!engine) throw new Error('auto-heal needs the LCM engine: wire setupAutoheal after setupEngine');
    const options = resolveAutohealOptions(ctx.config);
    const ledger = new FaultLedger(ctx.store.db);
    const log = ctx.log.child({ component: 'autoheal' });
    const intake = new IntakeQueue({ ledger, facts: new InstanceFactsCache(ctx.store.db), windowMs: () => ctx.config.faultNotification.windowMs, workerId: ctx.config.runner.workerId });
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
    ctx.autoheal = { ledger, batcher, intake, options };
    const onFinished = (vnfInstanceId: string) => batcher.onOpFinished(vnfInstanceId);
    return {
      async start() {
        engine.runner.on('finished', onFinished);
        await batcher.start();
      },
      async stop() {
        engine.runner.off('finished', onFinished);
        await batcher.stop();
      },
    };
  };
}

/** The auto-heal plugin with default options (add it to the built-in plugins after the engine). */
export function setupAutoheal(ctx: AutohealContext): PluginHooks {
  return createAutohealPlugin()(ctx);
}
