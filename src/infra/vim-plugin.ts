/**
 * The seam of a VIM type. Each type lives in one folder (src/infra/openstack/,
 * src/infra/kubernetes/) with a `vim-plugin.ts` that says everything the VNFM needs of it: its
 * names, the credentials of a registration (the VIM registry), its infra driver (the engine),
 * whether the background drift sync visits its instances, and which packages default to it. The
 * composition root (src/main/) registers the plugins and hands the list, a {@link VimPlugins}, to
 * the VIM registry, the LCM service, the engine and the drift sync: nothing else names a VIM type.
 */
import type { Logger } from 'pino';
import type { OutboundGuard } from '../net/outbound.ts';
import type { VnfPackageModel } from '../packages/vnfd-model.ts';
import type { ResourceHealth } from '../model/vnfc-health.ts';
import type { VimConnection, VimKindRules, VimRegistry } from '../vims/vim-registry.ts';
import type { InfraDriver } from './infra-driver.ts';

/** What a VIM plugin's driver is built with. */
export interface VimDriverDeps {
  /** The outbound rules of VIM endpoints (`outbound.vimAllow`): every request of the driver goes through them. */
  vimOutbound: OutboundGuard;
}

/** Background work of a health watcher (see {@link VimPlugin.healthWatcher}). */
export interface VimHealthWatcher {
  start(): void | Promise<void>;
  /** Stops every poll and watch; resolves when no request of the watcher is in flight. */
  stop(): void | Promise<void>;
}

/** One connection a health watcher watches: one per VIM project (not per VNF). */
export interface HealthWatchTarget {
  /** Stable key of the connection (the same VIM and project give the same key); reports name it. */
  key: string;
  /** The connection with its secrets opened, as the infra driver receives it. */
  vim: VimConnection;
  /** Ids of the resources the VNFM's instances own on it (server ids, pod names); report only these. */
  resources: ReadonlySet<string>;
  /** Kubernetes: the namespaces of those pods. */
  namespaces?: readonly string[];
  /** Kubernetes: node names to watch (the nodes of cluster VNFs that registered this VIM). */
  nodes?: ReadonlySet<string>;
}

/** What the health monitor hands a VIM type's watcher. */
export interface HealthWatcherDeps {
  /** The outbound rules of VIM endpoints: every request of the watcher goes through them. */
  vimOutbound: OutboundGuard;
  log: Logger;
  /** The current targets on VIMs of this type; called at every period (cheap: read from the store). */
  targets(): Promise<HealthWatchTarget[]>;
  /**
   * Observations of resources of a target: those that changed since the last report, or all of
   * them. A resource of the target that the VIM no longer has is reported with reason `DELETED`
   * (condition `faulty`).
   */
  report(key: string, observations: readonly ResourceHealth[]): void;
  /** The target's VIM cannot be read (down, 5xx, auth failure): its resources become `unknown`. */
  unreachable(key: string, reason: string): void;
  /** Poll period of polling watchers (ms). */
  periodMs: number;
  /** Counts each request a watcher sends to a VIM (metric `vnfm_health_watch_requests_total`). */
  countRequest(vimType: string): void;
}

/** One VIM type (see the module comment). */
export interface VimPlugin extends VimKindRules {
  /** Builds the infra driver of the type (its `vimTypes` include {@link VimKindRules.vimType}). */
  createDriver(deps: VimDriverDeps): InfraDriver;
  /** Whether the background drift sync visits instances on such VIMs when `sync.vimTypes` is not set. */
  readonly syncByDefault: boolean;
  /**
   * Whether a package's flavour deploys onto such a VIM: an instantiation without
   * vimConnectionInfo then uses the default VIM of this kind (plugins are asked in registration order).
   */
  deploysPackage?(vnfd: VnfPackageModel, flavourId: string): boolean;
  /** The kind used when no plugin claims the package (the first plugin that says so). */
  readonly packageFallback?: boolean;
  /**
   * The health watcher of VIMs of this type: one per VNFM, watching every target (one per VIM
   * project) the health monitor hands it; built and started by the composition root.
   */
  healthWatcher?(deps: HealthWatcherDeps): VimHealthWatcher;
}

/** The registered VIM plugins, in registration order. */
export class VimPlugins {
  readonly list: readonly VimPlugin[];

  constructor(plugins: readonly VimPlugin[]) {
    const seen = new Set<string>();
    for (const p of plugins) {
      for (const name of [p.kind, p.vimType]) {
        if (seen.has(name)) throw new Error(`VIM plugin ${p.kind}: ${name} is served by another VIM plugin`);
        seen.add(name);
      }
    }
    this.list = [...plugins];
  }

  /** The plugin of a SOL vimType (exact) or undefined. */
  byVimType(vimType: string): VimPlugin | undefined {
    return this.list.find((p) => p.vimType === vimType);
  }

  /** The SOL vimTypes served, in registration order. */
  vimTypes(): string[] {
    return this.list.map((p) => p.vimType);
  }

  /** The vimTypes the background drift sync visits by default. */
  syncVimTypes(): string[] {
    return this.list.filter((p) => p.syncByDefault).map((p) => p.vimType);
  }

  /** The kind of the default VIM an instantiation of `flavourId` uses when it names no VIM. */
  kindForPackage(vnfd: VnfPackageModel, flavourId: string): string | undefined {
    return (this.list.find((p) => p.deploysPackage?.(vnfd, flavourId)) ?? this.list.find((p) => p.packageFallback) ?? this.list[0])?.kind;
  }
}
