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
import type { VimKindRules, VimRegistry } from '../vims/vim-registry.ts';
import type { InfraDriver } from './infra-driver.ts';

/** What a VIM plugin's driver is built with. */
export interface VimDriverDeps {
  /** The outbound rules of VIM endpoints (`outbound.vimAllow`): every request of the driver goes through them. */
  vimOutbound: OutboundGuard;
}

/** Background work of a health watcher (see {@link VimPlugin.healthWatcher}). */
export interface VimHealthWatcher {
  start(): void | Promise<void>;
  stop(): void | Promise<void>;
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
   * Reserved for a watcher of the VIMs of this type (reachability, quota): built by the composition
   * root over the registry and started with the other workers. No built-in plugin has one yet and
   * nothing calls it now.
   */
  healthWatcher?(deps: { vims: VimRegistry; log: Logger }): VimHealthWatcher;
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
