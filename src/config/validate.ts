/**
 * Validation of a resolved configuration, by section (authentication, secrets, notification TLS,
 * the lab): each check throws a {@link ConfigError} naming the bad setting.
 */
import { isIP } from 'node:net';
import { API_AUTH_MODES, API_ROLES, type ApiAuthMode, ConfigError, type VnfmConfig } from './types.ts';

export function validateLab(cfg: VnfmConfig): void {
  const l = cfg.lab;
  if (typeof l.enabled !== 'boolean') throw new ConfigError('lab.enabled: must be true or false');
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\/(\d{1,2})$/.exec(String(l.cidr));
  if (!m || m.slice(1, 5).some((x) => Number(x) > 255) || Number(m[5]) < 16 || Number(m[5]) > 24) {
    throw new ConfigError(`lab.cidr: must be an IPv4 CIDR with a /16 to /24 prefix (like 10.87.0.0/24), got ${JSON.stringify(l.cidr)}`);
  }
  if (typeof l.network !== 'string' || !/^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/.test(l.network)) throw new ConfigError('lab.network: must be a network name (letters, digits, _ . -)');
  if (typeof l.floatingNetwork !== 'string' || !/^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/.test(l.floatingNetwork) || l.floatingNetwork === l.network) {
    throw new ConfigError('lab.floatingNetwork: must be a network name (letters, digits, _ . -) other than lab.network');
  }
  {
    const m = typeof l.floatingCidr === 'string' ? /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\/(\d{1,2})$/.exec(l.floatingCidr) : null;
    const octets = m ? m.slice(1, 5).map(Number) : [];
    const prefix = m ? Number(m[5]) : -1;
    if (!m || octets.some((o) => o > 255) || prefix < 16 || prefix > 29) throw new ConfigError(`lab.floatingCidr: must be an IPv4 CIDR with a /16 to /29 prefix (like 172.24.4.0/24), got ${JSON.stringify(l.floatingCidr)}`);
    const range = (cidr: string): [number, number] | undefined => {
      const c = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\/(\d{1,2})$/.exec(cidr);
      if (!c) return undefined;
      const base = c.slice(1, 5).reduce((a, o) => a * 256 + Number(o), 0);
      const size = 2 ** (32 - Number(c[5]));
      const start = base - (base % size);
      return [start, start + size - 1];
    };
    const [f, lab] = [range(l.floatingCidr), typeof l.cidr === 'string' ? range(l.cidr) : undefined];
    if (f && lab && f[0] <= lab[1] && lab[0] <= f[1]) throw new ConfigError(`lab.floatingCidr: ${l.floatingCidr} must not overlap the lab subnet ${l.cidr}`);
  }
  if (typeof l.user !== 'string' || !/^[a-z_][a-z0-9_-]{0,31}$/.test(l.user) || l.user === 'root') throw new ConfigError('lab.user: must be a valid local user name other than root');
  if (l.password !== undefined && (typeof l.password !== 'string' || l.password.length < 8 || /[:\n]/.test(l.password))) {
    throw new ConfigError('lab.password: must be at least 8 characters, without ":" or a line break (or unset: generated)');
  }
  if (!Number.isInteger(l.kubernetesPort) || l.kubernetesPort < 0 || l.kubernetesPort > 65535) throw new ConfigError(`lab.kubernetesPort: must be 0-65535, got ${l.kubernetesPort}`);
  if (!Number.isFinite(l.podEvictionTimeoutMs) || l.podEvictionTimeoutMs < 0) throw new ConfigError('lab.podEvictionTimeoutMs: must be a number >= 0');
  if (!Number.isFinite(l.waitForLockMs) || l.waitForLockMs < 0) throw new ConfigError('lab.waitForLockMs: must be a number >= 0');
  if (typeof l.serviceHosts !== 'boolean') throw new ConfigError('lab.serviceHosts: must be true or false');
  if (l.enabled && !cfg.sim) throw new ConfigError('lab.enabled needs the simulated cloud (sim): its servers are what the lab turns into hosts (drop --no-sim)');
}

/** The enabled authentication modes of a config (`apiAuth` as a list). */
export function authModes(cfg: Pick<VnfmConfig, 'apiAuth'>): readonly ApiAuthMode[] {
  return typeof cfg.apiAuth === 'string' ? [cfg.apiAuth] : cfg.apiAuth;
}

