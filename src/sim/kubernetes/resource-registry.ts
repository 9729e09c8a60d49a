/**
 * The resource types the simulated API server serves, with the metadata discovery, routing and the
 * store need. One table drives everything so that adding a kind is one line.
 */

/** Subresources a kind supports (drives routing and discovery). */
export interface SubresourceFlags {
  status?: boolean;
  scale?: boolean;
  /** Pod-only subresources: `log`, `eviction`, `binding`. */
  pod?: boolean;
}

/** Static description of one REST resource (one group/version/plural). */
export interface ResourceDef {
  /** API group, `''` for the core group. */
  group: string;
  version: string;
  kind: string;
  plural: string;
  singular: string;
  namespaced: boolean;
  shortNames: string[];
  categories: string[];
  sub: SubresourceFlags;
  /** Whether `metadata.generation` is bumped when `spec` changes (workloads, like the real server). */
  generation: boolean;
  /** `apiVersion` of objects of this kind, e.g. `apps/v1` or `v1`. */
  apiVersion: string;
  /** Store key (`group/plural`), unique per kind. */
  key: string;
}

type DefInput = Omit<ResourceDef, 'apiVersion' | 'key' | 'singular' | 'shortNames' | 'categories' | 'sub' | 'generation'> &
  Partial<Pick<ResourceDef, 'shortNames' | 'categories' | 'sub' | 'generation' | 'singular'>>;

function def(d: DefInput): ResourceDef {
  return {
    shortNames: [],
    categories: [],
    sub: {},
    generation: false,
    singular: d.kind.toLowerCase(),
    ...d,
    apiVersion: d.group === '' ? d.version : `${d.group}/${d.version}`,
    key: `${d.group}/${d.plural}`,
  };
}

const ALL = ['all'];

/** Every resource the simulator knows, in discovery order. */
export const RESOURCES: readonly ResourceDef[] = [
  def({ group: '', version: 'v1', kind: 'Namespace', plural: 'namespaces', namespaced: false, shortNames: ['ns'], sub: { status: true } }),
  def({ group: '', version: 'v1', kind: 'Node', plural: 'nodes', namespaced: false, shortNames: ['no'], sub: { status: true } }),
  def({ group: '', version: 'v1', kind: 'Pod', plural: 'pods', namespaced: true, shortNames: ['po'], categories: ALL, sub: { status: true, pod: true } }),
  def({ group: '', version: 'v1', kind: 'Service', plural: 'services', namespaced: true, shortNames: ['svc'], categories: ALL, sub: { status: true } }),
  def({ group: '', version: 'v1', kind: 'Endpoints', plural: 'endpoints', singular: 'endpoints', namespaced: true, shortNames: ['ep'] }),
  def({ group: '', version: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true, shortNames: ['cm'] }),
  def({ group: '', version: 'v1', kind: 'Secret', plural: 'secrets', namespaced: true }),
  def({ group: '', version: 'v1', kind: 'PersistentVolumeClaim', plural: 'persistentvolumeclaims', namespaced: true, shortNames: ['pvc'], sub: { status: true } }),
  def({ group: '', version: 'v1', kind: 'PersistentVolume', plural: 'persistentvolumes', namespaced: false, shortNames: ['pv'], sub: { status: true } }),
  def({ group: '', version: 'v1', kind: 'Event', plural: 'events', namespaced: true, shortNames: ['ev'] }),
  def({ group: '', version: 'v1', kind: 'ServiceAccount', plural: 'serviceaccounts', namespaced: true, shortNames: ['sa'] }),
  def({ group: '', version: 'v1', kind: 'ResourceQuota', plural: 'resourcequotas', namespaced: true, shortNames: ['quota'], sub: { status: true } }),
  def({ group: '', version: 'v1', kind: 'LimitRange', plural: 'limitranges', namespaced: true, shortNames: ['limits'] }),
  def({ group: 'apps', version: 'v1', kind: 'Deployment', plural: 'deployments', namespaced: true, shortNames: ['deploy'], categories: ALL, sub: { status: true, scale: true }, generation: true }),
  def({ group: 'apps', version: 'v1', kind: 'ReplicaSet', plural: 'replicasets', namespaced: true, shortNames: ['rs'], categories: ALL, sub: { status: true, scale: true }, generation: true }),
  def({ group: 'apps', version: 'v1', kind: 'StatefulSet', plural: 'statefulsets', namespaced: true, shortNames: ['sts'], categories: ALL, sub: { status: true, scale: true }, generation: true }),
  def({ group: 'apps', version: 'v1', kind: 'DaemonSet', plural: 'daemonsets', namespaced: true, shortNames: ['ds'], categories: ALL, sub: { status: true }, generation: true }),
  def({ group: 'apps', version: 'v1', kind: 'ControllerRevision', plural: 'controllerrevisions', namespaced: true }),
  def({ group: 'batch', version: 'v1', kind: 'Job', plural: 'jobs', namespaced: true, categories: ALL, sub: { status: true }, generation: true }),
  def({ group: 'batch', version: 'v1', kind: 'CronJob', plural: 'cronjobs', namespaced: true, shortNames: ['cj'], categories: ALL, sub: { status: true }, generation: true }),
  def({ group: 'autoscaling', version: 'v2', kind: 'HorizontalPodAutoscaler', plural: 'horizontalpodautoscalers', namespaced: true, shortNames: ['hpa'], categories: ALL, sub: { status: true } }),
  def({ group: 'networking.k8s.io', version: 'v1', kind: 'Ingress', plural: 'ingresses', namespaced: true, shortNames: ['ing'], sub: { status: true }, generation: true }),
  def({ group: 'networking.k8s.io', version: 'v1', kind: 'NetworkPolicy', plural: 'networkpolicies', namespaced: true, shortNames: ['netpol'], generation: true }),
  def({ group: 'policy', version: 'v1', kind: 'PodDisruptionBudget', plural: 'poddisruptionbudgets', namespaced: true, shortNames: ['pdb'], sub: { status: true }, generation: true }),
  def({ group: 'rbac.authorization.k8s.io', version: 'v1', kind: 'Role', plural: 'roles', namespaced: true }),
  def({ group: 'rbac.authorization.k8s.io', version: 'v1', kind: 'RoleBinding', plural: 'rolebindings', namespaced: true }),
  def({ group: 'rbac.authorization.k8s.io', version: 'v1', kind: 'ClusterRole', plural: 'clusterroles', namespaced: false }),
  def({ group: 'rbac.authorization.k8s.io', version: 'v1', kind: 'ClusterRoleBinding', plural: 'clusterrolebindings', namespaced: false }),
  def({ group: 'storage.k8s.io', version: 'v1', kind: 'StorageClass', plural: 'storageclasses', namespaced: false, shortNames: ['sc'] }),
  def({ group: 'coordination.k8s.io', version: 'v1', kind: 'Lease', plural: 'leases', namespaced: true }),
];

