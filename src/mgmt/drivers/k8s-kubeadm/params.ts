/**
 * `additionalParams.k8s_cluster_installation_param` of the `k8s-kubeadm` driver (Tacker's
 * parameters, spec §1.2.1): normalisation (camelCase keys as Tacker's v1 API shows them ->
 * snake_case, the canonical form; a snake_case key wins over its camelCase twin), validation (400
 * `VNFM_ERR_API_BAD_REQUEST` listing every problem, never echoing a secret), defaults, and the
 * per-operation overrides of scale / heal requests (§1.3: flat `master_node_username` /
 * `master_node_password` pairs, or nested `k8s_cluster_installation_param` dicts merged per dict).
 */
import { isIP } from 'node:net';
import { vnfmError } from '../../../errors.ts';
import { isCidr, isObj, type NodeAccess, normalizeKeys, packagePath, snakeCase, sshAddressOf, str } from '../k8s-common/params.ts';

export { isCidr, type NodeAccess, normalizeKeys, packagePath, snakeCase };

type Obj = Record<string, unknown>;

/** The key all drivers read. */
export const INSTALLATION_PARAM = 'k8s_cluster_installation_param';

/** Keys accepted and kept but not acted on (first delivery); the driver logs a warning. */
export const IGNORED_KEYS = ['helm_installation_script_path', 'private_registry_connection_info', 'storage_server', 'pv_registration_params'] as const;

/** Defaults (spec §1.2.1). */
export const DEFAULT_POD_CIDR = '192.168.0.0/16';
export const DEFAULT_SERVICE_CIDR = '10.96.0.0/12';

/** `master_node` / `worker_node`. */
export interface NodeParams extends NodeAccess {
  aspectId?: string;
  /** healvnfm (Tacker v2 sample) extension: the VDU of these nodes, instead of finding it by CP. */
  vduId?: string;
  sshCpName: string;
  /** The CP giving the node's cluster address; defaults to `ssh_cp_name` (its fixed address). */
  nicCpName?: string;
  /** healvnfm extension: `floating` connects to the floating IP of the `ssh_cp_name` CP (default: its fixed address, as Tacker). */
  sshAddress?: 'fixed' | 'floating';
}

/** `master_node`. */
export interface MasterParams extends NodeParams {
  podCidr: string;
  clusterCidr: string;
  clusterCpName: string;
  clusterFipName?: string;
  /** healvnfm extension: the cluster (API) address when no VNFC CP carries it. */
  clusterIp?: string;
}

/** `proxy`. */
export interface ProxyParams {
  httpProxy?: string;
  httpsProxy?: string;
  noProxy?: string;
  k8sNodeCidr?: string;
}

/** The validated parameters. */
export interface KubeadmParams {
  scriptPath: string;
  vimName: string;
  masterNode: MasterParams;
  workerNode: NodeParams;
  proxy?: ProxyParams;
  /** Accepted-but-ignored keys present in the request. */
  ignored: string[];
  /** Explicitly allow registering the VIM without certificate verification. */
  insecure: boolean;
}

/** `additionalParams.drain` of a scale or heal. */
export interface DrainParams {
  timeoutSeconds?: number;
  force: boolean;
}

/** The normalised `k8s_cluster_installation_param` of some additionalParams ({} when absent). */
export function installationParamOf(additionalParams: Obj | undefined): Obj {
  const n = normalizeKeys(additionalParams ?? {}) as Obj;
  const p = n[INSTALLATION_PARAM];
  return isObj(p) ? p : {};
}

/** True when the additionalParams carry a cluster installation parameter (either spelling). */
export function hasInstallationParam(additionalParams: Obj | undefined): boolean {
  return isObj((normalizeKeys(additionalParams ?? {}) as Obj)[INSTALLATION_PARAM]);
}

function nodeParams(raw: unknown, where: string, problems: string[]): NodeParams | undefined {
  if (!isObj(raw)) {
    problems.push(`${where} is required (an object)`);
    return undefined;
  }
  const sshCpName = str(raw.ssh_cp_name);
  const username = str(raw.username);
  const password = typeof raw.password === 'string' && raw.password !== '' ? raw.password : undefined;
  const privateKey = str(raw.private_key);
  const passphrase = typeof raw.passphrase === 'string' && raw.passphrase !== '' ? raw.passphrase : undefined;
  if (!sshCpName) problems.push(`${where}.ssh_cp_name is required`);
  if (!username) problems.push(`${where}.username is required`);
  if (!password && !privateKey) problems.push(`${where}.password (or private_key) is required`);
  for (const k of ['aspect_id', 'vdu_id', 'nic_cp_name'] as const) {
    if (raw[k] !== undefined && !str(raw[k])) problems.push(`${where}.${k} must be a non-empty string`);
  }
  const sshAddress = sshAddressOf(raw, where, problems);
  if (!sshCpName || !username || (!password && !privateKey)) return undefined;
  return {
    sshCpName,
    ...sshAddress,
    username,
    ...(password ? { password } : {}),
    ...(privateKey ? { privateKey } : {}),
    ...(passphrase ? { passphrase } : {}),
    ...(str(raw.aspect_id) ? { aspectId: str(raw.aspect_id) as string } : {}),
    ...(str(raw.vdu_id) ? { vduId: str(raw.vdu_id) as string } : {}),
    ...(str(raw.nic_cp_name) ? { nicCpName: str(raw.nic_cp_name) as string } : {}),
  };
}

