/**
 * Server-side printing (`meta.k8s.io/v1 Table`), which `kubectl get` asks for: without it kubectl only
 * shows NAME and AGE. Columns follow the real API server's printers for the kinds the simulator runs
 * (priority-1 columns are the ones `-o wide` adds).
 */
import type { ResourceDef } from './resource-registry.ts';
import { selectorToString } from './selectors.ts';
import type { KubeObject, Loose } from './types.ts';

interface Column {
  name: string;
  type: string;
  format?: string;
  priority?: number;
  description?: string;
}

type Cell = string | number;

/** Human duration like kubectl's AGE column (`45s`, `3m12s`, `5h`, `12d`). */
export function humanDuration(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 120) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 10) return s % 60 ? `${m}m${s % 60}s` : `${m}m`;
  if (m < 180) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 8) return m % 60 ? `${h}h${m % 60}m` : `${h}h`;
  if (h < 48) return `${h}h`;
  const d = Math.floor(h / 24);
  if (d < 8) return h % 24 ? `${d}d${h % 24}h` : `${d}d`;
  if (d < 365 * 2) return `${d}d`;
  return `${Math.floor(d / 365)}y`;
}

function age(ts: string | undefined): string {
  if (!ts) return '<unknown>';
  return humanDuration(Date.now() - Date.parse(ts));
}

const NAME: Column = { name: 'Name', type: 'string', format: 'name', description: 'Name must be unique within a namespace.' };
const AGE: Column = { name: 'Age', type: 'string', description: 'CreationTimestamp is a timestamp representing the server time when this object was created.' };

function col(name: string, priority = 0, type = 'string'): Column {
  return { name, type, priority, description: name };
}

function containersAndImages(spec: Loose): [string, string] {
  const cs = (spec?.containers ?? []) as Loose[];
  return [cs.map((c) => c.name).join(','), cs.map((c) => c.image).join(',')];
}

function podStatus(p: KubeObject): string {
  let reason: string = p.status?.reason ?? p.status?.phase ?? 'Pending';
  for (const cs of (p.status?.containerStatuses ?? []) as Loose[]) {
    if (cs.state?.waiting?.reason) reason = cs.state.waiting.reason;
    else if (cs.state?.terminated?.reason) reason = cs.state.terminated.reason;
    else if (cs.state?.terminated) reason = cs.state.terminated.signal ? `Signal:${cs.state.terminated.signal}` : `ExitCode:${cs.state.terminated.exitCode}`;
  }
  if (p.status?.reason) reason = p.status.reason;
  if (reason === 'Running' && !(p.status?.conditions ?? []).some((c: Loose) => c.type === 'Ready' && c.status === 'True')) reason = 'Running';
  if (p.metadata.deletionTimestamp) reason = p.status?.reason === 'NodeLost' ? 'Unknown' : 'Terminating';
  return reason;
}

function nodeStatus(n: KubeObject): string {
  const ready = ((n.status?.conditions ?? []) as Loose[]).find((c) => c.type === 'Ready');
  const parts = [ready?.status === 'True' ? 'Ready' : ready ? 'NotReady' : 'Unknown'];
  if (n.spec?.unschedulable) parts.push('SchedulingDisabled');
  return parts.join(',');
}

function nodeRoles(n: KubeObject): string {
  const roles = Object.keys(n.metadata.labels ?? {})
    .filter((k) => k.startsWith('node-role.kubernetes.io/'))
    .map((k) => k.slice('node-role.kubernetes.io/'.length))
    .filter((r) => r);
  return roles.length ? roles.sort().join(',') : '<none>';
}

function servicePorts(s: KubeObject): string {
  const ports = (s.spec?.ports ?? []) as Loose[];
  if (!ports.length) return '<none>';
  return ports.map((p) => `${p.port}${p.nodePort ? `:${p.nodePort}` : ''}/${p.protocol ?? 'TCP'}`).join(',');
}

