/**
 * Turns the Kubernetes manifests of a CNF package into the exact objects the driver creates:
 * which files (`additionalParams['lcm-kubernetes-def-files']`, default every
 * `Files/kubernetes/*.yaml`), which namespace, which object is which VDU, how many replicas, and
 * the ownership labels.
 *
 * Why labels on everything: the VNFM must find "its" objects again after a crash, a retry or a
 * drift, without trusting what it last wrote down. Every object carries
 * `vnfm.io/vnf-instance-id=<instanceId>`; pod templates carry it too (plus `vnfm.io/vdu-id`), so
 * every pod a controller ever creates for the CNF is found by one label selector and mapped to
 * its VDU without name guessing. StatefulSet claim templates are labelled as well, so their
 * PersistentVolumeClaims are recognisable.
 *
 * The result is deterministic for a given package, request and instance, so the same plan can be
 * rebuilt for rollback, resume, re-creation of a singleton Pod and a whole-CNF heal.
 */
import { parseAllDocuments } from 'yaml';
import { vnfmError } from '../../errors.ts';
import type { FlavourModel, VnfPackageModel } from '../../packages/vnfd-model.ts';
import type { KubeObject, ObjectRef } from './kube-client.ts';

/** Label carried by every object (and pod) of a CNF instance. */
export const INSTANCE_LABEL = 'vnfm.io/vnf-instance-id';
/** Label carried by the VDU workloads and their pods: the VDU id. */
export const VDU_LABEL = 'vnfm.io/vdu-id';
/** Label of a Namespace the VNFM created for an instance (it did not exist): the instance id. */
export const CREATED_FOR_LABEL = 'vnfm.io/created-for';

/** Workload kinds that can be a VDU (what Tacker accepts). */
export const WORKLOAD_KINDS = ['Pod', 'Deployment', 'ReplicaSet', 'DaemonSet', 'StatefulSet'] as const;
/** A VDU workload kind. */
export type WorkloadKind = (typeof WORKLOAD_KINDS)[number];
/** Workload kinds whose pod count is `spec.replicas` (scalable). */
export const SCALABLE_KINDS: readonly WorkloadKind[] = ['Deployment', 'ReplicaSet', 'StatefulSet'];

/** Kinds that are not namespaced (everything else is). */
const CLUSTER_SCOPED = new Set([
  'Namespace',
  'Node',
  'PersistentVolume',
  'StorageClass',
  'ClusterRole',
  'ClusterRoleBinding',
  'CustomResourceDefinition',
  'PriorityClass',
  'IngressClass',
  'RuntimeClass',
  'CSIDriver',
  'CSINode',
  'VolumeAttachment',
  'MutatingWebhookConfiguration',
  'ValidatingWebhookConfiguration',
  'APIService',
]);

/** Creation order by kind (dependencies first); unknown kinds go last, in file order. */
const KIND_ORDER = [
  'Namespace',
  'CustomResourceDefinition',
  'PriorityClass',
  'ResourceQuota',
  'LimitRange',
  'NetworkPolicy',
  'PodDisruptionBudget',
  'ServiceAccount',
  'Secret',
  'ConfigMap',
  'StorageClass',
  'PersistentVolume',
  'PersistentVolumeClaim',
  'ClusterRole',
  'ClusterRoleBinding',
  'Role',
  'RoleBinding',
  'Service',
  'Endpoints',
  'DaemonSet',
  'Pod',
  'ReplicationController',
  'ReplicaSet',
  'Deployment',
  'StatefulSet',
  'HorizontalPodAutoscaler',
  'Job',
  'CronJob',
  'Ingress',
];

/** True for kinds that live in a namespace. */
export function isNamespaced(kind: string): boolean {
  return !CLUSTER_SCOPED.has(kind);
}

/** One object of the plan. */
export interface PlannedObject {
  ref: ObjectRef;
  /** The VDU this object is, when it is a VDU workload. */
  vduId?: string;
  /** The body sent on create (labelled, namespaced, replicas set). */
  body: KubeObject;
}

/** What the driver remembers of a deployed CNF (in op state and in instantiatedVnfInfo.metadata). */
export interface CnfRecord {
  namespace: string;
  /** Package-relative manifest files the CNF was deployed from. */
  defFiles: string[];
  /** Every object of the CNF, in creation order. */
  resources: ResourceRecord[];
  /**
   * The namespace did not exist and the VNFM created it for this instance (labelled
   * {@link CREATED_FOR_LABEL}); terminate deletes it when nothing else lives in it.
   */
  namespaceCreated?: boolean;
}

