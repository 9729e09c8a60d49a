/**
 * Defaulting and validation applied on create and update, like the real API server's registry
 * strategies: clients see the same defaulted fields (restartPolicy, strategy, protocol, ...) and the
 * same 422 `Invalid` errors for the mistakes that matter (missing containers, selector mismatch,
 * immutable fields).
 */
import type { StatusCause } from './api-errors.ts';
import { isDnsLabel, isDnsSubdomain } from './names.ts';
import type { ResourceDef } from './resource-registry.ts';
import { fromLabelSelector, matchLabels } from './selectors.ts';
import type { KubeObject, Loose } from './types.ts';

function req(field: string): StatusCause {
  return { reason: 'FieldValueRequired', message: 'Required value', field };
}

function bad(field: string, value: unknown, detail: string): StatusCause {
  return { reason: 'FieldValueInvalid', message: `Invalid value: ${JSON.stringify(value)}: ${detail}`, field };
}

function defaultContainer(c: Loose): void {
  if (!c || typeof c !== 'object') return;
  if (!c.imagePullPolicy && typeof c.image === 'string') {
    const tagless = !/:[^/]+$/.test(c.image.split('@')[0] ?? '');
    c.imagePullPolicy = tagless || c.image.endsWith(':latest') ? 'Always' : 'IfNotPresent';
  }
  c.terminationMessagePath ??= '/dev/termination-log';
  c.terminationMessagePolicy ??= 'File';
  c.resources ??= {};
  if (Array.isArray(c.ports)) for (const p of c.ports) if (p && typeof p === 'object') p.protocol ??= 'TCP';
}

/** Defaults of a PodSpec (shared by Pods and workload templates). */
export function defaultPodSpec(spec: Loose): void {
  if (!spec || typeof spec !== 'object') return;
  spec.restartPolicy ??= 'Always';
  spec.terminationGracePeriodSeconds ??= 30;
  spec.dnsPolicy ??= 'ClusterFirst';
  spec.securityContext ??= {};
  spec.schedulerName ??= 'default-scheduler';
  for (const list of [spec.containers, spec.initContainers]) if (Array.isArray(list)) list.forEach(defaultContainer);
}

function qosClass(spec: Loose): string {
  let anyRes = false;
  let guaranteed = true;
  for (const c of (spec?.containers ?? []) as Loose[]) {
    const lim = c?.resources?.limits ?? {};
    const rq = c?.resources?.requests ?? {};
    if (Object.keys(lim).length || Object.keys(rq).length) anyRes = true;
    for (const r of ['cpu', 'memory']) {
      if (lim[r] === undefined || (rq[r] !== undefined && String(rq[r]) !== String(lim[r]))) guaranteed = false;
    }
  }
  if (!anyRes) return 'BestEffort';
  return guaranteed ? 'Guaranteed' : 'Burstable';
}

function defaultPod(obj: KubeObject, creating: boolean): void {
  obj.spec ??= {};
  const spec = obj.spec;
  defaultPodSpec(spec);
  spec.serviceAccountName ??= spec.serviceAccount ?? 'default';
  spec.serviceAccount ??= spec.serviceAccountName;
  spec.enableServiceLinks ??= true;
  spec.preemptionPolicy ??= 'PreemptLowerPriority';
  spec.priority ??= 0;
  spec.tolerations ??= [];
  for (const key of ['node.kubernetes.io/not-ready', 'node.kubernetes.io/unreachable']) {
    if (!spec.tolerations.some((t: Loose) => t?.key === key)) {
      spec.tolerations.push({ key, operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 });
    }
  }
  if (creating) obj.status = { phase: 'Pending', qosClass: qosClass(spec) };
}

function defaultTemplate(obj: KubeObject): void {
  const t = obj.spec?.template;
  if (t && typeof t === 'object') {
    t.metadata ??= {};
    t.metadata.creationTimestamp ??= null;
    defaultPodSpec(t.spec);
  }
}

