/**
 * The one options module of the VNFM. Every setting has a default here; a config file (JSON or
 * YAML) overrides defaults, environment variables (`VNFM_*`) override the file, and command-line
 * flags override everything. Nothing else in the code reads `process.env`, so what the process runs
 * with is always what {@link resolveConfig} printed.
 */
import { configFromEnv, configFromFile, merge } from './config/sources.ts';
import { ConfigError, type ConfigInput, type VnfmConfig } from './config/types.ts';
import { authModes, validateLab, validateSettings } from './config/validate.ts';

export { configFromEnv, configFromFile } from './config/sources.ts';
export { API_AUTH_MODES, API_ROLES, type ApiAuthMode, type ApiRole, type ApiTokenEntry, type AuthConfig, ConfigError, type ConfigInput, type MtlsClientEntry, type NotificationTlsEntry, type OpenEndpointRule, type VnfmConfig } from './config/types.ts';
export { authModes, isLoopbackHost } from './config/validate.ts';

/** Defaults; see the TSDoc of each field. */
export function defaultConfig(): VnfmConfig {
  return {
    host: '127.0.0.1',
    port: 9890,
    publicUrl: '',
    dataDir: './data',
    databaseUrl: undefined,
    logLevel: 'info',
    secretKey: undefined,
    secretKeyFile: undefined,
    secrets: { extraNames: [], neverNames: [] },
    outbound: { allow: [], deny: [], vimAllow: [] },
    pageSize: 100,
    maxBodyBytes: 1_000_000,
    maxPackageBytes: 512 * 1024 * 1024,
    api: { maxInFlightRequests: 256, busyRetryAfterSeconds: 1 },
    embeddedDatabase: { sharedBuffers: '32MB', workMem: '4MB' },
    apiAuth: 'none',
    apiTokens: [],
    auth: {
      allowUnauthenticated: false,
      trustedLocalUids: [],
      policyFile: undefined,
      metrics: 'loopback',
      docs: 'loopback',
      maxCredentialBytes: 8192,
      failureCacheMs: 5000,
      failureCacheMaxEntries: 10_000,
      failureLimit: { burst: 30, perMinute: 60, maxClients: 10_000 },
      tenancy: { packages: 'project', vims: 'project' },
      keystone: {
        authUrl: undefined,
        username: undefined,
        password: undefined,
        projectName: undefined,
        userDomainName: 'Default',
        projectDomainName: 'Default',
        cacheTtlMs: 300_000,
        cacheMaxEntries: 10_000,
        timeoutMs: 10_000,
        roleMap: { admin: 'admin', member: 'operator', reader: 'reader' },
      },
      oauth2: { tokenTtlSeconds: 3600, revocationCheckMs: 1000, scopeMap: {}, introspection: { endpoint: undefined, clientId: undefined, clientSecret: undefined, cacheTtlMs: 60_000, projectClaim: 'project' } },
      mtls: { certFile: undefined, keyFile: undefined, caFile: undefined, clients: [] },
    },
    health: { public: true, readyTimeoutMs: 1000, livenessPort: 0, livenessHost: undefined, maxStallMs: 10_000 },
    sim: true,
    simReset: false,
    simPorts: { openstack: 9891, kubernetes: 9892, serverNotifier: 9893 },
    lab: { enabled: false, cidr: '10.87.0.0/24', network: 'lab-net', floatingNetwork: 'public', floatingCidr: '172.24.4.0/24', user: 'hvlab', password: undefined, kubernetesPort: 26443, podEvictionTimeoutMs: 300_000, waitForLockMs: 0, serviceHosts: true },
    runner: { workerId: '', leaseMs: 30_000, leaseGraceMs: 5_000, pollMs: 500, concurrency: 8, stepRetries: { maxAttempts: 5, baseDelayMs: 1000, maxDelayMs: 60_000 }, shutdownGraceMs: 30_000, shutdownMarginMs: 20_000 },
    notifications: { timeoutMs: 10_000, retryForMs: 24 * 3_600_000, backoffMs: 500, maxBackoffMs: 20_000, testCallback: true, retentionMs: 7 * 24 * 3_600_000, caFile: undefined, tls: [] },
    grants: {
      mode: 'local',
      endpoint: undefined,
      tokenEndpoint: undefined,
      clientId: undefined,
      clientSecret: undefined,
      basicAuth: false,
      caFile: undefined,
      asyncTimeoutMs: 60_000,
    },
    faultNotification: { enabled: true, prefix: '/server_notification', windowMs: 20_000, auth: 'none', credential: undefined },
    autoheal: { maxUnhealthy: '100%', maxHealsPerVnfc: 10, frequencyPeriodMs: 600_000, sweepMs: 1000, leaseMs: 30_000, busyRetryMs: 5000, concurrency: 8, intakePriorityRate: 200, intakePriorityMaxMs: 10_000 },
    vnfcHealth: { enabled: true, periodMs: 5000, unhealthyForMs: { vm: 30_000, pod: 60_000 } },
    sync: { intervalMs: 300_000, initialDelayMs: 60_000, vimTypes: undefined, settleAttempts: 4, settleDelayMs: 1000 },
    packages: { maxFileBytes: 16 * 1024 * 1024, maxVnfdBytes: 4 * 1024 * 1024, maxTotalBytes: 512 * 1024 * 1024, maxEntries: 10_000, maxOldGenerationSizeMb: 256, onboardTimeoutMs: 60_000, maxConcurrentOnboardings: 2, maxConcurrentOnboardingsPerCaller: 1, busyRetryAfterSeconds: 5 },
    vim: { stackTimeoutMs: 1_200_000, stackPollInitialMs: 100, stackPollMs: 250, stackPollBackoffAfterMs: 60_000, stackPollMaxMs: 2000, kubernetesWaitMs: 500_000, kubernetesCreateNamespace: true },
    mgmt: { scriptTimeoutMs: 1_800_000, scriptOutputMaxBytes: 1_048_576, scriptKillGraceMs: 5000, kubeadm: null, kubespray: null, scriptUser: 'nobody' },
  };
}

/**
 * Layers defaults < file < env < flags, fills derived defaults and validates. Throws
 * {@link ConfigError} naming the first bad setting.
 */
export function resolveConfig(layers: { file?: string | undefined; env?: Record<string, string | undefined>; flags?: ConfigInput } = {}): VnfmConfig {
  let cfg = defaultConfig();
  const filePath = layers.file ?? layers.env?.VNFM_CONFIG;
  if (filePath) cfg = merge(cfg, configFromFile(filePath));
  if (layers.env) cfg = merge(cfg, configFromEnv(layers.env));
  if (layers.flags) cfg = merge(cfg, layers.flags);
  validateSettings(cfg);
  validateLab(cfg);
  if (!cfg.runner.workerId) cfg.runner.workerId = `${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
  if (!cfg.publicUrl) cfg.publicUrl = `${authModes(cfg).includes('mtls') ? 'https' : 'http'}://${cfg.host === '0.0.0.0' ? '127.0.0.1' : cfg.host}:${cfg.port}`;
  cfg.publicUrl = cfg.publicUrl.replace(/\/+$/, '');
  return cfg;
}