const byGvr = new Map<string, ResourceDef>();
const byGvk = new Map<string, ResourceDef>();
for (const r of RESOURCES) {
  byGvr.set(`${r.group}/${r.version}/${r.plural}`, r);
  byGvk.set(`${r.apiVersion}/${r.kind}`, r);
}

/** Finds the resource served at `/api[s]/<group>/<version>/<plural>`. */
export function findResource(group: string, version: string, plural: string): ResourceDef | undefined {
  return byGvr.get(`${group}/${version}/${plural}`);
}

/** Finds the resource of an `apiVersion` + `kind` pair (used for owner references and admission). */
export function findResourceByKind(apiVersion: string, kind: string): ResourceDef | undefined {
  return byGvk.get(`${apiVersion}/${kind}`);
}

/** Typed shortcut to a resource that is known to exist (controllers use these). */
export function mustResource(group: string, plural: string): ResourceDef {
  const r = RESOURCES.find((x) => x.group === group && x.plural === plural);
  if (!r) throw new Error(`unknown resource ${group}/${plural}`);
  return r;
}

/** The resources the controllers touch, resolved once. */
export const R = {
  namespaces: mustResource('', 'namespaces'),
  nodes: mustResource('', 'nodes'),
  pods: mustResource('', 'pods'),
  services: mustResource('', 'services'),
  endpoints: mustResource('', 'endpoints'),
  configmaps: mustResource('', 'configmaps'),
  secrets: mustResource('', 'secrets'),
  pvcs: mustResource('', 'persistentvolumeclaims'),
  pvs: mustResource('', 'persistentvolumes'),
  events: mustResource('', 'events'),
  serviceaccounts: mustResource('', 'serviceaccounts'),
  deployments: mustResource('apps', 'deployments'),
  replicasets: mustResource('apps', 'replicasets'),
  statefulsets: mustResource('apps', 'statefulsets'),
  daemonsets: mustResource('apps', 'daemonsets'),
  storageclasses: mustResource('storage.k8s.io', 'storageclasses'),
} as const;

/** Group versions in discovery order (`''` = core). */
export function groupVersions(): { group: string; version: string }[] {
  const seen = new Set<string>();
  const out: { group: string; version: string }[] = [];
  for (const r of RESOURCES) {
    const k = `${r.group}/${r.version}`;
    if (!seen.has(k)) {
      seen.add(k);
      out.push({ group: r.group, version: r.version });
    }
  }
  return out;
}