/** Applies defaults in place. `creating` also initialises status fields owned by the server. */
export function applyDefaults(def: ResourceDef, obj: KubeObject, creating: boolean): void {
  switch (def.kind) {
    case 'Pod':
      defaultPod(obj, creating);
      break;
    case 'Deployment':
      obj.spec ??= {};
      obj.spec.replicas ??= 1;
      obj.spec.strategy ??= { type: 'RollingUpdate' };
      if ((obj.spec.strategy.type ?? 'RollingUpdate') === 'RollingUpdate') {
        obj.spec.strategy.type = 'RollingUpdate';
        obj.spec.strategy.rollingUpdate ??= {};
        obj.spec.strategy.rollingUpdate.maxUnavailable ??= '25%';
        obj.spec.strategy.rollingUpdate.maxSurge ??= '25%';
      }
      obj.spec.revisionHistoryLimit ??= 10;
      obj.spec.progressDeadlineSeconds ??= 600;
      defaultTemplate(obj);
      if (creating) obj.status ??= {};
      break;
    case 'ReplicaSet':
      obj.spec ??= {};
      obj.spec.replicas ??= 1;
      defaultTemplate(obj);
      if (creating) obj.status = { replicas: 0 };
      break;
    case 'StatefulSet':
      obj.spec ??= {};
      obj.spec.replicas ??= 1;
      obj.spec.podManagementPolicy ??= 'OrderedReady';
      obj.spec.updateStrategy ??= { type: 'RollingUpdate' };
      if (obj.spec.updateStrategy.type === 'RollingUpdate') {
        obj.spec.updateStrategy.rollingUpdate ??= {};
        obj.spec.updateStrategy.rollingUpdate.partition ??= 0;
      }
      obj.spec.revisionHistoryLimit ??= 10;
      obj.spec.persistentVolumeClaimRetentionPolicy ??= {};
      obj.spec.persistentVolumeClaimRetentionPolicy.whenDeleted ??= 'Retain';
      obj.spec.persistentVolumeClaimRetentionPolicy.whenScaled ??= 'Retain';
      for (const t of (obj.spec.volumeClaimTemplates ?? []) as Loose[]) {
        t.apiVersion ??= 'v1';
        t.kind ??= 'PersistentVolumeClaim';
        t.spec ??= {};
        t.spec.volumeMode ??= 'Filesystem';
        t.status ??= { phase: 'Pending' };
      }
      defaultTemplate(obj);
      if (creating) obj.status = { replicas: 0, availableReplicas: 0 };
      break;
    case 'DaemonSet':
      obj.spec ??= {};
      obj.spec.updateStrategy ??= { type: 'RollingUpdate' };
      if (obj.spec.updateStrategy.type === 'RollingUpdate') {
        obj.spec.updateStrategy.rollingUpdate ??= {};
        obj.spec.updateStrategy.rollingUpdate.maxUnavailable ??= 1;
        obj.spec.updateStrategy.rollingUpdate.maxSurge ??= 0;
      }
      obj.spec.revisionHistoryLimit ??= 10;
      defaultTemplate(obj);
      if (creating) obj.status = { currentNumberScheduled: 0, desiredNumberScheduled: 0, numberMisscheduled: 0, numberReady: 0 };
      break;
    case 'Job':
    case 'CronJob':
      defaultTemplate(obj);
      break;
    case 'Service':
      obj.spec ??= {};
      obj.spec.type ??= 'ClusterIP';
      obj.spec.sessionAffinity ??= 'None';
      if (obj.spec.type !== 'ExternalName') {
        obj.spec.internalTrafficPolicy ??= 'Cluster';
        obj.spec.ipFamilies ??= ['IPv4'];
        obj.spec.ipFamilyPolicy ??= 'SingleStack';
      }
      if (obj.spec.type === 'NodePort' || obj.spec.type === 'LoadBalancer') obj.spec.externalTrafficPolicy ??= 'Cluster';
      for (const p of (obj.spec.ports ?? []) as Loose[]) {
        if (!p || typeof p !== 'object') continue;
        p.protocol ??= 'TCP';
        p.targetPort ??= p.port;
      }
      if (creating) obj.status = { loadBalancer: {} };
      break;
    case 'Secret':
      obj.type ??= 'Opaque';
      if (obj.stringData && typeof obj.stringData === 'object') {
        obj.data ??= {};
        for (const [k, v] of Object.entries(obj.stringData as Record<string, unknown>)) obj.data[k] = Buffer.from(String(v)).toString('base64');
        delete obj.stringData;
      }
      break;
    case 'PersistentVolumeClaim':
      obj.spec ??= {};
      obj.spec.volumeMode ??= 'Filesystem';
      if (obj.spec.storageClassName === undefined) obj.spec.storageClassName = 'standard';
      if (creating) obj.status = { phase: 'Pending' };
      break;
    case 'PersistentVolume':
      obj.spec ??= {};
      obj.spec.persistentVolumeReclaimPolicy ??= 'Retain';
      obj.spec.volumeMode ??= 'Filesystem';
      if (creating) obj.status ??= { phase: 'Available' };
      break;
    case 'Namespace':
      obj.spec ??= {};
      obj.spec.finalizers ??= ['kubernetes'];
      obj.metadata.labels = { ...(obj.metadata.labels ?? {}), 'kubernetes.io/metadata.name': obj.metadata.name as string };
      if (creating) obj.status = { phase: 'Active' };
      break;
    default:
      break;
  }
}

