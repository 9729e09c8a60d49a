/**
 * Discovery documents: `/version`, legacy discovery (`/api`, `/apis`, `/api/v1`, `/apis/<g>/<v>`) and
 * aggregated discovery v2 (one round trip for kubectl). Resource lists include subresources such as
 * `deployments/scale` (autoscaling/v1 Scale), which `kubectl scale` resolves through discovery.
 */
import { groupVersions, RESOURCES, type ResourceDef } from './resource-registry.ts';
import type { Loose } from './types.ts';

const VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];

/** Kubernetes version the simulator claims to be. */
export const VERSION_INFO = {
  major: '1',
  minor: '32',
  gitVersion: 'v1.32.0-sim',
  gitCommit: '0000000000000000000000000000000000000000',
  gitTreeState: 'clean',
  buildDate: '2025-01-01T00:00:00Z',
  goVersion: 'go1.23.4',
  compiler: 'gc',
  platform: 'linux/amd64',
};

interface Sub {
  name: string;
  kind: string;
  group?: string;
  version?: string;
  verbs: string[];
}

function subresources(r: ResourceDef): Sub[] {
  const out: Sub[] = [];
  if (r.sub.status) out.push({ name: 'status', kind: r.kind, verbs: ['get', 'patch', 'update'] });
  if (r.sub.scale) out.push({ name: 'scale', kind: 'Scale', group: 'autoscaling', version: 'v1', verbs: ['get', 'patch', 'update'] });
  if (r.sub.pod) {
    out.push({ name: 'binding', kind: 'Binding', verbs: ['create'] });
    out.push({ name: 'eviction', kind: 'Eviction', group: 'policy', version: 'v1', verbs: ['create'] });
    out.push({ name: 'log', kind: 'Pod', verbs: ['get'] });
  }
  return out;
}

function verbsOf(r: ResourceDef): string[] {
  return r.kind === 'Event' || r.kind === 'Namespace' || r.kind === 'Node' || r.kind === 'PersistentVolume' ? VERBS.filter((v) => !(r.kind === 'Namespace' && v === 'deletecollection')) : VERBS;
}

/** `/api` (APIVersions). */
export function apiVersions(serverAddress: string): Loose {
  return { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress }] };
}

function groupEntry(group: string): Loose {
  const versions = groupVersions()
    .filter((g) => g.group === group)
    .map((g) => ({ groupVersion: `${group}/${g.version}`, version: g.version }));
  return { name: group, versions, preferredVersion: versions[0] };
}

function groupNames(): string[] {
  return [...new Set(groupVersions().map((g) => g.group))].filter((g) => g !== '');
}

/** `/apis` (APIGroupList). */
export function apiGroupList(): Loose {
  return { kind: 'APIGroupList', apiVersion: 'v1', groups: groupNames().map(groupEntry) };
}

/** `/apis/<group>` (APIGroup), undefined when unknown. */
export function apiGroup(group: string): Loose | undefined {
  if (!groupNames().includes(group)) return undefined;
  return { kind: 'APIGroup', apiVersion: 'v1', ...groupEntry(group) };
}

/** `/api/v1` or `/apis/<g>/<v>` (APIResourceList), undefined when unknown. */
export function apiResourceList(group: string, version: string): Loose | undefined {
  const rs = RESOURCES.filter((r) => r.group === group && r.version === version);
  if (!rs.length) return undefined;
  const resources: Loose[] = [];
  for (const r of rs) {
    const e: Loose = { name: r.plural, singularName: r.singular, namespaced: r.namespaced, kind: r.kind, verbs: verbsOf(r) };
    if (r.shortNames.length) e.shortNames = r.shortNames;
    if (r.categories.length) e.categories = r.categories;
    resources.push(e);
    for (const s of subresources(r)) {
      const se: Loose = { name: `${r.plural}/${s.name}`, singularName: '', namespaced: r.namespaced, kind: s.kind, verbs: s.verbs };
      if (s.group !== undefined) {
        se.group = s.group;
        se.version = s.version;
      }
      resources.push(se);
    }
  }
  return { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: group ? `${group}/${version}` : version, resources };
}

/** Aggregated discovery (`APIGroupDiscoveryList`) for `/api` (core) or `/apis` (named groups). */
export function aggregatedDiscovery(core: boolean, apiVersion: string): Loose {
  const groups = core ? [''] : groupNames();
  const items = groups.map((group) => {
    const versions = groupVersions()
      .filter((g) => g.group === group)
      .map((g) => ({
        version: g.version,
        resources: RESOURCES.filter((r) => r.group === group && r.version === g.version).map((r) => {
          const e: Loose = {
            resource: r.plural,
            responseKind: { group, version: g.version, kind: r.kind },
            scope: r.namespaced ? 'Namespaced' : 'Cluster',
            singularResource: r.singular,
            verbs: verbsOf(r),
          };
          if (r.shortNames.length) e.shortNames = r.shortNames;
          if (r.categories.length) e.categories = r.categories;
          const subs = subresources(r);
          if (subs.length) {
            e.subresources = subs.map((s) => ({
              subresource: s.name,
              responseKind: { group: s.group ?? group, version: s.version ?? g.version, kind: s.kind },
              verbs: s.verbs,
            }));
          }
          return e;
        }),
        freshness: 'Current',
      }));
    return { metadata: group ? { name: group, creationTimestamp: null } : { creationTimestamp: null }, versions };
  });
  return { kind: 'APIGroupDiscoveryList', apiVersion, metadata: {}, items };
}