/** True for a loopback listen address (127.0.0.0/8, ::1, localhost). */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h) || h === '::ffff:127.0.0.1';
}

export function validateNotificationTls(cfg: VnfmConfig): void {
  const entries = cfg.notifications.tls;
  if (!Array.isArray(entries)) throw new ConfigError('notifications.tls: must be a list of { prefix, caFile }');
  entries.forEach((e, i) => {
    const where = `notifications.tls[${i}]`;
    if (e === null || typeof e !== 'object' || Array.isArray(e)) throw new ConfigError(`${where}: must be { prefix, caFile }`);
    const unknown = Object.keys(e).filter((k) => k !== 'prefix' && k !== 'caFile');
    if (unknown.length) throw new ConfigError(`${where}: unknown setting ${unknown.join(', ')} (prefix and caFile only)`);
    let u: URL;
    try {
      u = new URL(String(e.prefix));
    } catch {
      throw new ConfigError(`${where}.prefix: must be an https URL prefix, got ${JSON.stringify(e.prefix)}`);
    }
    if (u.protocol !== 'https:' || u.username || u.password || u.search || u.hash) throw new ConfigError(`${where}.prefix: must be an https URL (scheme, host, optional port and path; no credentials, query or fragment), got ${JSON.stringify(e.prefix)}`);
    if (typeof e.caFile !== 'string' || e.caFile === '') throw new ConfigError(`${where}.caFile: must be the path of a PEM CA bundle`);
  });
}

export function validateSecrets(cfg: VnfmConfig): void {
  for (const k of ['extraNames', 'neverNames'] as const) {
    const v = cfg.secrets[k];
    if (!Array.isArray(v) || v.some((n) => typeof n !== 'string' || n.trim() === '')) throw new ConfigError(`secrets.${k}: must be a list of parameter names`);
  }
}