/** What validation needs besides the parameters. */
export interface ParamContext {
  instanceId: string;
  /** Files of the package (to check `script_path`); unchecked when absent. */
  packageFiles?: readonly string[];
}

/**
 * Validates the normalised installation parameter (from {@link installationParamOf} or
 * {@link effectiveInstallationParam}) and applies the defaults. Throws 400 listing every problem.
 */
export function parseKubeadmParams(p: Obj, c: ParamContext): KubeadmParams {
  const problems: string[] = [];
  const where = INSTALLATION_PARAM;
  if (Object.keys(p).length === 0) throw vnfmError('VNFM_ERR_API_BAD_REQUEST', `additionalParams.${where} is required by the k8s-kubeadm management driver`);
  const scriptPath = str(p.script_path);
  if (!scriptPath) problems.push(`${where}.script_path is required`);
  else if (c.packageFiles && !c.packageFiles.map(packagePath).includes(packagePath(scriptPath))) problems.push(`${where}.script_path '${scriptPath}' is not a file of the VNF package`);
  if (p.vim_name !== undefined && !str(p.vim_name)) problems.push(`${where}.vim_name must be a non-empty string`);
  const master = nodeParams(p.master_node, `${where}.master_node`, problems);
  const worker = nodeParams(p.worker_node, `${where}.worker_node`, problems);
  const rawMaster = isObj(p.master_node) ? p.master_node : {};
  const clusterCpName = str(rawMaster.cluster_cp_name);
  if (isObj(p.master_node) && !clusterCpName) problems.push(`${where}.master_node.cluster_cp_name is required`);
  const podCidr = rawMaster.pod_cidr === undefined ? DEFAULT_POD_CIDR : rawMaster.pod_cidr;
  const clusterCidr = rawMaster.cluster_cidr === undefined ? DEFAULT_SERVICE_CIDR : rawMaster.cluster_cidr;
  if (!isCidr(podCidr)) problems.push(`${where}.master_node.pod_cidr '${String(podCidr)}' is not a CIDR`);
  if (!isCidr(clusterCidr)) problems.push(`${where}.master_node.cluster_cidr '${String(clusterCidr)}' is not a CIDR`);
  if (rawMaster.cluster_ip !== undefined && !isIP(String(rawMaster.cluster_ip))) problems.push(`${where}.master_node.cluster_ip '${String(rawMaster.cluster_ip)}' is not an IP address`);
  if (rawMaster.cluster_fip_name !== undefined && !str(rawMaster.cluster_fip_name)) problems.push(`${where}.master_node.cluster_fip_name must be a non-empty string`);
  let proxy: ProxyParams | undefined;
  if (p.proxy !== undefined) {
    if (!isObj(p.proxy)) problems.push(`${where}.proxy must be an object`);
    else {
      const x = p.proxy;
      if (x.k8s_node_cidr !== undefined && !isCidr(x.k8s_node_cidr)) problems.push(`${where}.proxy.k8s_node_cidr '${String(x.k8s_node_cidr)}' is not a CIDR`);
      proxy = {
        ...(str(x.http_proxy) ? { httpProxy: str(x.http_proxy) as string } : {}),
        ...(str(x.https_proxy) ? { httpsProxy: str(x.https_proxy) as string } : {}),
        ...(str(x.no_proxy) ? { noProxy: str(x.no_proxy) as string } : {}),
        ...(str(x.k8s_node_cidr) ? { k8sNodeCidr: str(x.k8s_node_cidr) as string } : {}),
      };
    }
  }
  if (p.private_registry_connection_info !== undefined && !Array.isArray(p.private_registry_connection_info)) problems.push(`${where}.private_registry_connection_info must be an array`);
  if (problems.length > 0 || !master || !worker || !clusterCpName || !scriptPath) {
    throw vnfmError('VNFM_ERR_API_BAD_REQUEST', `invalid k8s-kubeadm parameters: ${problems.join('; ')}`, { extra: { problems } });
  }
  return {
    scriptPath: packagePath(scriptPath),
    vimName: str(p.vim_name) ?? `kubernetes_vim_${c.instanceId}`,
    masterNode: {
      ...master,
      podCidr: String(podCidr),
      clusterCidr: String(clusterCidr),
      clusterCpName,
      ...(str(rawMaster.cluster_fip_name) ? { clusterFipName: str(rawMaster.cluster_fip_name) as string } : {}),
      ...(str(rawMaster.cluster_ip) ? { clusterIp: str(rawMaster.cluster_ip) as string } : {}),
    },
    workerNode: worker,
    ...(proxy && (proxy.httpProxy || proxy.httpsProxy || proxy.noProxy || proxy.k8sNodeCidr) ? { proxy } : {}),
    ignored: IGNORED_KEYS.filter((k) => p[k] !== undefined),
    insecure: p.insecure === true,
  };
}

