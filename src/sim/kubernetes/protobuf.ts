/**
 * Decoder for the Kubernetes protobuf request encoding (`application/vnd.kubernetes.protobuf`).
 * kubectl's generator commands (`kubectl create namespace|deployment|configmap|secret|service|job|
 * ...`) and `kubectl drain` (evictions) send protobuf bodies even when the server answers JSON, so
 * the simulator decodes the messages of those kinds into their JSON form using a compact table of
 * field numbers taken from the published Kubernetes `.proto` definitions. Unknown fields are skipped;
 * kinds outside the table get 415 Unsupported Media Type.
 */
import { ApiError } from './api-errors.ts';
import type { Loose } from './types.ts';

/** Field value kinds of the table. A string naming a message means a nested message. */
type Scalar = 'string' | 'bytes' | 'int' | 'bool' | 'time' | 'intstr' | 'quantity' | 'map' | 'mapBytes' | 'mapQuantity';

/** `[jsonName, type, repeated?, inline?]` — inline messages merge their fields into the parent. */
type Field = [string, Scalar | string, boolean?, boolean?];

const S = 'string';
const rs = (name: string): Field => [name, S, true];
const msgs = (name: string, type: string): Field => [name, type, true];

/** Field numbers of the messages kubectl's generators and evictions produce. */
const SCHEMA: Record<string, Record<number, Field>> = {
  ObjectMeta: {
    1: ['name', S],
    2: ['generateName', S],
    3: ['namespace', S],
    5: ['uid', S],
    6: ['resourceVersion', S],
    8: ['creationTimestamp', 'time'],
    10: ['deletionGracePeriodSeconds', 'int'],
    11: ['labels', 'map'],
    12: ['annotations', 'map'],
    13: msgs('ownerReferences', 'OwnerReference'),
    14: rs('finalizers'),
  },
  OwnerReference: { 1: ['kind', S], 3: ['name', S], 4: ['uid', S], 5: ['apiVersion', S], 6: ['controller', 'bool'], 7: ['blockOwnerDeletion', 'bool'] },
  ObjectReference: { 1: ['kind', S], 2: ['namespace', S], 3: ['name', S], 4: ['uid', S], 5: ['apiVersion', S], 6: ['resourceVersion', S], 7: ['fieldPath', S] },
  LocalObjectReference: { 1: ['name', S] },
  LabelSelector: { 1: ['matchLabels', 'map'], 2: msgs('matchExpressions', 'LabelSelectorRequirement') },
  LabelSelectorRequirement: { 1: ['key', S], 2: ['operator', S], 3: rs('values') },
  Namespace: { 1: ['metadata', 'ObjectMeta'], 2: ['spec', 'NamespaceSpec'] },
  NamespaceSpec: { 1: rs('finalizers') },
  ConfigMap: { 1: ['metadata', 'ObjectMeta'], 2: ['data', 'map'], 3: ['binaryData', 'mapBytes'], 4: ['immutable', 'bool'] },
  Secret: { 1: ['metadata', 'ObjectMeta'], 2: ['data', 'mapBytes'], 3: ['type', S], 4: ['stringData', 'map'], 5: ['immutable', 'bool'] },
  ServiceAccount: { 1: ['metadata', 'ObjectMeta'], 2: msgs('secrets', 'ObjectReference'), 3: msgs('imagePullSecrets', 'LocalObjectReference'), 4: ['automountServiceAccountToken', 'bool'] },
  Deployment: { 1: ['metadata', 'ObjectMeta'], 2: ['spec', 'DeploymentSpec'] },
  DeploymentSpec: {
    1: ['replicas', 'int'],
    2: ['selector', 'LabelSelector'],
    3: ['template', 'PodTemplateSpec'],
    4: ['strategy', 'DeploymentStrategy'],
    5: ['minReadySeconds', 'int'],
    6: ['revisionHistoryLimit', 'int'],
    7: ['paused', 'bool'],
    9: ['progressDeadlineSeconds', 'int'],
  },
  DeploymentStrategy: { 1: ['type', S], 2: ['rollingUpdate', 'RollingUpdateDeployment'] },
  RollingUpdateDeployment: { 1: ['maxUnavailable', 'intstr'], 2: ['maxSurge', 'intstr'] },
  PodTemplateSpec: { 1: ['metadata', 'ObjectMeta'], 2: ['spec', 'PodSpec'] },
  PodSpec: {
    2: msgs('containers', 'Container'),
    3: ['restartPolicy', S],
    4: ['terminationGracePeriodSeconds', 'int'],
    5: ['activeDeadlineSeconds', 'int'],
    6: ['dnsPolicy', S],
    7: ['nodeSelector', 'map'],
    8: ['serviceAccountName', S],
    9: ['serviceAccount', S],
    10: ['nodeName', S],
    11: ['hostNetwork', 'bool'],
    15: msgs('imagePullSecrets', 'LocalObjectReference'),
    16: ['hostname', S],
    17: ['subdomain', S],
    19: ['schedulerName', S],
    20: msgs('initContainers', 'Container'),
    22: msgs('tolerations', 'Toleration'),
  },
  Container: {
    1: ['name', S],
    2: ['image', S],
    3: rs('command'),
    4: rs('args'),
    5: ['workingDir', S],
    6: msgs('ports', 'ContainerPort'),
    7: msgs('env', 'EnvVar'),
    8: ['resources', 'ResourceRequirements'],
    9: msgs('volumeMounts', 'VolumeMount'),
    13: ['terminationMessagePath', S],
    14: ['imagePullPolicy', S],
    16: ['stdin', 'bool'],
    17: ['stdinOnce', 'bool'],
    18: ['tty', 'bool'],
    20: ['terminationMessagePolicy', S],
  },
  ContainerPort: { 1: ['name', S], 2: ['hostPort', 'int'], 3: ['containerPort', 'int'], 4: ['protocol', S], 5: ['hostIP', S] },
  EnvVar: { 1: ['name', S], 2: ['value', S] },
  ResourceRequirements: { 1: ['limits', 'mapQuantity'], 2: ['requests', 'mapQuantity'] },
  VolumeMount: { 1: ['name', S], 2: ['readOnly', 'bool'], 3: ['mountPath', S], 4: ['subPath', S] },
  Toleration: { 1: ['key', S], 2: ['operator', S], 3: ['value', S], 4: ['effect', S], 5: ['tolerationSeconds', 'int'] },
  Job: { 1: ['metadata', 'ObjectMeta'], 2: ['spec', 'JobSpec'] },
  JobSpec: {
    1: ['parallelism', 'int'],
    2: ['completions', 'int'],
    3: ['activeDeadlineSeconds', 'int'],
    4: ['selector', 'LabelSelector'],
    5: ['manualSelector', 'bool'],
    6: ['template', 'PodTemplateSpec'],
    7: ['backoffLimit', 'int'],
    8: ['ttlSecondsAfterFinished', 'int'],
    9: ['completionMode', S],
    10: ['suspend', 'bool'],
  },
  CronJob: { 1: ['metadata', 'ObjectMeta'], 2: ['spec', 'CronJobSpec'] },
  CronJobSpec: {
    1: ['schedule', S],
    2: ['startingDeadlineSeconds', 'int'],
    3: ['concurrencyPolicy', S],
    4: ['suspend', 'bool'],
    5: ['jobTemplate', 'JobTemplateSpec'],
    6: ['successfulJobsHistoryLimit', 'int'],
    7: ['failedJobsHistoryLimit', 'int'],
    8: ['timeZone', S],
  },
  JobTemplateSpec: { 1: ['metadata', 'ObjectMeta'], 2: ['spec', 'JobSpec'] },
  Service: { 1: ['metadata', 'ObjectMeta'], 2: ['spec', 'ServiceSpec'] },
  ServiceSpec: {
    1: msgs('ports', 'ServicePort'),
    2: ['selector', 'map'],
    3: ['clusterIP', S],
    4: ['type', S],
    5: rs('externalIPs'),
    7: ['sessionAffinity', S],
    8: ['loadBalancerIP', S],
    10: ['externalName', S],
    11: ['externalTrafficPolicy', S],
    18: rs('clusterIPs'),
  },
  ServicePort: { 1: ['name', S], 2: ['protocol', S], 3: ['port', 'int'], 4: ['targetPort', 'intstr'], 5: ['nodePort', 'int'], 6: ['appProtocol', S] },
  Role: { 1: ['metadata', 'ObjectMeta'], 2: msgs('rules', 'PolicyRule') },
  ClusterRole: { 1: ['metadata', 'ObjectMeta'], 2: msgs('rules', 'PolicyRule') },
  PolicyRule: { 1: rs('verbs'), 2: rs('apiGroups'), 3: rs('resources'), 4: rs('resourceNames'), 5: rs('nonResourceURLs') },
  RoleBinding: { 1: ['metadata', 'ObjectMeta'], 2: msgs('subjects', 'Subject'), 3: ['roleRef', 'RoleRef'] },
  ClusterRoleBinding: { 1: ['metadata', 'ObjectMeta'], 2: msgs('subjects', 'Subject'), 3: ['roleRef', 'RoleRef'] },
  Subject: { 1: ['kind', S], 2: ['apiGroup', S], 3: ['name', S], 4: ['namespace', S] },
  RoleRef: { 1: ['apiGroup', S], 2: ['kind', S], 3: ['name', S] },
  PodDisruptionBudget: { 1: ['metadata', 'ObjectMeta'], 2: ['spec', 'PodDisruptionBudgetSpec'] },
  PodDisruptionBudgetSpec: { 1: ['minAvailable', 'intstr'], 2: ['selector', 'LabelSelector'], 3: ['maxUnavailable', 'intstr'], 4: ['unhealthyPodEvictionPolicy', S] },
  ResourceQuota: { 1: ['metadata', 'ObjectMeta'], 2: ['spec', 'ResourceQuotaSpec'] },
  ResourceQuotaSpec: { 1: ['hard', 'mapQuantity'], 2: rs('scopes') },
  Ingress: { 1: ['metadata', 'ObjectMeta'], 2: ['spec', 'IngressSpec'] },
  IngressSpec: { 1: ['defaultBackend', 'IngressBackend'], 2: msgs('tls', 'IngressTLS'), 3: msgs('rules', 'IngressRule'), 4: ['ingressClassName', S] },
  IngressTLS: { 1: rs('hosts'), 2: ['secretName', S] },
  IngressRule: { 1: ['host', S], 2: ['', 'IngressRuleValue', false, true] },
  IngressRuleValue: { 1: ['http', 'HTTPIngressRuleValue'] },
  HTTPIngressRuleValue: { 1: msgs('paths', 'HTTPIngressPath') },
  HTTPIngressPath: { 1: ['path', S], 2: ['backend', 'IngressBackend'], 3: ['pathType', S] },
  IngressBackend: { 3: ['resource', 'TypedLocalObjectReference'], 4: ['service', 'IngressServiceBackend'] },
  TypedLocalObjectReference: { 1: ['apiGroup', S], 2: ['kind', S], 3: ['name', S] },
  IngressServiceBackend: { 1: ['name', S], 2: ['port', 'ServiceBackendPort'] },
  ServiceBackendPort: { 1: ['name', S], 2: ['number', 'int'] },
  Eviction: { 1: ['metadata', 'ObjectMeta'], 2: ['deleteOptions', 'DeleteOptions'] },
  DeleteOptions: { 1: ['gracePeriodSeconds', 'int'], 2: ['preconditions', 'Preconditions'], 3: ['orphanDependents', 'bool'], 4: ['propagationPolicy', S], 5: rs('dryRun') },
  Preconditions: { 1: ['uid', S], 2: ['resourceVersion', S] },
  Time: { 1: ['seconds', 'int'], 2: ['nanos', 'int'] },
};

