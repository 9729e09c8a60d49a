/**
 * Start-up wiring of the simulated cloud: starts the simulated OpenStack, Kubernetes cluster and
 * Server Notifier as separate HTTP servers and registers them as the default VIMs, so a new user
 * can instantiate and heal right away. Only this file imports `src/sim/`, and only with a dynamic
 * `import()` when the simulated cloud starts, so a VNFM run without it (`--no-sim`) loads none of
 * the simulators (scripts/check-deps.mjs enforces both).
 *
 * The simulated cloud keeps its state in `<dataDir>/sim/` (one JSON file per simulator, saved
 * shortly after each change and on stop), so a restarted VNFM finds the stacks and pods its
 * instances point at; `simReset` (`--reset-sim`) deletes that state first. A VNFM on a throwaway
 * database (`memory://`) runs a throwaway cloud too.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { PluginHooks } from '../core/plugin.ts';
import type { BaseServices, SimCloudInfo } from '../core/services.ts';
import type { VimInput } from '../vims/vim-registry.ts';
import { type LabInfo, startLabFor } from './lab.ts';

/** Names under which the simulated VIMs are registered. */
export const SIM_VIM_NAMES = { openstack: 'sim-openstack', kubernetes: 'sim-kubernetes' } as const;

/** Name under which the simulated Server Notifier is registered. */
export const SIM_NOTIFIER_NAME = 'sim-server-notifier';

/** What is running, for the banner and for tests. */
export interface SimCloud extends SimCloudInfo {
  /** The live-VM lab, when `lab.enabled`. */
  lab?: LabInfo;
}

/** The saved state of the simulated cloud cannot be used; the message says which file and why. */
export class SimStateUnusableError extends Error {}

/** Directory of the simulated cloud's saved state, or undefined when the data directory is not on disk. */
export function simStateDir(dataDir: string): string | undefined {
  return dataDir.startsWith('memory://') ? undefined : join(dataDir, 'sim');
}

async function upsertVim(ctx: BaseServices, input: VimInput): Promise<void> {
  // the simulated cloud's VIMs are shared (no project); a project's VIM of the same name is its own
  const existing = (await ctx.vims.list()).find((v) => v.name === input.name && v.project === null);
  const hasDefault = (await ctx.vims.getDefault(input.type ?? '')) !== undefined;
  if (existing) await ctx.vims.update(existing.id, { ...input, is_default: existing.isDefault });
  else await ctx.vims.register({ ...input, is_default: !hasDefault });
}

/**
 * The simulated cloud's background work when `config.sim` is true (built by the composition root,
 * src/main/compose.ts): starts it and registers its VIMs. `info()` says what runs once it has
 * started (the composition root shows it as `simCloud` on the services).
 */
