/**
 * `additionalParams.k8s_cluster_installation_param` of the `k8s-kubespray` driver (Tacker's
 * parameters, spec §1.2.2): `master_node`, `worker_node`, `proxy`, `ansible`, `external_lb_param`,
 * `vim_name`. Validation lists every problem (400 `VNFM_ERR_API_BAD_REQUEST`, never echoing a
 * secret); scale / heal requests may give any of `worker_node`, `ansible`, `external_lb_param`,
 * which REPLACE the stored dict (§1.3, Tacker's rule); a whole heal may also give `master_node`
 * and `proxy`.
 */
import { isIP } from 'node:net';
import { posix } from 'node:path';
import { vnfmError } from '../../../errors.ts';
import { isCidr, isObj, type NodeAccess, normalizeKeys, packagePath, sshAddressOf, str } from '../k8s-common/params.ts';

type Obj = Record<string, unknown>;

export const INSTALLATION_PARAM = 'k8s_cluster_installation_param';

/** `master_node` / `worker_node`. */
export interface SprayNodeParams extends NodeAccess {
  aspectId?: string;
  /** healvnfm extension: the VDU of these nodes, instead of finding it by CP. */
  vduId?: string;
  sshCpName: string;
  /** The CP giving the node's cluster address; defaults to `ssh_cp_name` (its fixed address). */
  nicCpName?: string;
  /** healvnfm extension: `floating` connects to the floating IP of the `ssh_cp_name` CP (default: its fixed address, as Tacker). */
  sshAddress?: 'fixed' | 'floating';
}

/** `ansible`. */
export interface AnsibleParams extends NodeAccess {
  ipAddress: string;
  kubesprayRootPath: string;
  transferringInventoryPath: string;
}

/** `external_lb_param`. */
export interface ExternalLbParams extends NodeAccess {
  /** Resource (CP) of the VNF whose address is the LB's SSH address. */
  sshCpName?: string;
  /** healvnfm extension: `floating` connects to the floating IP of the `ssh_cp_name` CP (default: its fixed address, as Tacker). */
  sshAddress?: 'fixed' | 'floating';
  /** healvnfm extension: the LB's address when it is not part of the VNF (an operator's LB VM). */
  sshIp?: string;
  /** Tacker's LB install script in the package: accepted (must exist when given), not run. */
  scriptPath?: string;
}

/** The validated parameters. */
export interface KubesprayParams {
  vimName: string;
  masterNode: SprayNodeParams & { podCidr?: string; clusterCidr?: string };
  workerNode: SprayNodeParams;
  proxy?: { httpProxy?: string; httpsProxy?: string };
  ansible: AnsibleParams;
  externalLb: ExternalLbParams;
  /** Register the VIM without certificate verification (explicitly requested). */
  insecure: boolean;
}

/** The key all drivers read, normalised ({} when absent). */
export function installationParamOf(additionalParams: Obj | undefined): Obj {
  const n = normalizeKeys(additionalParams ?? {}) as Obj;
  const p = n[INSTALLATION_PARAM];
  return isObj(p) ? p : {};
}

function secret(v: unknown): string | undefined {
  return typeof v === 'string' && v !== '' ? v : undefined;
}

function access(raw: Obj, where: string, problems: string[], keys: { user: string; password: string } = { user: 'username', password: 'password' }): NodeAccess | undefined {
  const username = str(raw[keys.user]);
  const password = secret(raw[keys.password]);
  const privateKey = str(raw.private_key);
  const passphrase = secret(raw.passphrase);
  if (!username) problems.push(`${where}.${keys.user} is required`);
  if (!password && !privateKey) problems.push(`${where}.${keys.password} (or private_key) is required`);
  if (!username || (!password && !privateKey)) return undefined;
  return { username, ...(password ? { password } : {}), ...(privateKey ? { privateKey } : {}), ...(passphrase ? { passphrase } : {}) };
}