export function validateAuth(cfg: VnfmConfig): void {
  const modes = authModes(cfg);
  if (!Array.isArray(modes) || modes.length === 0 || modes.some((m) => !API_AUTH_MODES.includes(m))) {
    throw new ConfigError(`apiAuth: must be one or more of ${API_AUTH_MODES.join(', ')}, got ${JSON.stringify(cfg.apiAuth)}`);
  }
  if (modes.includes('none') && modes.length > 1) throw new ConfigError('apiAuth: none cannot be combined with other modes');
  if (modes.includes('none') && !isLoopbackHost(cfg.host) && cfg.auth.allowUnauthenticated !== true) {
    throw new ConfigError(
      `apiAuth is none (no authentication) but the API listens on ${cfg.host}, which is not a loopback address: anyone who reaches it could run any operation. Enable authentication (apiAuth: token, keystone, oauth2 or mtls) or, to run unauthenticated on purpose, set auth.allowUnauthenticated: true (VNFM_AUTH_ALLOW_UNAUTHENTICATED=true)`,
    );
  }
  if (!Array.isArray(cfg.apiTokens)) throw new ConfigError('apiTokens: must be a list');
  const seen = new Set<string>();
  for (const [i, t] of cfg.apiTokens.entries()) {
    const e = typeof t === 'string' ? { token: t } : t;
    if (!e || typeof e.token !== 'string' || e.token.length < 1) throw new ConfigError(`apiTokens[${i}]: needs a non-empty token`);
    if (e.role !== undefined && !API_ROLES.includes(e.role)) throw new ConfigError(`apiTokens[${i}].role: must be one of ${API_ROLES.join(', ')}`);
    if (e.project !== undefined && (typeof e.project !== 'string' || e.project === '')) throw new ConfigError(`apiTokens[${i}].project: must be a non-empty string`);
    if (seen.has(e.token)) throw new ConfigError(`apiTokens[${i}]: the same token is listed twice`);
    seen.add(e.token);
  }
  if (modes.includes('token') && cfg.apiTokens.length === 0) throw new ConfigError('apiAuth token needs at least one apiTokens entry');
  const a = cfg.auth;
  if (!Array.isArray(a.trustedLocalUids)) throw new ConfigError('auth.trustedLocalUids: must be a list of uids');
  a.trustedLocalUids = a.trustedLocalUids.map((u) => {
    const n = typeof u === 'string' && /^\d+$/.test(u) ? Number(u) : u;
    if (typeof n !== 'number' || !Number.isInteger(n) || n < 0) throw new ConfigError(`auth.trustedLocalUids: ${JSON.stringify(u)} is not a uid (a non-negative integer)`);
    return n;
  });
  for (const k of ['metrics', 'docs'] as const) if (!['open', 'loopback', 'authenticated'].includes(a[k])) throw new ConfigError(`auth.${k}: must be open, loopback or authenticated`);
  if (!Number.isInteger(a.maxCredentialBytes) || a.maxCredentialBytes < 256) throw new ConfigError('auth.maxCredentialBytes: must be an integer >= 256');
  if (!Number.isInteger(a.failureCacheMs) || a.failureCacheMs < 0) throw new ConfigError('auth.failureCacheMs: must be an integer >= 0');
  if (!Number.isInteger(a.failureCacheMaxEntries) || a.failureCacheMaxEntries < 1) throw new ConfigError('auth.failureCacheMaxEntries: must be an integer >= 1');
  const fl = a.failureLimit;
  if (!Number.isInteger(fl.burst) || fl.burst < 0) throw new ConfigError('auth.failureLimit.burst: must be an integer >= 0 (0: no limit)');
  if (!(typeof fl.perMinute === 'number' && fl.perMinute > 0 && Number.isFinite(fl.perMinute))) throw new ConfigError('auth.failureLimit.perMinute: must be a number > 0');
  if (!Number.isInteger(fl.maxClients) || fl.maxClients < 1) throw new ConfigError('auth.failureLimit.maxClients: must be an integer >= 1');
  for (const k of ['packages', 'vims'] as const) if (!['project', 'shared'].includes(a.tenancy[k])) throw new ConfigError(`auth.tenancy.${k}: must be project or shared`);
  const k = a.keystone;
  if (modes.includes('keystone')) {
    for (const f of ['authUrl', 'username', 'password', 'projectName'] as const) if (!k[f]) throw new ConfigError(`auth.keystone.${f} is required with apiAuth keystone`);
    if (!/^https?:\/\//.test(k.authUrl ?? '')) throw new ConfigError('auth.keystone.authUrl: must be an http(s) URL of Keystone v3');
  }
  for (const [name, role] of Object.entries(k.roleMap)) if (!API_ROLES.includes(role)) throw new ConfigError(`auth.keystone.roleMap.${name}: must be one of ${API_ROLES.join(', ')}`);
  for (const f of ['cacheTtlMs', 'cacheMaxEntries', 'timeoutMs'] as const) if (!Number.isInteger(k[f]) || k[f] < 1) throw new ConfigError(`auth.keystone.${f}: must be an integer >= 1`);
  const o = a.oauth2;
  if (!Number.isInteger(o.tokenTtlSeconds) || o.tokenTtlSeconds < 1) throw new ConfigError('auth.oauth2.tokenTtlSeconds: must be an integer >= 1');
  if (!Number.isInteger(o.revocationCheckMs) || o.revocationCheckMs < 0) throw new ConfigError('auth.oauth2.revocationCheckMs: must be an integer >= 0');
  for (const [name, role] of Object.entries(o.scopeMap)) if (!API_ROLES.includes(role)) throw new ConfigError(`auth.oauth2.scopeMap.${name}: must be one of ${API_ROLES.join(', ')}`);
  if (o.introspection.endpoint && !/^https?:\/\//.test(o.introspection.endpoint)) throw new ConfigError('auth.oauth2.introspection.endpoint: must be an http(s) URL');
  if (o.introspection.endpoint && (!o.introspection.clientId || !o.introspection.clientSecret)) throw new ConfigError('auth.oauth2.introspection: clientId and clientSecret are required with an endpoint');
  const m = a.mtls;
  if (modes.includes('mtls')) {
    for (const f of ['certFile', 'keyFile', 'caFile'] as const) if (!m[f]) throw new ConfigError(`auth.mtls.${f} is required with apiAuth mtls`);
  }
  for (const [i, c] of m.clients.entries()) {
    if (!c.subjectCn && !c.fingerprint256) throw new ConfigError(`auth.mtls.clients[${i}]: needs subjectCn or fingerprint256`);
    if (!c.name || !API_ROLES.includes(c.role)) throw new ConfigError(`auth.mtls.clients[${i}]: needs a name and a role (${API_ROLES.join(', ')})`);
  }
}

/**
 * Checks every setting of a layered configuration, section by section (the lab last: see
 * {@link validateLab}); `mgmt.scriptUser` `self` or empty becomes null.
 */
export function validateSettings(cfg: VnfmConfig): void {
  if (!Number.isInteger(cfg.port) || cfg.port < 0 || cfg.port > 65535) throw new ConfigError(`port: must be 0-65535, got ${cfg.port}`);
  if (!Number.isInteger(cfg.pageSize) || cfg.pageSize < 0) throw new ConfigError(`pageSize: must be >= 0`);
  for (const k of ['sharedBuffers', 'workMem'] as const) {
    const v = cfg.embeddedDatabase[k];
    if (typeof v !== 'string' || !/^[1-9][0-9]{0,6}(kB|MB|GB)$/.test(v)) throw new ConfigError(`embeddedDatabase.${k}: must be a PostgreSQL memory size such as '32MB' (kB, MB or GB), got ${String(v)}`);
  }
  if (!Number.isInteger(cfg.api.maxInFlightRequests) || cfg.api.maxInFlightRequests < 0) throw new ConfigError(`api.maxInFlightRequests: must be an integer >= 0 (0 = no cap), got ${cfg.api.maxInFlightRequests}`);
  if (!Number.isInteger(cfg.api.busyRetryAfterSeconds) || cfg.api.busyRetryAfterSeconds < 1) throw new ConfigError(`api.busyRetryAfterSeconds: must be an integer >= 1, got ${cfg.api.busyRetryAfterSeconds}`);
  validateAuth(cfg);
  validateSecrets(cfg);
  validateNotificationTls(cfg);
  if (typeof cfg.health.public !== 'boolean') throw new ConfigError('health.public: must be true or false');
  {
    const v = cfg.vim;
    if (!(v.stackPollInitialMs >= 1 && v.stackPollMs >= v.stackPollInitialMs && v.stackPollMaxMs >= v.stackPollMs && v.stackPollBackoffAfterMs >= 0)) {
      throw new ConfigError('vim: need 1 <= stackPollInitialMs <= stackPollMs <= stackPollMaxMs and stackPollBackoffAfterMs >= 0');
    }
  }
  if (typeof cfg.vim.kubernetesCreateNamespace !== 'boolean') throw new ConfigError('vim.kubernetesCreateNamespace: must be true or false');
  for (const k of ['scriptTimeoutMs', 'scriptOutputMaxBytes', 'scriptKillGraceMs'] as const) {
    const v = cfg.mgmt[k];
    if (!Number.isInteger(v) || v < 1) throw new ConfigError(`mgmt.${k}: must be a positive integer, got ${JSON.stringify(v)}`);
  }
  if (cfg.mgmt.scriptUser === 'self' || cfg.mgmt.scriptUser === '') cfg.mgmt.scriptUser = null;
  if (cfg.mgmt.scriptUser !== null && (typeof cfg.mgmt.scriptUser !== 'string' || !/^[a-z_][a-z0-9_-]{0,31}$/.test(cfg.mgmt.scriptUser))) throw new ConfigError('mgmt.scriptUser: must be a local user name, or null/self');
  for (const k of ['allow', 'deny', 'vimAllow'] as const) {
    if (!Array.isArray(cfg.outbound[k]) || cfg.outbound[k].some((e) => typeof e !== 'string')) throw new ConfigError(`outbound.${k}: must be a list of CIDRs, addresses or host names`);
  }
  for (const k of ['allow', 'deny', 'vimAllow'] as const) {
    for (const e of cfg.outbound[k]) {
      const [net, bits, extra] = e.trim().split('/');
      const v = isIP((net ?? '').replace(/^\[|\]$/g, ''));
      const okCidr = v !== 0 && extra === undefined && (bits === undefined || (/^\d+$/.test(bits) && Number(bits) <= (v === 4 ? 32 : 128)));
      const okName = bits === undefined && /^(\*\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*\.?$/i.test(net ?? '');
      if (!okCidr && !okName) throw new ConfigError(`outbound.${k}: '${e}' is not a CIDR, an address or a host name`);
    }
  }
  if (cfg.secretKeyFile !== undefined && (typeof cfg.secretKeyFile !== 'string' || cfg.secretKeyFile === '')) throw new ConfigError('secretKeyFile: must be a file path');
  if (cfg.mgmt.kubeadm !== null && (typeof cfg.mgmt.kubeadm !== 'object' || Array.isArray(cfg.mgmt.kubeadm))) throw new ConfigError('mgmt.kubeadm: must be a map of the k8s-kubeadm driver settings');
  if (cfg.mgmt.kubespray != null && (typeof cfg.mgmt.kubespray !== 'object' || Array.isArray(cfg.mgmt.kubespray))) throw new ConfigError('mgmt.kubespray: must be a map of the k8s-kubespray driver settings');
  if (!Number.isInteger(cfg.health.readyTimeoutMs) || cfg.health.readyTimeoutMs < 1) throw new ConfigError('health.readyTimeoutMs must be an integer >= 1');
  const h = cfg.health;
  if (!Number.isInteger(h.livenessPort) || h.livenessPort < 0 || h.livenessPort > 65535) throw new ConfigError(`health.livenessPort: must be 0 (off) or a port 1-65535, got ${h.livenessPort}`);
  if (h.livenessHost !== undefined && (typeof h.livenessHost !== 'string' || h.livenessHost === '')) throw new ConfigError('health.livenessHost: must be a non-empty host name or address');
  if (h.livenessPort !== 0 && h.livenessPort === cfg.port && (h.livenessHost ?? cfg.host) === cfg.host) throw new ConfigError(`health.livenessPort: must differ from the API port (${cfg.port}) on the same host`);
  if (!Number.isInteger(h.maxStallMs) || h.maxStallMs < 200) throw new ConfigError(`health.maxStallMs: must be an integer >= 200 (the main thread ticks every 100 ms), got ${h.maxStallMs}`);
  if (!['local', 'external'].includes(cfg.grants.mode)) throw new ConfigError('grants.mode: must be local or external');
  if (cfg.grants.mode === 'external' && !cfg.grants.endpoint) throw new ConfigError('grants.endpoint is required when grants.mode is external');
  if (!['none', 'bearer', 'basic'].includes(cfg.faultNotification.auth)) throw new ConfigError('faultNotification.auth: none, bearer or basic');
  if (cfg.faultNotification.auth !== 'none' && !cfg.faultNotification.credential) throw new ConfigError('faultNotification.credential is required with auth');
  if (!cfg.faultNotification.prefix.startsWith('/')) throw new ConfigError('faultNotification.prefix must start with /');
  if (cfg.faultNotification.windowMs < 0) throw new ConfigError('faultNotification.windowMs must be >= 0');
  if (cfg.databaseUrl && !/^postgres(ql)?:\/\//.test(cfg.databaseUrl)) throw new ConfigError('databaseUrl must be a postgres:// URL');
  if (cfg.databaseUrl && !cfg.secretKey && !cfg.secretKeyFile) throw new ConfigError('secretKey (VNFM_SECRET_KEY, 64 hex chars) or secretKeyFile (VNFM_SECRET_KEY_FILE) is required with databaseUrl, so that every VNFM process (and the next start) can open the sealed credentials');
  validateSync(cfg.sync);
  validateAutoheal(cfg.autoheal);
  const vh = cfg.vnfcHealth;
  if (typeof vh.enabled !== 'boolean') throw new ConfigError(`vnfcHealth.enabled: must be true or false, got ${JSON.stringify(vh.enabled)}`);
  if (!Number.isInteger(vh.periodMs) || vh.periodMs < 100) throw new ConfigError(`vnfcHealth.periodMs: must be an integer >= 100 (ms), got ${vh.periodMs}`);
  for (const k of ['vm', 'pod'] as const) {
    const v = vh.unhealthyForMs?.[k];
    if (!Number.isInteger(v) || (v as number) < 0) throw new ConfigError(`vnfcHealth.unhealthyForMs.${k}: must be an integer >= 0 (ms), got ${JSON.stringify(v)}`);
  }
  for (const k of ['retryForMs', 'backoffMs', 'maxBackoffMs', 'timeoutMs', 'retentionMs'] as const) if (!(Number.isFinite(cfg.notifications[k]) && cfg.notifications[k] >= 0)) throw new ConfigError(`notifications.${k} must be a number >= 0`);
  if (cfg.notifications.maxBackoffMs < cfg.notifications.backoffMs) throw new ConfigError('notifications.maxBackoffMs must be >= notifications.backoffMs');
  const r = cfg.runner;
  if (!Number.isInteger(r.leaseMs) || r.leaseMs < 100) throw new ConfigError('runner.leaseMs must be an integer >= 100');
  if (!Number.isInteger(r.leaseGraceMs) || r.leaseGraceMs < 0) throw new ConfigError('runner.leaseGraceMs must be an integer >= 0');
  if (!Number.isInteger(r.pollMs) || r.pollMs < 1) throw new ConfigError('runner.pollMs must be an integer >= 1');
  if (!Number.isInteger(r.concurrency) || r.concurrency < 1) throw new ConfigError('runner.concurrency must be an integer >= 1');
  if (!Number.isInteger(r.stepRetries.maxAttempts) || r.stepRetries.maxAttempts < 1) throw new ConfigError('runner.stepRetries.maxAttempts must be an integer >= 1');
  if (!Number.isFinite(r.stepRetries.baseDelayMs) || r.stepRetries.baseDelayMs < 0) throw new ConfigError('runner.stepRetries.baseDelayMs must be >= 0');
  if (!Number.isFinite(r.stepRetries.maxDelayMs) || r.stepRetries.maxDelayMs < r.stepRetries.baseDelayMs) throw new ConfigError('runner.stepRetries.maxDelayMs must be >= runner.stepRetries.baseDelayMs');
  if (!Number.isFinite(r.shutdownGraceMs) || r.shutdownGraceMs < 0) throw new ConfigError('runner.shutdownGraceMs must be >= 0');
  if (!Number.isFinite(r.shutdownMarginMs) || r.shutdownMarginMs < 1000) throw new ConfigError('runner.shutdownMarginMs must be >= 1000');
  for (const k of ['maxFileBytes', 'maxVnfdBytes', 'maxTotalBytes', 'maxEntries', 'maxOldGenerationSizeMb', 'onboardTimeoutMs', 'maxConcurrentOnboardings', 'maxConcurrentOnboardingsPerCaller', 'busyRetryAfterSeconds'] as const) {
    if (!Number.isInteger(cfg.packages[k]) || cfg.packages[k] < 1) throw new ConfigError(`packages.${k} must be an integer >= 1`);
  }
  if (cfg.packages.maxOldGenerationSizeMb < 16) throw new ConfigError('packages.maxOldGenerationSizeMb must be >= 16');
}

/** Checks a `maxUnhealthy` value (module setting or per-VNF override); returns an error text or undefined. */
export function checkMaxUnhealthy(v: unknown): string | undefined {
  if (typeof v === 'number') return Number.isInteger(v) && v >= 0 ? undefined : 'must be an integer >= 0 or a percentage like "40%"';
  if (typeof v === 'string' && /^\d{1,9}%?$/.test(v.trim())) return undefined;
  return 'must be an integer >= 0 or a percentage like "40%"';
}

/** Checks the `autoheal` section and normalises it in place (`sweepMs` at least 10, `concurrency` at least 1). */
export function validateAutoheal(a: VnfmConfig['autoheal']): void {
  const err = checkMaxUnhealthy(a.maxUnhealthy);
  if (err) throw new ConfigError(`autoheal.maxUnhealthy ${err}`);
  for (const k of ['maxHealsPerVnfc', 'frequencyPeriodMs', 'sweepMs', 'leaseMs', 'busyRetryMs', 'concurrency', 'intakePriorityRate', 'intakePriorityMaxMs'] as const) {
    const v = a[k];
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) throw new ConfigError(`autoheal.${k} must be a number >= 0`);
  }
  if (a.sweepMs < 10) a.sweepMs = 10;
  if (a.concurrency < 1) a.concurrency = 1;
}

/** Checks the `sync` section. */
export function validateSync(s: VnfmConfig['sync']): void {
  for (const k of ['intervalMs', 'initialDelayMs', 'settleDelayMs'] as const) {
    if (typeof s[k] !== 'number' || !Number.isFinite(s[k]) || s[k] < 0) throw new ConfigError(`sync.${k} must be a number >= 0, got ${s[k]}`);
  }
  if (!Number.isInteger(s.settleAttempts) || s.settleAttempts < 1) throw new ConfigError(`sync.settleAttempts must be an integer >= 1, got ${s.settleAttempts}`);
}