export function setupSimCloud(ctx: BaseServices): { hooks: PluginHooks; info: () => SimCloud | undefined } | undefined {
  if (!ctx.config.sim) return undefined;
  const closers: (() => Promise<void>)[] = [];
  let running: SimCloud | undefined;
  const hooks: PluginHooks = {
    async start() {
      const log = ctx.log.child({ component: 'sim' });
      const stateDir = simStateDir(ctx.config.dataDir);
      const [{ startOpenStackSim, OPENSTACK_STATE_NAME }, { startServerNotifierSim, SERVER_NOTIFIER_STATE_NAME }, { startKubernetesSim, KUBERNETES_STATE_NAME }] = await Promise.all([
        import('../sim/openstack/index.ts'),
        import('../sim/server-notifier/index.ts'),
        import('../sim/kubernetes/index.ts'),
      ]);
      if (stateDir && ctx.config.simReset) {
        // The content goes; the cluster's serving certificate stays, so the VIMs (and the
        // instances that copied their connection info) still trust it.
        for (const name of [OPENSTACK_STATE_NAME, KUBERNETES_STATE_NAME, SERVER_NOTIFIER_STATE_NAME]) rmSync(join(stateDir, `${name}.json`), { force: true });
        // the lab's Kubernetes goes with the servers its Nodes stood for
        rmSync(join(ctx.config.dataDir, 'lab', 'kubernetes', `${KUBERNETES_STATE_NAME}.json`), { force: true });
        log.info({ stateDir }, 'simulated cloud reset: saved state deleted');
      }
      const state = stateDir === undefined ? {} : { stateDir };
      const unusable = (e: unknown): never => {
        if (e instanceof Error && e.name === 'SimStateError') {
          throw new SimStateUnusableError(`${e.message}; \`vnfm start --reset-sim\` starts the simulated cloud empty (deleting its saved state in ${stateDir})`);
        }
        throw e;
      };
      const started = async <T extends { close(): Promise<void> }>(p: Promise<T>): Promise<T> => {
        try {
          const sim = await p;
          closers.push(() => sim.close());
          return sim;
        } catch (e) {
          for (const c of closers.splice(0).reverse()) await c().catch(() => undefined);
          return unusable(e);
        }
      };
      const os = await started(startOpenStackSim({ port: ctx.config.simPorts.openstack, vnfmUrl: `${ctx.config.publicUrl}/`, logger: log.child({ sim: 'openstack' }, { level: 'warn' }), ...state }));
      const fc = ctx.config.faultNotification;
      const notificationAuth =
        fc.auth === 'bearer' && fc.credential
          ? { type: 'bearer' as const, token: fc.credential }
          : fc.auth === 'basic' && fc.credential
            ? { type: 'basic' as const, username: fc.credential.split(':')[0] ?? '', password: fc.credential.split(':').slice(1).join(':') }
            : undefined;
      const notifier = await started(startServerNotifierSim({ port: ctx.config.simPorts.serverNotifier, openstackUrl: os.url, keystoneUrl: os.authUrl, ...(notificationAuth ? { notificationAuth } : {}), ...state }));
      const k8s = await started(startKubernetesSim({ port: ctx.config.simPorts.kubernetes, token: 'sim-kubernetes-token', ...state }));
      const c = os.credentials;
      // The simulated cloud runs on this host: its endpoints are trusted VIM endpoints (the outbound
      // rules of VIMs deny loopback), whatever `outbound.vimAllow` says.
      for (const u of [os.url, os.authUrl, k8s.url]) ctx.vimOutbound.trustOrigin(u);
      await upsertVim(ctx, {
        name: SIM_VIM_NAMES.openstack,
        type: 'openstack',
        description: 'simulated OpenStack (Keystone + Heat + Nova)',
        auth_url: c.authUrl,
        auth_cred: { username: c.username, password: c.password, user_domain_name: c.userDomain, region: c.region },
        vim_project: { name: c.project, project_domain_name: c.projectDomain },
      });
      await upsertVim(ctx, {
        name: SIM_VIM_NAMES.kubernetes,
        type: 'kubernetes',
        description: 'simulated Kubernetes cluster (3 worker nodes)',
        auth_url: k8s.url,
        auth_cred: { bearer_token: k8s.token, ssl_ca_cert: k8s.caCert },
        vim_project: { name: 'default' },
      });
      // The simulated cloud runs on this host: its endpoints are trusted outbound destinations, and
      // its Server Notifier is registered for the simulated OpenStack VIM (the one a VIM token may go to).
      ctx.outbound.trustOrigin(notifier.url);
      const simVim = (await ctx.vims.list()).find((v) => v.name === SIM_VIM_NAMES.openstack && v.project === null);
      if (simVim) {
        // The registration named SIM_NOTIFIER_NAME is the simulated cloud's own: replaced when the
        // notifier's URL (a port chosen at start) or the simulated VIM changed.
        const uri = notifier.url.replace(/\/+$/, '');
        const all = await ctx.serverNotifiers.list();
        if (!all.some((n) => n.uri === uri && n.vimId === simVim.id)) {
          const ours = all.find((n) => n.name === SIM_NOTIFIER_NAME);
          if (ours) await ctx.serverNotifiers.delete(ours.id);
          await ctx.serverNotifiers.register({ name: SIM_NOTIFIER_NAME, uri, vimId: simVim.id, description: 'simulated Server Notifier of the simulated OpenStack' });
        }
      }
      const restored = os.restored || k8s.restored || notifier.restored;
      const info: SimCloud = { openstackUrl: os.url, kubernetesUrl: k8s.url, serverNotifierUrl: notifier.url, ...(stateDir ? { stateDir, restored } : {}) };
      if (ctx.config.lab.enabled) {
        try {
          const lab = await startLabFor(ctx.config, os, ctx.log.child({ component: 'lab' }));
          closers.push(() => lab.close());
          info.lab = lab.info;
        } catch (e) {
          for (const c of closers.splice(0).reverse()) await c().catch(() => undefined);
          throw e;
        }
      }
      running = info;
      log.info({ openstack: os.authUrl, kubernetes: k8s.url, serverNotifier: notifier.url, stateDir: stateDir ?? null, restored }, restored ? 'simulated cloud started (state restored)' : 'simulated cloud started');
    },
    async stop() {
      running = undefined;
      for (const c of closers.reverse()) await c().catch(() => undefined);
    },
  };
  return { hooks, info: () => running };
}