function node(raw: unknown, where: string, problems: string[]): SprayNodeParams | undefined {
  if (!isObj(raw)) {
    problems.push(`${where} is required (an object)`);
    return undefined;
  }
  const sshCpName = str(raw.ssh_cp_name);
  if (!sshCpName) problems.push(`${where}.ssh_cp_name is required`);
  for (const k of ['aspect_id', 'vdu_id', 'nic_cp_name'] as const) if (raw[k] !== undefined && !str(raw[k])) problems.push(`${where}.${k} must be a non-empty string`);
  const a = access(raw, where, problems);
  const sshAddress = sshAddressOf(raw, where, problems);
  if (!sshCpName || !a) return undefined;
  return {
    ...a,
    sshCpName,
    ...sshAddress,
    ...(str(raw.aspect_id) ? { aspectId: str(raw.aspect_id) as string } : {}),
    ...(str(raw.vdu_id) ? { vduId: str(raw.vdu_id) as string } : {}),
    ...(str(raw.nic_cp_name) ? { nicCpName: str(raw.nic_cp_name) as string } : {}),
  };
}

/** An absolute, normalised directory path that is not `/` (Tacker's `rm -rf` target). */
function dirPath(v: unknown, where: string, problems: string[]): string | undefined {
  const s = str(v);
  if (!s) {
    problems.push(`${where} is required`);
    return undefined;
  }
  if (!s.startsWith('/') || /[\0\n]/.test(s)) {
    problems.push(`${where} '${s}' must be an absolute path`);
    return undefined;
  }
  const n = posix.normalize(s).replace(/\/+$/, '');
  if (n === '' || n.split('/').filter(Boolean).length < 2) {
    problems.push(`${where} '${s}' is too close to the root (at least two levels: it is removed at terminate)`);
    return undefined;
  }
  return n;
}

/** What validation needs besides the parameters. */
export interface SprayParamContext {
  instanceId: string;
  /** Files of the package (to check `script_path`); unchecked when absent. */
  packageFiles?: readonly string[];
}

/** Validates the normalised installation parameter and applies the defaults; 400 listing every problem. */
export function parseKubesprayParams(p: Obj, c: SprayParamContext): KubesprayParams {
  const problems: string[] = [];
  const w = INSTALLATION_PARAM;
  if (Object.keys(p).length === 0) throw vnfmError('VNFM_ERR_API_BAD_REQUEST', `additionalParams.${w} is required by the k8s-kubespray management driver`);
  if (p.vim_name !== undefined && !str(p.vim_name)) problems.push(`${w}.vim_name must be a non-empty string`);
  const master = node(p.master_node, `${w}.master_node`, problems);
  const worker = node(p.worker_node, `${w}.worker_node`, problems);
  const rawMaster = isObj(p.master_node) ? p.master_node : {};
  for (const k of ['pod_cidr', 'cluster_cidr'] as const) {
    if (rawMaster[k] !== undefined && !isCidr(rawMaster[k])) problems.push(`${w}.master_node.${k} '${String(rawMaster[k])}' is not a CIDR`);
  }
  let proxy: KubesprayParams['proxy'];
  if (p.proxy !== undefined) {
    if (!isObj(p.proxy)) problems.push(`${w}.proxy must be an object`);
    else proxy = { ...(str(p.proxy.http_proxy) ? { httpProxy: str(p.proxy.http_proxy) as string } : {}), ...(str(p.proxy.https_proxy) ? { httpsProxy: str(p.proxy.https_proxy) as string } : {}) };
  }
  let ansible: AnsibleParams | undefined;
  if (!isObj(p.ansible)) problems.push(`${w}.ansible is required (an object)`);
  else {
    const a = p.ansible;
    const ip = str(a.ip_address);
    // Tacker checks it with a network parser, so `10.0.0.5/32` passes: keep the address part.
    const addr = ip ? (isCidr(ip) ? (ip.split('/')[0] as string) : ip) : undefined;
    if (!ip) problems.push(`${w}.ansible.ip_address is required`);
    else if (!addr || isIP(addr) === 0) problems.push(`${w}.ansible.ip_address '${ip}' is not an IP address`);
    const root = dirPath(a.kubespray_root_path, `${w}.ansible.kubespray_root_path`, problems);
    const inv = dirPath(a.transferring_inventory_path, `${w}.ansible.transferring_inventory_path`, problems);
    if (root && inv && (root === inv || `${root}/`.startsWith(`${inv}/`))) problems.push(`${w}.ansible.transferring_inventory_path '${inv}' must not be (or contain) the Kubespray root`);
    const acc = access(a, `${w}.ansible`, problems);
    if (addr && isIP(addr) !== 0 && root && inv && acc) ansible = { ...acc, ipAddress: addr, kubesprayRootPath: root, transferringInventoryPath: inv };
  }
  let externalLb: ExternalLbParams | undefined;
  if (!isObj(p.external_lb_param)) problems.push(`${w}.external_lb_param is required (an object)`);
  else {
    const l = p.external_lb_param;
    const sshCpName = str(l.ssh_cp_name);
    const sshIp = str(l.ssh_ip);
    if (!sshCpName && !sshIp) problems.push(`${w}.external_lb_param.ssh_cp_name (or ssh_ip) is required`);
    if (sshIp && isIP(sshIp) === 0) problems.push(`${w}.external_lb_param.ssh_ip '${sshIp}' is not an IP address`);
    const scriptPath = str(l.script_path);
    if (scriptPath && c.packageFiles && !c.packageFiles.map(packagePath).includes(packagePath(scriptPath))) problems.push(`${w}.external_lb_param.script_path '${scriptPath}' is not a file of the VNF package`);
    const acc = access(l, `${w}.external_lb_param`, problems, { user: 'ssh_username', password: 'ssh_password' });
    const sshAddress = sshAddressOf(l, `${w}.external_lb_param`, problems);
    if ((sshCpName || (sshIp && isIP(sshIp) !== 0)) && acc) {
      externalLb = { ...acc, ...sshAddress, ...(sshCpName ? { sshCpName } : {}), ...(sshIp ? { sshIp } : {}), ...(scriptPath ? { scriptPath: packagePath(scriptPath) } : {}) };
    }
  }
  if (problems.length > 0 || !master || !worker || !ansible || !externalLb) {
    throw vnfmError('VNFM_ERR_API_BAD_REQUEST', `invalid k8s-kubespray parameters: ${problems.join('; ')}`, { extra: { problems } });
  }
  return {
    vimName: str(p.vim_name) ?? `kubernetes_vim_${c.instanceId}`,
    masterNode: { ...master, ...(str(rawMaster.pod_cidr) ? { podCidr: str(rawMaster.pod_cidr) as string } : {}), ...(str(rawMaster.cluster_cidr) ? { clusterCidr: str(rawMaster.cluster_cidr) as string } : {}) },
    workerNode: worker,
    ...(proxy && (proxy.httpProxy || proxy.httpsProxy) ? { proxy } : {}),
    ansible,
    externalLb,
    insecure: p.insecure === true,
  };
}

