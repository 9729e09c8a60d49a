/**
 * The layers of the configuration below the defaults: the config file (JSON or YAML), the `VNFM_*`
 * environment variables, and how a layer is merged over the one below (unknown and replaced
 * settings refused).
 */
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { ConfigError, type ConfigInput } from './types.ts';

const ENV_MAP: Record<string, [string, 'string' | 'number' | 'boolean' | 'list']> = {
  VNFM_HOST: ['host', 'string'],
  VNFM_PORT: ['port', 'number'],
  VNFM_PUBLIC_URL: ['publicUrl', 'string'],
  VNFM_DATA_DIR: ['dataDir', 'string'],
  VNFM_DATABASE_URL: ['databaseUrl', 'string'],
  VNFM_LOG_LEVEL: ['logLevel', 'string'],
  VNFM_SECRET_KEY: ['secretKey', 'string'],
  VNFM_SECRET_KEY_FILE: ['secretKeyFile', 'string'],
  VNFM_SECRETS_EXTRA_NAMES: ['secrets.extraNames', 'list'],
  VNFM_SECRETS_NEVER_NAMES: ['secrets.neverNames', 'list'],
  VNFM_OUTBOUND_ALLOW: ['outbound.allow', 'list'],
  VNFM_OUTBOUND_DENY: ['outbound.deny', 'list'],
  VNFM_OUTBOUND_VIM_ALLOW: ['outbound.vimAllow', 'list'],
  VNFM_MGMT_SCRIPT_USER: ['mgmt.scriptUser', 'string'],
  VNFM_PAGE_SIZE: ['pageSize', 'number'],
  VNFM_EMBEDDED_DATABASE_SHARED_BUFFERS: ['embeddedDatabase.sharedBuffers', 'string'],
  VNFM_EMBEDDED_DATABASE_WORK_MEM: ['embeddedDatabase.workMem', 'string'],
  VNFM_API_MAX_IN_FLIGHT_REQUESTS: ['api.maxInFlightRequests', 'number'],
  VNFM_API_BUSY_RETRY_AFTER_SECONDS: ['api.busyRetryAfterSeconds', 'number'],
  VNFM_API_AUTH: ['apiAuth', 'list'],
  VNFM_AUTH_ALLOW_UNAUTHENTICATED: ['auth.allowUnauthenticated', 'boolean'],
  VNFM_AUTH_TRUSTED_LOCAL_UIDS: ['auth.trustedLocalUids', 'list'],
  VNFM_AUTH_POLICY_FILE: ['auth.policyFile', 'string'],
  VNFM_AUTH_FAILURE_CACHE_MS: ['auth.failureCacheMs', 'number'],
  VNFM_AUTH_FAILURE_LIMIT_BURST: ['auth.failureLimit.burst', 'number'],
  VNFM_AUTH_FAILURE_LIMIT_PER_MINUTE: ['auth.failureLimit.perMinute', 'number'],
  VNFM_AUTH_METRICS: ['auth.metrics', 'string'],
  VNFM_AUTH_DOCS: ['auth.docs', 'string'],
  VNFM_AUTH_TENANCY_PACKAGES: ['auth.tenancy.packages', 'string'],
  VNFM_AUTH_TENANCY_VIMS: ['auth.tenancy.vims', 'string'],
  VNFM_KEYSTONE_AUTH_URL: ['auth.keystone.authUrl', 'string'],
  VNFM_KEYSTONE_USERNAME: ['auth.keystone.username', 'string'],
  VNFM_KEYSTONE_PASSWORD: ['auth.keystone.password', 'string'],
  VNFM_KEYSTONE_PROJECT_NAME: ['auth.keystone.projectName', 'string'],
  VNFM_OAUTH2_INTROSPECTION_ENDPOINT: ['auth.oauth2.introspection.endpoint', 'string'],
  VNFM_OAUTH2_INTROSPECTION_CLIENT_ID: ['auth.oauth2.introspection.clientId', 'string'],
  VNFM_OAUTH2_INTROSPECTION_CLIENT_SECRET: ['auth.oauth2.introspection.clientSecret', 'string'],
  VNFM_MTLS_CERT_FILE: ['auth.mtls.certFile', 'string'],
  VNFM_MTLS_KEY_FILE: ['auth.mtls.keyFile', 'string'],
  VNFM_MTLS_CA_FILE: ['auth.mtls.caFile', 'string'],
  VNFM_API_TOKENS: ['apiTokens', 'list'],
  VNFM_HEALTH_PUBLIC: ['health.public', 'boolean'],
  VNFM_HEALTH_READY_TIMEOUT_MS: ['health.readyTimeoutMs', 'number'],
  VNFM_HEALTH_LIVENESS_PORT: ['health.livenessPort', 'number'],
  VNFM_HEALTH_LIVENESS_HOST: ['health.livenessHost', 'string'],
  VNFM_HEALTH_MAX_STALL_MS: ['health.maxStallMs', 'number'],
  VNFM_SIM: ['sim', 'boolean'],
  VNFM_SIM_RESET: ['simReset', 'boolean'],
  VNFM_LAB: ['lab.enabled', 'boolean'],
  VNFM_LAB_CIDR: ['lab.cidr', 'string'],
  VNFM_LAB_NETWORK: ['lab.network', 'string'],
  VNFM_LAB_FLOATING_NETWORK: ['lab.floatingNetwork', 'string'],
  VNFM_LAB_FLOATING_CIDR: ['lab.floatingCidr', 'string'],
  VNFM_LAB_USER: ['lab.user', 'string'],
  VNFM_LAB_PASSWORD: ['lab.password', 'string'],
  VNFM_LAB_KUBERNETES_PORT: ['lab.kubernetesPort', 'number'],
  VNFM_LAB_POD_EVICTION_TIMEOUT_MS: ['lab.podEvictionTimeoutMs', 'number'],
  VNFM_LAB_WAIT_FOR_LOCK_MS: ['lab.waitForLockMs', 'number'],
  VNFM_LAB_SERVICE_HOSTS: ['lab.serviceHosts', 'boolean'],
  VNFM_WORKER_ID: ['runner.workerId', 'string'],
  VNFM_LEASE_MS: ['runner.leaseMs', 'number'],
  VNFM_LEASE_GRACE_MS: ['runner.leaseGraceMs', 'number'],
  VNFM_SHUTDOWN_GRACE_MS: ['runner.shutdownGraceMs', 'number'],
  VNFM_SHUTDOWN_MARGIN_MS: ['runner.shutdownMarginMs', 'number'],
  VNFM_STEP_MAX_ATTEMPTS: ['runner.stepRetries.maxAttempts', 'number'],
  VNFM_KUBERNETES_CREATE_NAMESPACE: ['vim.kubernetesCreateNamespace', 'boolean'],
  VNFM_MGMT_SCRIPT_TIMEOUT_MS: ['mgmt.scriptTimeoutMs', 'number'],
  VNFM_STACK_POLL_MS: ['vim.stackPollMs', 'number'],
  VNFM_STACK_POLL_MAX_MS: ['vim.stackPollMaxMs', 'number'],
  VNFM_GRANT_MODE: ['grants.mode', 'string'],
  VNFM_GRANT_ENDPOINT: ['grants.endpoint', 'string'],
  VNFM_GRANT_TOKEN_ENDPOINT: ['grants.tokenEndpoint', 'string'],
  VNFM_GRANT_CLIENT_ID: ['grants.clientId', 'string'],
  VNFM_GRANT_CLIENT_SECRET: ['grants.clientSecret', 'string'],
  VNFM_GRANT_CA_FILE: ['grants.caFile', 'string'],
  VNFM_NOTIFICATION_CA_FILE: ['notifications.caFile', 'string'],
  VNFM_AUTOHEAL_MAX_UNHEALTHY: ['autoheal.maxUnhealthy', 'string'],
  VNFM_SYNC_INTERVAL_MS: ['sync.intervalMs', 'number'],
  VNFM_VNFC_HEALTH_ENABLED: ['vnfcHealth.enabled', 'boolean'],
  VNFM_VNFC_HEALTH_PERIOD_MS: ['vnfcHealth.periodMs', 'number'],
  VNFM_NOTIFICATION_RETRY_FOR_MS: ['notifications.retryForMs', 'number'],
  VNFM_FAULT_WINDOW_MS: ['faultNotification.windowMs', 'number'],
  VNFM_PACKAGES_MAX_FILE_BYTES: ['packages.maxFileBytes', 'number'],
  VNFM_PACKAGES_MAX_VNFD_BYTES: ['packages.maxVnfdBytes', 'number'],
  VNFM_PACKAGES_MAX_OLD_GENERATION_SIZE_MB: ['packages.maxOldGenerationSizeMb', 'number'],
  VNFM_PACKAGES_ONBOARD_TIMEOUT_MS: ['packages.onboardTimeoutMs', 'number'],
  VNFM_PACKAGES_MAX_CONCURRENT_ONBOARDINGS: ['packages.maxConcurrentOnboardings', 'number'],
  VNFM_PACKAGES_MAX_CONCURRENT_ONBOARDINGS_PER_CALLER: ['packages.maxConcurrentOnboardingsPerCaller', 'number'],
  VNFM_FAULT_AUTH: ['faultNotification.auth', 'string'],
  VNFM_FAULT_CREDENTIAL: ['faultNotification.credential', 'string'],
};

