/**
 * Start-up wiring of the simulated cloud: starts the simulated OpenStack, Kubernetes cluster and
 * Server Notifier as separate HTTP servers and registers them as the default VIMs, so a new user
 * can instantiate and heal right away. Only this file imports `src/sim/`, and only with a dynamic
 * `import()` when the simulated cloud starts, so a VNFM run without it (`--no-sim`) loads none of
 * the simulators (scripts/check-deps.mjs enforces both).
 */
import type { PluginHooks } from '../core/plugin.ts';
import type { AppContext } from '../core/services.ts';
import type { VimInput } from '../vims/vim-registry.ts';

/** Names under which the simulated VIMs are registered. */
export const SIM_VIM_NAMES = { openstack: 'sim-openstack', kubernetes: 'sim-kubernetes' } as const;

/** What is running, for the banner and for tests. */
export interface SimCloud {
  openstackUrl: string;
  kubernetesUrl: string;
  serverNotifierUrl?: string;
}

async function upsertVim(ctx: AppContext, input: VimInput): Promise<void> {
  const existing = (await ctx.vims.list()).find((v) => v.name === input.name);
  const hasDefault = (await ctx.vims.getDefault(input.type as 'openstack' | 'kubernetes')) !== undefined;
  if (existing) await ctx.vims.update(existing.id, { ...input, is_default: existing.isDefault });
  else await ctx.vims.register({ ...input, is_default: !hasDefault });
}

/** Plugin: starts the simulated cloud when `config.sim` is true. */
export function setupSimCloud(ctx: AppContext & { simCloud?: SimCloud }): PluginHooks | undefined {
  if (!ctx.config.sim) return undefined;
  const closers: (() => Promise<void>)[] = [];
  return {
    async start() {
      const log = ctx.log.child({ component: 'sim' });
      const [{ startOpenStackSim }, { startServerNotifierSim }, { startKubernetesSim }] = await Promise.all([
        import('../sim/openstack/index.ts'),
        import('../sim/server-notifier/index.ts'),
        import('../sim/kubernetes/index.ts'),
      ]);
      const os = await startOpenStackSim({ port: ctx.config.simPorts.openstack, vnfmUrl: `${ctx.config.publicUrl}/`, logger: log.child({ sim: 'openstack' }, { level: 'warn' }) });
      closers.push(() => os.close());
      const fc = ctx.config.faultNotification;
      const notificationAuth =
        fc.auth === 'bearer' && fc.credential
          ? { type: 'bearer' as const, token: fc.credential }
          : fc.auth === 'basic' && fc.credential
            ? { type: 'basic' as const, username: fc.credential.split(':')[0] ?? '', password: fc.credential.split(':').slice(1).join(':') }
            : undefined;
      const notifier = await startServerNotifierSim({ port: ctx.config.simPorts.serverNotifier, openstackUrl: os.url, keystoneUrl: os.authUrl, ...(notificationAuth ? { notificationAuth } : {}) });
      closers.push(() => notifier.close());
      const k8s = await startKubernetesSim({ port: ctx.config.simPorts.kubernetes, token: 'sim-kubernetes-token' });
      closers.push(() => k8s.close());
      const c = os.credentials;
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
      ctx.simCloud = { openstackUrl: os.url, kubernetesUrl: k8s.url, serverNotifierUrl: notifier.url };
      log.info({ openstack: os.authUrl, kubernetes: k8s.url, serverNotifier: notifier.url }, 'simulated cloud started');
    },
    async stop() {
      for (const c of closers.reverse()) await c().catch(() => undefined);
    },
  };
}