function validatePodSpec(spec: Loose, base: string, causes: StatusCause[]): void {
  if (!spec || typeof spec !== 'object') {
    causes.push(req(base));
    return;
  }
  const containers = spec.containers;
  if (!Array.isArray(containers) || containers.length === 0) {
    causes.push(req(`${base}.containers`));
    return;
  }
  const names = new Set<string>();
  containers.forEach((c: Loose, i: number) => {
    const f = `${base}.containers[${i}]`;
    if (!c?.name) causes.push(req(`${f}.name`));
    else if (!isDnsLabel(String(c.name))) causes.push(bad(`${f}.name`, c.name, "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-'"));
    else if (names.has(c.name)) causes.push({ reason: 'FieldValueDuplicate', message: `Duplicate value: ${JSON.stringify(c.name)}`, field: `${f}.name` });
    else names.add(c.name);
    if (!c?.image) causes.push(req(`${f}.image`));
  });
}

function validateSelectorAndTemplate(obj: KubeObject, causes: StatusCause[]): void {
  const sel = obj.spec?.selector;
  if (!sel || (!sel.matchLabels && !sel.matchExpressions)) {
    causes.push(req('spec.selector'));
  } else {
    const labels = obj.spec?.template?.metadata?.labels ?? {};
    if (!matchLabels(fromLabelSelector(sel), labels)) {
      causes.push(bad('spec.template.metadata.labels', labels, '`selector` does not match template `labels`'));
    }
  }
  validatePodSpec(obj.spec?.template?.spec, 'spec.template.spec', causes);
  if (obj.spec?.replicas !== undefined && (!Number.isInteger(obj.spec.replicas) || obj.spec.replicas < 0)) {
    causes.push(bad('spec.replicas', obj.spec.replicas, 'must be greater than or equal to 0'));
  }
}

function validatePort(p: Loose, f: string, causes: StatusCause[]): void {
  if (!Number.isInteger(p?.port) || p.port < 1 || p.port > 65535) causes.push(bad(`${f}.port`, p?.port, 'must be between 1 and 65535, inclusive'));
  if (p?.nodePort !== undefined && p.nodePort !== null && p.nodePort !== 0 && (!Number.isInteger(p.nodePort) || p.nodePort < 30000 || p.nodePort > 32767)) {
    causes.push(bad(`${f}.nodePort`, p.nodePort, 'provided port is not in the valid range. The range of valid ports is 30000-32767'));
  }
}

/**
 * Validates an object (after defaulting). `old` is the stored object on updates, for immutability
 * checks. Returns the causes of a 422, empty when valid.
 */