/** Reads the `VNFM_*` variables of `env` into a partial config. */
export function configFromEnv(env: Record<string, string | undefined>): ConfigInput {
  const out: Record<string, unknown> = {};
  for (const [name, [path, type]] of Object.entries(ENV_MAP)) {
    const raw = env[name];
    if (raw === undefined || raw === '') continue;
    let value: unknown = raw;
    if (type === 'number') {
      value = Number(raw);
      if (!Number.isFinite(value)) throw new ConfigError(`${name}: not a number: ${raw}`);
    } else if (type === 'boolean') {
      if (!['0', '1', 'true', 'false'].includes(raw)) throw new ConfigError(`${name}: expected true/false/1/0, got ${raw}`);
      value = raw === '1' || raw === 'true';
    } else if (type === 'list') {
      value = raw.split(',').map((s) => s.trim()).filter(Boolean);
    }
    setPath(out, path, value);
  }
  return out as ConfigInput;
}

/** Reads a JSON or YAML config file. */
export function configFromFile(path: string): ConfigInput {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new ConfigError(`cannot read config file ${path}: ${(e as Error).message}`);
  }
  try {
    const v = path.endsWith('.json') ? JSON.parse(text) : parseYaml(text);
    if (v !== null && typeof v !== 'object') throw new Error('top level must be a mapping');
    return (v ?? {}) as ConfigInput;
  } catch (e) {
    throw new ConfigError(`config file ${path}: ${(e as Error).message}`);
  }
}