/**
 * Optional (pointer) scalar fields: gogo-protobuf writes them only when set, so an explicit 0/false is
 * meaningful (e.g. `replicas: 0`). Other scalars are always written and 0/false means "unset".
 */
const POINTER_FIELDS = new Set([
  'replicas',
  'revisionHistoryLimit',
  'progressDeadlineSeconds',
  'terminationGracePeriodSeconds',
  'activeDeadlineSeconds',
  'parallelism',
  'completions',
  'backoffLimit',
  'ttlSecondsAfterFinished',
  'startingDeadlineSeconds',
  'successfulJobsHistoryLimit',
  'failedJobsHistoryLimit',
  'deletionGracePeriodSeconds',
  'gracePeriodSeconds',
  'tolerationSeconds',
  'automountServiceAccountToken',
  'immutable',
  'suspend',
  'manualSelector',
  'controller',
  'blockOwnerDeletion',
  'orphanDependents',
]);

const MAGIC = Buffer.from([0x6b, 0x38, 0x73, 0x00]);

interface WireField {
  no: number;
  wire: number;
  varint?: bigint;
  bytes?: Buffer;
}

function readVarint(buf: Buffer, pos: number): [bigint, number] {
  let result = 0n;
  let shift = 0n;
  for (;;) {
    if (pos >= buf.length) throw new Error('truncated varint');
    const b = buf[pos++] as number;
    result |= BigInt(b & 0x7f) << shift;
    if ((b & 0x80) === 0) return [result, pos];
    shift += 7n;
    if (shift > 70n) throw new Error('varint too long');
  }
}