export function validate(def: ResourceDef, obj: KubeObject, old?: KubeObject): StatusCause[] {
  const causes: StatusCause[] = [];
  const name = obj.metadata.name ?? '';
  const labelNamed = def.kind === 'Namespace' || def.kind === 'Service';
  if (!name) causes.push({ reason: 'FieldValueRequired', message: 'Required value: name or generateName is required', field: 'metadata.name' });
  else if (labelNamed ? !isDnsLabel(name) : !isDnsSubdomain(name) && !['Event', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding'].includes(def.kind)) {
    causes.push(
      bad(
        'metadata.name',
        name,
        labelNamed
          ? "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character"
          : "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
      ),
    );
  }
  for (const [k, v] of Object.entries(obj.metadata.labels ?? {})) {
    if (typeof v !== 'string' || v.length > 63 || !/^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/.test(v)) {
      causes.push(bad(`metadata.labels`, v, `a valid label value for key ${k} must be 63 characters or less`));
    }
  }
  switch (def.kind) {
    case 'Pod':
      validatePodSpec(obj.spec, 'spec', causes);
      if (old) {
        const o = old.spec ?? {};
        const n = obj.spec ?? {};
        if (o.nodeName && n.nodeName !== o.nodeName) causes.push(bad('spec.nodeName', n.nodeName, 'field is immutable'));
        const strip = (s: Loose) => JSON.stringify({ ...s, containers: (s.containers ?? []).map((c: Loose) => ({ ...c, image: undefined })), activeDeadlineSeconds: undefined, tolerations: undefined, nodeName: undefined });
        if (strip(o) !== strip(n)) {
          causes.push({ reason: 'FieldValueForbidden', message: 'Forbidden: pod updates may not change fields other than `spec.containers[*].image`, `spec.initContainers[*].image`, `spec.activeDeadlineSeconds`, `spec.tolerations` (only additions to existing tolerations) or `spec.terminationGracePeriodSeconds`', field: 'spec' });
        }
      }
      break;
    case 'Deployment':
    case 'ReplicaSet':
    case 'StatefulSet':
    case 'DaemonSet':
      validateSelectorAndTemplate(obj, causes);
      if (old && JSON.stringify(old.spec?.selector) !== JSON.stringify(obj.spec?.selector)) {
        causes.push(bad('spec.selector', obj.spec?.selector, 'field is immutable'));
      }
      if (def.kind === 'StatefulSet' && old) {
        const strip = (s: Loose) => JSON.stringify({ ...s, replicas: undefined, template: undefined, updateStrategy: undefined, persistentVolumeClaimRetentionPolicy: undefined, minReadySeconds: undefined, ordinals: undefined, revisionHistoryLimit: undefined });
        if (strip(old.spec ?? {}) !== strip(obj.spec ?? {})) {
          causes.push({ reason: 'FieldValueForbidden', message: "Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden", field: 'spec' });
        }
      }
      break;
    case 'Service': {
      const spec = obj.spec ?? {};
      const ports = spec.ports;
      const headless = spec.clusterIP === 'None';
      if (!['ClusterIP', 'NodePort', 'LoadBalancer', 'ExternalName'].includes(spec.type)) causes.push(bad('spec.type', spec.type, 'supported values: "ClusterIP", "ExternalName", "LoadBalancer", "NodePort"'));
      if (spec.type === 'ExternalName') {
        if (!spec.externalName) causes.push(req('spec.externalName'));
      } else if (!Array.isArray(ports) || ports.length === 0) {
        if (!headless) causes.push(req('spec.ports'));
      } else {
        ports.forEach((p: Loose, i: number) => {
          validatePort(p, `spec.ports[${i}]`, causes);
          if (ports.length > 1 && !p?.name) causes.push(req(`spec.ports[${i}].name`));
        });
      }
      if (old?.spec?.clusterIP && old.spec.clusterIP !== 'None' && spec.clusterIP !== undefined && spec.clusterIP !== '' && spec.clusterIP !== old.spec.clusterIP && spec.type !== 'ExternalName') {
        causes.push(bad('spec.clusterIPs[0]', spec.clusterIP, 'field is immutable'));
      }
      break;
    }
    case 'PersistentVolumeClaim':
      if (!Array.isArray(obj.spec?.accessModes) || obj.spec.accessModes.length === 0) causes.push(req('spec.accessModes'));
      if (!obj.spec?.resources?.requests?.storage) causes.push(req('spec.resources[storage]'));
      if (old && old.status?.phase === 'Bound') {
        const strip = (s: Loose) => JSON.stringify({ ...s, resources: undefined, volumeName: undefined, volumeAttributesClassName: undefined });
        if (strip(old.spec ?? {}) !== strip(obj.spec ?? {})) {
          causes.push({ reason: 'FieldValueForbidden', message: 'Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims', field: 'spec' });
        }
      }
      break;
    case 'PodDisruptionBudget': {
      const spec = obj.spec ?? {};
      if (spec.minAvailable !== undefined && spec.minAvailable !== null && spec.maxUnavailable !== undefined && spec.maxUnavailable !== null) {
        causes.push(bad('spec', spec, 'minAvailable and maxUnavailable cannot be both set'));
      }
      for (const f of ['minAvailable', 'maxUnavailable'] as const) {
        const v = spec[f];
        if (v === undefined || v === null) continue;
        const ok = (typeof v === 'number' && Number.isInteger(v) && v >= 0) || (typeof v === 'string' && /^(\d|[1-9]\d|100)%$/.test(v));
        if (!ok) causes.push(bad(`spec.${f}`, v, typeof v === 'string' ? 'must be a valid percent value (0%-100%)' : 'must be greater than or equal to 0'));
      }
      const policy = spec.unhealthyPodEvictionPolicy;
      if (policy !== undefined && policy !== null && policy !== 'IfHealthyBudget' && policy !== 'AlwaysAllow') {
        causes.push({ reason: 'FieldValueNotSupported', message: `Unsupported value: ${JSON.stringify(policy)}: supported values: "AlwaysAllow", "IfHealthyBudget"`, field: 'spec.unhealthyPodEvictionPolicy' });
      }
      break;
    }
    case 'ConfigMap':
    case 'Secret':
      if (old && old.immutable === true && (JSON.stringify(old.data) !== JSON.stringify(obj.data) || JSON.stringify(old.binaryData) !== JSON.stringify(obj.binaryData))) {
        causes.push({ reason: 'FieldValueForbidden', message: 'Forbidden: field is immutable when `immutable` is set', field: 'data' });
      }
      break;
    default:
      break;
  }
  return causes;
}
