/**
 * Parameters of the `cnf-nodeport-lb` driver (spec §1.2.3), Tacker's names:
 *
 * ```json
 * "additionalParams": {
 *   "lcm-kubernetes-def-files": ["Files/kubernetes/web.yaml"],
 *   "lcm-kubernetes-external-lb": {
 *     "script_path": "Scripts/configure_lb.sh",
 *     "external_lb_param": { "ssh_ip": "10.87.0.250", "ssh_username": "hvlab", "ssh_password": "..." }
 *   }
 * }
 * ```
 *
 * `script_path` is required (Tacker's packages carry the script) and must name a file of the
 * package, but it is not run: the driver converges the LB itself. Terminate and heal accept an
 * optional `lcm-kubernetes-external-lb` override of the LB access (e.g. a changed password).
 */

/** Where the LB is and how to log in. */
export interface LbAccess {
  sshIp: string;
  sshUsername: string;
  sshPassword: string;
  /** @default 22 */
  sshPort: number;
}

/** The driver's parameters, parsed. */
export interface NodePortLbParams {
  scriptPath: string;
  lb: LbAccess;
}

export const PARAM_KEY = 'lcm-kubernetes-external-lb';

const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;
const IPV6 = /^[0-9a-fA-F:]+$/;

/** A malformed parameter (400) or one the package contradicts (422). */
export class ParamError extends Error {
  constructor(
    message: string,
    readonly status: 400 | 422,
  ) {
    super(message);
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Parses the LB access of `external_lb_param` (throws {@link ParamError}). */
export function parseLbAccess(raw: unknown, where: string): LbAccess {
  if (!isObject(raw)) throw new ParamError(`${where}.external_lb_param: required, an object with ssh_ip, ssh_username, ssh_password`, 400);
  const ip = raw.ssh_ip;
  if (typeof ip !== 'string' || !(IPV4.test(ip) || (ip.includes(':') && IPV6.test(ip)))) throw new ParamError(`${where}.external_lb_param.ssh_ip: must be an IP address (the LB VM's SSH address)`, 400);
  const user = raw.ssh_username;
  if (typeof user !== 'string' || !/^[A-Za-z_][A-Za-z0-9_.-]{0,31}$/.test(user)) throw new ParamError(`${where}.external_lb_param.ssh_username: must be a user name`, 400);
  const pw = raw.ssh_password;
  if (typeof pw !== 'string' || pw === '') throw new ParamError(`${where}.external_lb_param.ssh_password: required, a non-empty string`, 400);
  const port = raw.ssh_port ?? 22;
  if (typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65535) throw new ParamError(`${where}.external_lb_param.ssh_port: must be 1-65535`, 400);
  return { sshIp: ip, sshUsername: user, sshPassword: pw, sshPort: port };
}

/** Parses the instantiate parameters (throws {@link ParamError}). `packageFiles`: check that script_path is in the package. */
export function parseNodePortLbParams(additionalParams: Record<string, unknown>, packageFiles?: readonly string[]): NodePortLbParams {
  const raw = additionalParams[PARAM_KEY];
  if (!isObject(raw)) throw new ParamError(`additionalParams.${PARAM_KEY}: required, an object with script_path and external_lb_param`, 400);
  const scriptPath = raw.script_path;
  if (typeof scriptPath !== 'string' || scriptPath.trim() === '') throw new ParamError(`additionalParams.${PARAM_KEY}.script_path: required, the path of configure_lb.sh in the package`, 400);
  if (packageFiles !== undefined) {
    const norm = (p: string): string => p.replace(/\\/g, '/').replace(/^(\.\/)+/, '').replace(/^\/+/, '');
    if (!packageFiles.map(norm).includes(norm(scriptPath))) throw new ParamError(`additionalParams.${PARAM_KEY}.script_path: ${scriptPath} is not a file of the VNF package`, 422);
  }
  const lb = parseLbAccess(raw.external_lb_param, `additionalParams.${PARAM_KEY}`);
  const defs = additionalParams['lcm-kubernetes-def-files'];
  if (defs !== undefined && (!Array.isArray(defs) || defs.some((d) => typeof d !== 'string'))) throw new ParamError('additionalParams.lcm-kubernetes-def-files: must be a list of package paths', 400);
  return { scriptPath, lb };
}

/**
 * The LB access for a later operation: the stored instantiate parameters, overridden by the
 * operation's own `lcm-kubernetes-external-lb.external_lb_param` when given.
 */
export function effectiveLbAccess(instantiateParams: Record<string, unknown>, opParams: Record<string, unknown>): LbAccess {
  const override = opParams[PARAM_KEY];
  if (override !== undefined) {
    if (!isObject(override)) throw new ParamError(`additionalParams.${PARAM_KEY}: must be an object`, 400);
    if (override.external_lb_param !== undefined) {
      const stored = isObject(instantiateParams[PARAM_KEY]) ? (instantiateParams[PARAM_KEY] as Record<string, unknown>).external_lb_param : undefined;
      return parseLbAccess({ ...(isObject(stored) ? stored : {}), ...(isObject(override.external_lb_param) ? override.external_lb_param : { invalid: true }) }, `additionalParams.${PARAM_KEY}`);
    }
  }
  return parseNodePortLbParams(instantiateParams).lb;
}