function fields(buf: Buffer): WireField[] {
  const out: WireField[] = [];
  let pos = 0;
  while (pos < buf.length) {
    const [key, p1] = readVarint(buf, pos);
    pos = p1;
    const no = Number(key >> 3n);
    const wire = Number(key & 7n);
    if (wire === 0) {
      const [v, p2] = readVarint(buf, pos);
      pos = p2;
      out.push({ no, wire, varint: v });
    } else if (wire === 2) {
      const [len, p2] = readVarint(buf, pos);
      const end = p2 + Number(len);
      if (end > buf.length) throw new Error('truncated field');
      out.push({ no, wire, bytes: buf.subarray(p2, end) });
      pos = end;
    } else if (wire === 1) pos += 8;
    else if (wire === 5) pos += 4;
    else throw new Error(`unsupported wire type ${wire}`);
  }
  return out;
}

function asInt(f: WireField): number {
  const v = BigInt.asIntN(64, f.varint ?? 0n);
  return Number(v);
}

function str(f: WireField): string {
  return (f.bytes ?? Buffer.alloc(0)).toString('utf8');
}

function mapEntry(f: WireField): [string, WireField | undefined] {
  const entry = fields(f.bytes ?? Buffer.alloc(0));
  const k = entry.find((e) => e.no === 1);
  return [k ? str(k) : '', entry.find((e) => e.no === 2)];
}