function setPath(obj: Record<string, unknown>, path: string, value: unknown): void {
  const parts = path.split('.');
  let cur = obj;
  for (const p of parts.slice(0, -1)) {
    cur[p] ??= {};
    cur = cur[p] as Record<string, unknown>;
  }
  cur[parts[parts.length - 1] as string] = value;
}

/** Settings that were removed, with what replaces them (named in the error). */
const REPLACED_SETTINGS: Record<string, string> = {
  'notifications.maxAttempts': 'notifications.maxAttempts was replaced by notifications.retryForMs: notifications are retried for a duration (ms, default 24 h), not a number of attempts',
};

/** Map settings whose keys are the user's own (replaced as a whole, not merged key by key). */
const FREE_FORM_MAPS = new Set(['auth.keystone.roleMap', 'auth.oauth2.scopeMap']);

export function merge<T>(base: T, over: unknown, path = ''): T {
  if (over === undefined || over === null || typeof over !== 'object' || Array.isArray(over)) return base;
  const out = { ...(base as Record<string, unknown>) };
  for (const [k, v] of Object.entries(over as Record<string, unknown>)) {
    const replaced = REPLACED_SETTINGS[`${path}${k}`];
    if (!(k in out)) throw new ConfigError(`unknown setting: ${k}${replaced ? ` (${replaced})` : ''}`);
    const cur = out[k];
    if (FREE_FORM_MAPS.has(`${path}${k}`)) {
      out[k] = v;
      continue;
    }
    if (v !== null && typeof v === 'object' && !Array.isArray(v) && cur !== null && typeof cur === 'object' && !Array.isArray(cur)) {
      out[k] = merge(cur, v, `${path}${k}.`);
    } else {
      out[k] = v;
    }
  }
  return out as T;
}