const CREDENTIAL_KEYS = ['username', 'password', 'private_key', 'passphrase'] as const;

/** The effective parameters of an operation and what to persist when it completes. */
export interface EffectiveParams {
  /** The normalised installation parameter to validate and use. */
  param: Obj;
  /** Merge patch of the stored instantiate params (credential overrides), when there are any. */
  persist?: Obj;
  /** Which node dicts got overrides (for logs; never values). */
  overridden: string[];
}

/**
 * The installation parameter for a scale / heal / terminate: the stored instantiate one with the
 * operation's overrides merged per dict (nested `k8s_cluster_installation_param` dicts and the flat
 * `<role>_node_username` + `<role>_node_password` / `_private_key` pairs, the latter used only when
 * both halves are given). Credential overrides are returned as a patch to persist on completion.
 */
export function effectiveInstallationParam(stored: Obj | undefined, opParams: Obj | undefined): EffectiveParams {
  const base = installationParamOf(stored);
  const ops = normalizeKeys(opParams ?? {}) as Obj;
  const nested = isObj(ops[INSTALLATION_PARAM]) ? (ops[INSTALLATION_PARAM] as Obj) : {};
  const param: Obj = { ...base };
  const overridden: string[] = [];
  const persist: Record<string, Obj> = {};
  for (const [k, v] of Object.entries(nested)) {
    if (isObj(v) && isObj(param[k])) param[k] = { ...(param[k] as Obj), ...v };
    else param[k] = v;
    if ((k === 'master_node' || k === 'worker_node') && isObj(v)) {
      overridden.push(k);
      for (const c of CREDENTIAL_KEYS) if (v[c] !== undefined) (persist[k] ??= {})[c] = v[c];
    }
  }
  for (const role of ['master', 'worker'] as const) {
    const key = `${role}_node`;
    const user = str(ops[`${key}_username`]);
    const password = typeof ops[`${key}_password`] === 'string' && ops[`${key}_password`] !== '' ? (ops[`${key}_password`] as string) : undefined;
    const privateKey = str(ops[`${key}_private_key`]);
    if (!user || (!password && !privateKey)) continue;
    const cred: Obj = { username: user, ...(password ? { password } : {}), ...(privateKey ? { private_key: privateKey } : {}) };
    param[key] = { ...(isObj(param[key]) ? (param[key] as Obj) : {}), ...cred };
    if (!overridden.includes(key)) overridden.push(key);
    persist[key] = { ...(persist[key] ?? {}), ...cred };
  }
  return Object.keys(persist).length > 0 ? { param, persist: { [INSTALLATION_PARAM]: persist }, overridden } : { param, overridden };
}

/** Whether the flat override keys are half given (a user without password or the reverse): 400. */
export function checkFlatOverrides(opParams: Obj | undefined): string[] {
  const ops = normalizeKeys(opParams ?? {}) as Obj;
  const problems: string[] = [];
  for (const key of ['master_node', 'worker_node']) {
    const hasUser = ops[`${key}_username`] !== undefined;
    const hasSecret = ops[`${key}_password`] !== undefined || ops[`${key}_private_key`] !== undefined;
    if (hasUser !== hasSecret) problems.push(`${key}_username and ${key}_password (or ${key}_private_key) must be given together`);
  }
  return problems;
}

/** `additionalParams.drain` ({timeoutSeconds, force}); 400 when malformed. */
export function drainParamsOf(opParams: Obj | undefined): DrainParams {
  const ops = normalizeKeys(opParams ?? {}) as Obj;
  const d = ops.drain;
  if (d === undefined) return { force: false };
  if (!isObj(d)) throw vnfmError('VNFM_ERR_API_BAD_REQUEST', 'additionalParams.drain must be an object {timeoutSeconds, force}');
  const t = d.timeout_seconds;
  if (t !== undefined && (typeof t !== 'number' || !Number.isFinite(t) || t <= 0)) throw vnfmError('VNFM_ERR_API_BAD_REQUEST', 'additionalParams.drain.timeoutSeconds must be a positive number');
  if (d.force !== undefined && typeof d.force !== 'boolean') throw vnfmError('VNFM_ERR_API_BAD_REQUEST', 'additionalParams.drain.force must be a boolean');
  return { ...(typeof t === 'number' ? { timeoutSeconds: t } : {}), force: d.force === true };
}

/** Every secret of the parameters (to redact from anything shown). */
export function secretsOf(p: KubeadmParams): string[] {
  const out: string[] = [];
  for (const n of [p.masterNode, p.workerNode]) for (const s of [n.password, n.privateKey, n.passphrase]) if (s) out.push(s);
  return out;
}