function scalar(type: Scalar, f: WireField): Loose {
  switch (type) {
    case 'string':
      return str(f);
    case 'bytes':
      return (f.bytes ?? Buffer.alloc(0)).toString('base64');
    case 'int':
      return asInt(f);
    case 'bool':
      return (f.varint ?? 0n) !== 0n;
    case 'time': {
      const t = decodeMessage('Time', f.bytes ?? Buffer.alloc(0));
      return t.seconds ? new Date(t.seconds * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z') : null;
    }
    case 'quantity': {
      const q = fields(f.bytes ?? Buffer.alloc(0)).find((x) => x.no === 1);
      return q ? str(q) : '';
    }
    case 'intstr': {
      const parts = fields(f.bytes ?? Buffer.alloc(0));
      const type = parts.find((x) => x.no === 1);
      if (type && asInt(type) === 1) {
        const s = parts.find((x) => x.no === 3);
        return s ? str(s) : '';
      }
      const i = parts.find((x) => x.no === 2);
      return i ? asInt(i) : 0;
    }
    default:
      return undefined;
  }
}

function decodeMessage(type: string, buf: Buffer): Loose {
  const schema = SCHEMA[type];
  const out: Loose = {};
  if (!schema) return out;
  for (const f of fields(buf)) {
    const spec = schema[f.no];
    if (!spec) continue;
    const [name, t, repeated, inline] = spec;
    if (t === 'map' || t === 'mapBytes' || t === 'mapQuantity') {
      const [k, v] = mapEntry(f);
      out[name] ??= {};
      out[name][k] = v === undefined ? '' : t === 'map' ? str(v) : t === 'mapBytes' ? (v.bytes ?? Buffer.alloc(0)).toString('base64') : scalar('quantity', v);
      continue;
    }
    let value: Loose;
    if (SCHEMA[t]) value = decodeMessage(t, f.bytes ?? Buffer.alloc(0));
    else if (repeated && t === 'string' && f.wire === 2) value = str(f);
    else value = scalar(t as Scalar, f);
    if ((value === 0 || value === false) && !repeated && !POINTER_FIELDS.has(name) && type !== 'Time') continue;
    if (inline) {
      Object.assign(out, value);
      continue;
    }
    if (repeated) {
      out[name] ??= [];
      out[name].push(value);
    } else out[name] = value;
  }
  return prune(out);
}

/** Drops the empty strings and empty objects gogo-protobuf writes for unset non-pointer fields. */
function prune(o: Loose): Loose {
  for (const [k, v] of Object.entries(o)) {
    if (v === '' || v === null || (v && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length === 0 && k !== 'resources')) delete o[k];
  }
  return o;
}

/** Whether a Content-Type is the Kubernetes protobuf encoding. */
export function isProtobuf(contentType: string | undefined): boolean {
  return (contentType ?? '').toLowerCase().startsWith('application/vnd.kubernetes.protobuf');
}

/** Decodes a `k8s\0`-framed protobuf body into the equivalent JSON object. */
export function decodeKubernetesProtobuf(body: Buffer): Loose {
  if (body.length < 4 || !body.subarray(0, 4).equals(MAGIC)) {
    throw new ApiError(400, 'BadRequest', 'protobuf body does not start with the Kubernetes magic number');
  }
  let apiVersion = '';
  let kind = '';
  let raw: Buffer = Buffer.alloc(0);
  try {
    for (const f of fields(body.subarray(4))) {
      if (f.no === 1) {
        for (const t of fields(f.bytes ?? Buffer.alloc(0))) {
          if (t.no === 1) apiVersion = str(t);
          if (t.no === 2) kind = str(t);
        }
      } else if (f.no === 2) raw = f.bytes ?? Buffer.alloc(0);
    }
  } catch (err) {
    throw new ApiError(400, 'BadRequest', `malformed protobuf body: ${(err as Error).message}`);
  }
  if (!SCHEMA[kind] || kind === 'Time') {
    throw new ApiError(415, 'UnsupportedMediaType', `the simulated API server cannot decode protobuf for kind ${kind || '<unknown>'}; send JSON (e.g. kubectl apply -f)`);
  }
  try {
    return { apiVersion, kind, ...decodeMessage(kind, raw) };
  } catch (err) {
    throw new ApiError(400, 'BadRequest', `malformed protobuf body: ${(err as Error).message}`);
  }
}