function externalIp(s: KubeObject): string {
  const t = s.spec?.type;
  const ext = (s.spec?.externalIPs ?? []) as string[];
  if (t === 'ExternalName') return s.spec?.externalName ?? '<none>';
  if (t === 'LoadBalancer') {
    const ing = ((s.status?.loadBalancer?.ingress ?? []) as Loose[]).map((i) => i.ip ?? i.hostname);
    const all = [...ing, ...ext];
    return all.length ? all.join(',') : '<pending>';
  }
  return ext.length ? ext.join(',') : '<none>';
}

function accessModes(modes: string[] | undefined): string {
  const short: Record<string, string> = { ReadWriteOnce: 'RWO', ReadOnlyMany: 'ROX', ReadWriteMany: 'RWX', ReadWriteOncePod: 'RWOP' };
  return (modes ?? []).map((m) => short[m] ?? m).join(',');
}

function selectorMap(sel: Record<string, string> | undefined): string {
  const e = Object.entries(sel ?? {});
  return e.length ? e.map(([k, v]) => `${k}=${v}`).join(',') : '<none>';
}

interface Printer {
  columns: Column[];
  row: (o: KubeObject) => Cell[];
}

const PRINTERS: Record<string, Printer> = {
  Pod: {
    columns: [NAME, col('Ready'), col('Status'), col('Restarts'), AGE, col('IP', 1), col('Node', 1), col('Nominated Node', 1), col('Readiness Gates', 1)],
    row: (p) => {
      const cs = (p.status?.containerStatuses ?? []) as Loose[];
      const total = (p.spec?.containers ?? []).length;
      const ready = cs.filter((c) => c.ready).length;
      const restarts = cs.reduce((s, c) => s + (c.restartCount ?? 0), 0);
      const gates = (p.spec?.readinessGates ?? []) as Loose[];
      return [p.metadata.name as string, `${ready}/${total}`, podStatus(p), String(restarts), age(p.metadata.creationTimestamp), p.status?.podIP ?? '<none>', p.spec?.nodeName ?? '<none>', p.status?.nominatedNodeName ?? '<none>', gates.length ? `0/${gates.length}` : '<none>'];
    },
  },
  Node: {
    columns: [NAME, col('Status'), col('Roles'), AGE, col('Version'), col('Internal-IP', 1), col('External-IP', 1), col('OS-Image', 1), col('Kernel-Version', 1), col('Container-Runtime', 1)],
    row: (n) => {
      const addr = (t: string) => ((n.status?.addresses ?? []) as Loose[]).find((a) => a.type === t)?.address ?? '<none>';
      const ni = n.status?.nodeInfo ?? {};
      return [n.metadata.name as string, nodeStatus(n), nodeRoles(n), age(n.metadata.creationTimestamp), ni.kubeletVersion ?? '', addr('InternalIP'), addr('ExternalIP'), ni.osImage ?? '', ni.kernelVersion ?? '', ni.containerRuntimeVersion ?? ''];
    },
  },
  Namespace: {
    columns: [NAME, col('Status'), AGE],
    row: (n) => [n.metadata.name as string, n.status?.phase ?? 'Active', age(n.metadata.creationTimestamp)],
  },
  Service: {
    columns: [NAME, col('Type'), col('Cluster-IP'), col('External-IP'), col('Port(s)'), AGE, col('Selector', 1)],
    row: (s) => [s.metadata.name as string, s.spec?.type ?? 'ClusterIP', s.spec?.clusterIP ?? '<none>', externalIp(s), servicePorts(s), age(s.metadata.creationTimestamp), selectorMap(s.spec?.selector)],
  },
  Endpoints: {
    columns: [NAME, col('Endpoints'), AGE],
    row: (e) => {
      const list: string[] = [];
      for (const s of (e.subsets ?? []) as Loose[]) for (const a of (s.addresses ?? []) as Loose[]) for (const p of (s.ports ?? [{}]) as Loose[]) list.push(p.port ? `${a.ip}:${p.port}` : a.ip);
      const shown = list.length > 3 ? `${list.slice(0, 3).join(',')} + ${list.length - 3} more...` : list.join(',');
      return [e.metadata.name as string, shown || '<none>', age(e.metadata.creationTimestamp)];
    },
  },
  ConfigMap: {
    columns: [NAME, col('Data', 0, 'integer'), AGE],
    row: (c) => [c.metadata.name as string, Object.keys(c.data ?? {}).length + Object.keys(c.binaryData ?? {}).length, age(c.metadata.creationTimestamp)],
  },
  Secret: {
    columns: [NAME, col('Type'), col('Data', 0, 'integer'), AGE],
    row: (s) => [s.metadata.name as string, s.type ?? 'Opaque', Object.keys(s.data ?? {}).length, age(s.metadata.creationTimestamp)],
  },
  ServiceAccount: {
    columns: [NAME, col('Secrets', 0, 'integer'), AGE],
    row: (s) => [s.metadata.name as string, (s.secrets ?? []).length, age(s.metadata.creationTimestamp)],
  },
  PersistentVolumeClaim: {
    columns: [NAME, col('Status'), col('Volume'), col('Capacity'), col('Access Modes'), col('StorageClass'), col('VolumeAttributesClass'), AGE, col('VolumeMode', 1)],
    row: (c) => [c.metadata.name as string, c.metadata.deletionTimestamp ? 'Terminating' : (c.status?.phase ?? 'Pending'), c.spec?.volumeName ?? '', c.status?.capacity?.storage ?? '', accessModes(c.status?.accessModes), c.spec?.storageClassName ?? '', c.spec?.volumeAttributesClassName ?? '<unset>', age(c.metadata.creationTimestamp), c.spec?.volumeMode ?? 'Filesystem'],
  },
  PersistentVolume: {
    columns: [NAME, col('Capacity'), col('Access Modes'), col('Reclaim Policy'), col('Status'), col('Claim'), col('StorageClass'), col('VolumeAttributesClass'), col('Reason'), AGE, col('VolumeMode', 1)],
    row: (v) => {
      const cr = v.spec?.claimRef;
      return [v.metadata.name as string, v.spec?.capacity?.storage ?? '', accessModes(v.spec?.accessModes), v.spec?.persistentVolumeReclaimPolicy ?? '', v.status?.phase ?? '', cr ? `${cr.namespace}/${cr.name}` : '', v.spec?.storageClassName ?? '', v.spec?.volumeAttributesClassName ?? '<unset>', v.status?.reason ?? '', age(v.metadata.creationTimestamp), v.spec?.volumeMode ?? 'Filesystem'];
    },
  },
  Deployment: {
    columns: [NAME, col('Ready'), col('Up-to-date', 0, 'integer'), col('Available', 0, 'integer'), AGE, col('Containers', 1), col('Images', 1), col('Selector', 1)],
    row: (d) => {
      const [c, i] = containersAndImages(d.spec?.template?.spec);
      return [d.metadata.name as string, `${d.status?.readyReplicas ?? 0}/${d.spec?.replicas ?? 1}`, d.status?.updatedReplicas ?? 0, d.status?.availableReplicas ?? 0, age(d.metadata.creationTimestamp), c, i, selectorToString(d.spec?.selector) || '<none>'];
    },
  },
  ReplicaSet: {
    columns: [NAME, col('Desired', 0, 'integer'), col('Current', 0, 'integer'), col('Ready', 0, 'integer'), AGE, col('Containers', 1), col('Images', 1), col('Selector', 1)],
    row: (r) => {
      const [c, i] = containersAndImages(r.spec?.template?.spec);
      return [r.metadata.name as string, r.spec?.replicas ?? 0, r.status?.replicas ?? 0, r.status?.readyReplicas ?? 0, age(r.metadata.creationTimestamp), c, i, selectorToString(r.spec?.selector) || '<none>'];
    },
  },
  StatefulSet: {
    columns: [NAME, col('Ready'), AGE, col('Containers', 1), col('Images', 1)],
    row: (s) => {
      const [c, i] = containersAndImages(s.spec?.template?.spec);
      return [s.metadata.name as string, `${s.status?.readyReplicas ?? 0}/${s.spec?.replicas ?? 1}`, age(s.metadata.creationTimestamp), c, i];
    },
  },
  DaemonSet: {
    columns: [NAME, col('Desired', 0, 'integer'), col('Current', 0, 'integer'), col('Ready', 0, 'integer'), col('Up-to-date', 0, 'integer'), col('Available', 0, 'integer'), col('Node Selector'), AGE, col('Containers', 1), col('Images', 1), col('Selector', 1)],
    row: (d) => {
      const [c, i] = containersAndImages(d.spec?.template?.spec);
      const st = d.status ?? {};
      return [d.metadata.name as string, st.desiredNumberScheduled ?? 0, st.currentNumberScheduled ?? 0, st.numberReady ?? 0, st.updatedNumberScheduled ?? 0, st.numberAvailable ?? 0, selectorMap(d.spec?.template?.spec?.nodeSelector), age(d.metadata.creationTimestamp), c, i, selectorToString(d.spec?.selector) || '<none>'];
    },
  },
  Event: {
    columns: [col('Last Seen'), col('Type'), col('Reason'), col('Object'), col('Message'), col('Subobject', 1), col('Source', 1), col('First Seen', 1), col('Count', 1, 'integer'), { ...NAME, priority: 1 }],
    row: (e) => {
      const io = e.involvedObject ?? {};
      return [age(e.lastTimestamp ?? e.eventTime ?? e.metadata.creationTimestamp), e.type ?? '', e.reason ?? '', `${String(io.kind ?? '').toLowerCase()}/${io.name ?? ''}`, e.message ?? '', io.fieldPath ?? '', [e.source?.component, e.source?.host].filter(Boolean).join(', '), age(e.firstTimestamp ?? e.metadata.creationTimestamp), e.count ?? 1, e.metadata.name as string];
    },
  },
  StorageClass: {
    columns: [NAME, col('Provisioner'), col('ReclaimPolicy'), col('VolumeBindingMode'), col('AllowVolumeExpansion'), AGE],
    row: (s) => [`${s.metadata.name}${s.metadata.annotations?.['storageclass.kubernetes.io/is-default-class'] === 'true' ? ' (default)' : ''}`, s.provisioner ?? '', s.reclaimPolicy ?? 'Delete', s.volumeBindingMode ?? 'Immediate', String(s.allowVolumeExpansion ?? false), age(s.metadata.creationTimestamp)],
  },
  Job: {
    columns: [NAME, col('Status'), col('Completions'), col('Duration'), AGE],
    row: (j) => [j.metadata.name as string, 'Running', `${j.status?.succeeded ?? 0}/${j.spec?.completions ?? 1}`, '', age(j.metadata.creationTimestamp)],
  },
};

const DEFAULT_PRINTER: Printer = { columns: [NAME, AGE], row: (o) => [o.metadata.name as string, age(o.metadata.creationTimestamp)] };

/** How rows carry their object (`includeObject` query parameter). */
export type IncludeObject = 'None' | 'Metadata' | 'Object';

function partial(o: KubeObject): Loose {
  return { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: o.metadata };
}

/** Builds a `Table` for a list (or single object) of one kind. */
export function toTable(def: ResourceDef, items: KubeObject[], listMeta: Loose, include: IncludeObject, withHeaders = true): Loose {
  const p = PRINTERS[def.kind] ?? DEFAULT_PRINTER;
  return {
    kind: 'Table',
    apiVersion: 'meta.k8s.io/v1',
    metadata: listMeta,
    columnDefinitions: withHeaders ? p.columns.map((c) => ({ name: c.name, type: c.type, format: c.format ?? '', description: c.description ?? '', priority: c.priority ?? 0 })) : null,
    rows: items.map((o) => ({ cells: p.row(o), object: include === 'None' ? undefined : include === 'Object' ? o : partial(o) })),
  };
}