/** Dicts a scale / VNFC heal may override (each replaces the stored one); a whole heal may give all. */
const OP_DICTS = ['worker_node', 'ansible', 'external_lb_param'] as const;
const WHOLE_HEAL_DICTS = ['master_node', 'worker_node', 'proxy', 'ansible', 'external_lb_param'] as const;

/** The effective parameters of an operation and what to persist when it completes. */
export interface SprayEffective {
  param: Obj;
  /** Merge patch of the stored instantiate params, when the request replaced dicts. */
  persist?: Obj;
  overridden: string[];
}

/**
 * The installation parameter of a scale / heal / terminate: the stored one with the dicts the
 * request gives replacing the stored ones (Tacker: "a dict given replaces the stored one
 * entirely"). The replaced dicts are persisted when the operation completes (spec §2.7).
 */
export function effectiveSprayParam(stored: Obj | undefined, opParams: Obj | undefined, wholeHeal = false): SprayEffective {
  const base = installationParamOf(stored);
  const given = installationParamOf(opParams);
  const param: Obj = { ...base };
  const overridden: string[] = [];
  for (const k of wholeHeal ? WHOLE_HEAL_DICTS : OP_DICTS) {
    if (!isObj(given[k])) continue;
    param[k] = given[k];
    overridden.push(k);
  }
  if (overridden.length === 0) return { param, overridden };
  // JSON merge patch: a null first removes the stored dict, so the new one replaces it whole
  const persist: Obj = {};
  for (const k of overridden) persist[k] = given[k];
  return { param, persist: { [INSTALLATION_PARAM]: persist }, overridden };
}

/** The dicts of a scale / heal request that a VNFC operation may not override (400). */
export function refusedOverrides(opParams: Obj | undefined, wholeHeal: boolean): string[] {
  if (wholeHeal) return [];
  const given = installationParamOf(opParams);
  return Object.keys(given).filter((k) => !(OP_DICTS as readonly string[]).includes(k));
}

/** Every secret of the parameters (to redact from anything shown). */
export function secretsOf(p: KubesprayParams): string[] {
  const out: string[] = [];
  for (const n of [p.masterNode, p.workerNode, p.ansible, p.externalLb]) for (const s of [n.password, n.privateKey, n.passphrase]) if (s) out.push(s);
  return out;
}