/** One object of a deployed CNF. */
export interface ResourceRecord extends ObjectRef {
  vduId?: string;
  /** StatefulSet only: names of its volume claim templates (their PVCs are `<claim>-<sts>-<ordinal>`). */
  claimTemplates?: string[];
}

/** The full plan of a CNF: the record plus the bodies to create. */
export interface CnfPlan {
  record: CnfRecord;
  objects: PlannedObject[];
}

function isObj(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/**
 * The manifest files to deploy: `lcm-kubernetes-def-files` of the request (package-relative
 * paths), or every manifest of the package. Throws `VNFM_ERR_INST_INVALID` for a file the package
 * does not have (URLs are not fetched: the package must be self-contained).
 */
export function resolveDefFiles(vnfd: VnfPackageModel, additionalParams: Record<string, unknown> | undefined): string[] {
  const raw = additionalParams?.['lcm-kubernetes-def-files'];
  if (raw === undefined || raw === null) {
    if (vnfd.kubernetesFiles.length === 0) throw vnfmError('VNFM_ERR_INST_INVALID', 'the VNF package has no Kubernetes manifests (Files/kubernetes/*.yaml) and the request names none in lcm-kubernetes-def-files');
    return [...vnfd.kubernetesFiles];
  }
  if (!Array.isArray(raw) || raw.length === 0 || raw.some((f) => typeof f !== 'string' || f === '')) {
    throw vnfmError('VNFM_ERR_INST_INVALID', 'additionalParams.lcm-kubernetes-def-files must be a non-empty list of package file paths');
  }
  const files = vnfd.files;
  const out: string[] = [];
  for (const f of raw as string[]) {
    const norm = f.replace(/^\.?\/+/, '');
    if (/^[a-z][a-z0-9+.-]*:\/\//i.test(norm)) {
      throw vnfmError('VNFM_ERR_INST_INVALID', `lcm-kubernetes-def-files: '${f}' is a URL; only files of the VNF package can be deployed`);
    }
    if (!files.includes(norm)) throw vnfmError('VNFM_ERR_INST_INVALID', `lcm-kubernetes-def-files: the VNF package has no file '${f}'`);
    if (!out.includes(norm)) out.push(norm);
  }
  return out;
}

/** Parses the manifest files into objects (file order, then document order; `List` kinds expanded). */
export function loadManifests(files: ReadonlyMap<string, Buffer>, defFiles: readonly string[]): KubeObject[] {
  const out: KubeObject[] = [];
  for (const f of defFiles) {
    const buf = files.get(f);
    if (buf === undefined) throw vnfmError('VNFM_ERR_INST_INVALID', `Kubernetes manifest '${f}' is not in the VNF package`);
    const docs = parseAllDocuments(buf.toString('utf8'));
    const list = Array.isArray(docs) ? docs : [docs];
    list.forEach((doc, i) => {
      if (doc.errors.length > 0) {
        throw vnfmError('VNFM_ERR_INST_INVALID', `Kubernetes manifest ${f} (document ${i + 1}) is not valid YAML: ${doc.errors[0]?.message ?? 'syntax error'}`);
      }
      const v: unknown = doc.toJS({ maxAliasCount: 1000 });
      if (v === null || v === undefined) return;
      const items = isObj(v) && typeof v.kind === 'string' && v.kind.endsWith('List') && Array.isArray(v.items) ? (v.items as unknown[]) : [v];
      for (const item of items) {
        if (!isObj(item) || typeof item.kind !== 'string' || typeof item.apiVersion !== 'string' || !isObj(item.metadata) || typeof item.metadata.name !== 'string') {
          throw vnfmError('VNFM_ERR_INST_INVALID', `Kubernetes manifest ${f} (document ${i + 1}): every object needs apiVersion, kind and metadata.name`);
        }
        out.push(item as unknown as KubeObject);
      }
    });
  }
  return out;
}

/**
 * The namespace of the CNF: `additionalParams.namespace` when given (it applies to every
 * namespaced object), else the one namespace the manifests name, else `default`. Manifests naming
 * different namespaces without a request namespace are refused (`VNFM_ERR_INST_INVALID`): one CNF
 * lives in one namespace, which is what terminate and heal rely on.
 */
export function resolveNamespace(objects: readonly KubeObject[], requested: unknown): string {
  if (requested !== undefined && requested !== null) {
    if (typeof requested !== 'string' || !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(requested) || requested.length > 63) {
      throw vnfmError('VNFM_ERR_INST_INVALID', `additionalParams.namespace '${String(requested)}' is not a valid Kubernetes namespace name`);
    }
    return requested;
  }
  const named = new Set<string>();
  for (const o of objects) {
    if (isNamespaced(o.kind) && typeof o.metadata.namespace === 'string' && o.metadata.namespace !== '') named.add(o.metadata.namespace);
  }
  if (named.size > 1) {
    throw vnfmError('VNFM_ERR_INST_INVALID', `the manifests name several namespaces (${[...named].sort().join(', ')}); a CNF lives in one namespace: fix the manifests or set additionalParams.namespace`);
  }
  return [...named][0] ?? 'default';
}

function addLabels(meta: unknown, labels: Record<string, string>): Record<string, unknown> {
  const m = isObj(meta) ? meta : {};
  m.labels = { ...(isObj(m.labels) ? (m.labels as Record<string, string>) : {}), ...labels };
  return m;
}

function isLabelValue(v: string): boolean {
  return v.length <= 63 && /^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$/.test(v);
}

/** The labels of the pods of a VDU (the VDU label only when the VDU id is a valid label value). */
function podLabels(instanceId: string, vduId: string | undefined): Record<string, string> {
  const l: Record<string, string> = { [INSTANCE_LABEL]: instanceId };
  if (vduId !== undefined && isLabelValue(vduId)) l[VDU_LABEL] = vduId;
  return l;
}

/** Key of an object ref, unique within a cluster. */
export function refKey(ref: ObjectRef): string {
  return `${ref.kind}/${ref.namespace ?? ''}/${ref.name}`;
}

/** Label selector of every object of an instance. */
export function instanceSelector(instanceId: string): string {
  return `${INSTANCE_LABEL}=${instanceId}`;
}

/**
 * The VDUs of the flavour the manifests deploy: a VDU is the workload (Pod, Deployment,
 * ReplicaSet, DaemonSet, StatefulSet) whose `metadata.name` equals the VDU's `properties.name`.
 * `deployed` is in flavour order; `missing` are the VDUs no workload of the manifests is named
 * like.
 */
export function vdusOfManifests(objects: readonly KubeObject[], flavour: FlavourModel): { deployed: string[]; missing: string[] } {
  const names = new Set(objects.filter((o) => (WORKLOAD_KINDS as readonly string[]).includes(o.kind)).map((o) => o.metadata.name as string));
  const deployed: string[] = [];
  const missing: string[] = [];
  for (const vdu of Object.values(flavour.vdus)) (names.has(vdu.name) ? deployed : missing).push(vdu.vduId);
  return { deployed, missing };
}

/**
 * Checks which VDUs an instantiate deploys (Tacker's subset instantiate): when the request names
 * its `lcm-kubernetes-def-files` (`explicit`), the VDUs whose workload is not in those files are
 * simply not deployed, but at least one must be; when it names none (every manifest of the
 * package), every VDU of the flavour must have its workload. Throws `VNFM_ERR_INST_INVALID`
 * naming the files and the VDUs; returns the deployed VDUs (flavour order).
 */
export function checkDeployedVdus(objects: readonly KubeObject[], flavour: FlavourModel, defFiles: readonly string[], explicit: boolean): string[] {
  const { deployed, missing } = vdusOfManifests(objects, flavour);
  const what = (ids: readonly string[]) => ids.map((id) => `${id} (name '${flavour.vdus[id]?.name ?? id}')`).join(', ');
  if (deployed.length === 0) {
    throw vnfmError(
      'VNFM_ERR_INST_INVALID',
      `none of the lcm-kubernetes-def-files (${defFiles.join(', ')}) has a Pod, Deployment, ReplicaSet, DaemonSet or StatefulSet named like a VDU of flavour ${flavour.flavourId}: ${what(missing)}; a VDU's properties.name must equal its workload's metadata.name`,
    );
  }
  if (!explicit && missing.length > 0) {
    throw vnfmError(
      'VNFM_ERR_INST_INVALID',
      `no Pod, Deployment, ReplicaSet, DaemonSet or StatefulSet in ${defFiles.join(', ')} is named like VDU ${what(missing)}; a VDU's properties.name must equal its workload's metadata.name`,
    );
  }
  return deployed;
}

/**
 * Builds the plan: namespaced, labelled, VDU-mapped, replicas set from `vduCounts` for scalable
 * VDU kinds, sorted in creation order. A VDU is the workload whose `metadata.name` equals the
 * VDU's `properties.name` (see {@link vdusOfManifests}); VDUs of the flavour without such a
 * workload are not part of the CNF (subset instantiate, see {@link checkDeployedVdus}), but at
 * least one VDU must be (`VNFM_ERR_INST_INVALID`), and duplicate objects are refused.
 */
export function buildPlan(args: {
  objects: readonly KubeObject[];
  defFiles: readonly string[];
  namespace: string;
  instanceId: string;
  flavour: FlavourModel;
  vduCounts: Readonly<Record<string, number>>;
  /** Whether VDUs without a workload in `defFiles` are allowed (not deployed). @default true */
  subset?: boolean;
}): CnfPlan {
  const { namespace, instanceId, flavour } = args;
  if (!isLabelValue(instanceId)) throw vnfmError('VNFM_ERR_INST_INVALID', `VNF instance id '${instanceId}' cannot be used as a Kubernetes label value`);
  const vduByName = new Map<string, string>();
  for (const vdu of Object.values(flavour.vdus)) vduByName.set(vdu.name, vdu.vduId);
  const seen = new Set<string>();
  const found = new Set<string>();
  const planned: (PlannedObject & { order: number; pos: number })[] = [];
  args.objects.forEach((src, pos) => {
    const body = structuredClone(src);
    const ns = isNamespaced(body.kind) ? namespace : undefined;
    if (ns === undefined) delete body.metadata.namespace;
    else body.metadata.namespace = ns;
    const ref: ObjectRef = { apiVersion: body.apiVersion, kind: body.kind, name: body.metadata.name as string, ...(ns === undefined ? {} : { namespace: ns }) };
    const key = refKey(ref);
    if (seen.has(key)) throw vnfmError('VNFM_ERR_INST_INVALID', `the manifests declare ${body.kind} ${ref.name} twice`);
    seen.add(key);
    let vduId: string | undefined;
    if ((WORKLOAD_KINDS as readonly string[]).includes(body.kind)) {
      vduId = vduByName.get(ref.name);
      if (vduId !== undefined) {
        if (found.has(vduId)) throw vnfmError('VNFM_ERR_INST_INVALID', `several workloads are named '${ref.name}', the name of VDU ${vduId}; a VDU must be exactly one workload`);
        found.add(vduId);
      }
    }
    const labels = podLabels(instanceId, vduId);
    body.metadata = addLabels(body.metadata, labels) as KubeObject['metadata'];
    const spec = isObj(body.spec) ? (body.spec as Record<string, unknown>) : undefined;
    if (spec !== undefined) {
      if (isObj(spec.template)) spec.template.metadata = addLabels(spec.template.metadata, labels);
      if (isObj(spec.jobTemplate) && isObj(spec.jobTemplate.spec) && isObj(spec.jobTemplate.spec.template)) {
        spec.jobTemplate.spec.template.metadata = addLabels(spec.jobTemplate.spec.template.metadata, { [INSTANCE_LABEL]: instanceId });
      }
      if (body.kind === 'StatefulSet' && Array.isArray(spec.volumeClaimTemplates)) {
        for (const t of spec.volumeClaimTemplates) if (isObj(t)) t.metadata = addLabels(t.metadata, { [INSTANCE_LABEL]: instanceId });
      }
      if (vduId !== undefined && (SCALABLE_KINDS as readonly string[]).includes(body.kind)) {
        const n = args.vduCounts[vduId];
        if (n !== undefined) spec.replicas = n;
      }
    }
    const order = KIND_ORDER.indexOf(body.kind);
    planned.push({ ref, ...(vduId === undefined ? {} : { vduId }), body, order: order < 0 ? KIND_ORDER.length : order, pos });
  });
  checkDeployedVdus(args.objects, flavour, args.defFiles, args.subset ?? true);
  planned.sort((a, b) => a.order - b.order || a.pos - b.pos);
  const objects: PlannedObject[] = planned.map(({ ref, vduId, body }) => ({ ref, ...(vduId === undefined ? {} : { vduId }), body }));
  const resources: ResourceRecord[] = objects.map((o) => {
    const r: ResourceRecord = { ...o.ref, ...(o.vduId === undefined ? {} : { vduId: o.vduId }) };
    if (o.body.kind === 'StatefulSet' && Array.isArray(o.body.spec?.volumeClaimTemplates)) {
      r.claimTemplates = (o.body.spec.volumeClaimTemplates as unknown[])
        .map((t) => (isObj(t) && isObj(t.metadata) && typeof t.metadata.name === 'string' ? t.metadata.name : undefined))
        .filter((x): x is string => x !== undefined);
    }
    return r;
  });
  return { record: { namespace, defFiles: [...args.defFiles], resources }, objects };
}
