/**
 * The one options module of the VNFM. Every setting has a default here; a config file (JSON or
 * YAML) overrides defaults, environment variables (`VNFM_*`) override the file, and command-line
 * flags override everything. Nothing else in the code reads `process.env`, so what the process runs
 * with is always what {@link resolveConfig} printed.
 */
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { isIP } from 'node:net';

/** API authentication modes. */
export type ApiAuthMode = 'none' | 'token' | 'keystone' | 'oauth2' | 'mtls';
export const API_AUTH_MODES: readonly ApiAuthMode[] = ['none', 'token', 'keystone', 'oauth2', 'mtls'];
/** API roles, weakest first. */
export type ApiRole = 'reader' | 'operator' | 'admin';
export const API_ROLES: readonly ApiRole[] = ['reader', 'operator', 'admin'];

/** One static API token with who it stands for. */
export interface ApiTokenEntry {
  token: string;
  /** @default 'token-<n>' */
  name?: string;
  /** Project (tenant) of the token; none: the resources created without a project. */
  project?: string;
  /** @default 'admin' (a bare token string is an admin, as before roles existed) */
  role?: ApiRole;
}

/** Who may read `/metrics` or `/docs`: anybody, clients on a loopback address only (others must authenticate), or authenticated callers only. */
export type OpenEndpointRule = 'open' | 'loopback' | 'authenticated';

/** A client certificate mapped to a principal (mode 'mtls'). */
export interface MtlsClientEntry {
  /** Subject common name (CN) of the certificate. */
  subjectCn?: string;
  /** SHA-256 fingerprint of the certificate (hex, colons allowed). */
  fingerprint256?: string;
  name: string;
  project?: string;
  role: ApiRole;
}

/** A CA bundle for callback URIs and token endpoints under a URL prefix (`notifications.tls`). */
export interface NotificationTlsEntry {
  /** An https URL prefix, e.g. `https://nfvo.example:8443/` or `https://nfvo.example/callbacks/`. */
  prefix: string;
  /** PEM CA bundle those endpoints' certificates must chain to. */
  caFile: string;
}

/** Settings of the API authentication modes, roles and policy. */
export interface AuthConfig {
  /** Run without authentication ('none') on a non-loopback address anyway. @default false */
  allowUnauthenticated: boolean;
  /**
   * With `apiAuth` none, callers on this host are trusted only when their socket belongs to the
   * VNFM's own OS user, root, or one of these uids (Linux; others are refused with 403). @default []
   */
  trustedLocalUids: number[];
  /** A JSON or YAML file of `"METHOD /route": role|"open"` overriding the policy table. @default undefined */
  policyFile: string | undefined;
  /** `/metrics`. @default 'loopback' */
  metrics: OpenEndpointRule;
  /** `/docs` (OpenAPI UI and JSON). @default 'loopback' */
  docs: OpenEndpointRule;
  /** Longest accepted credential header (X-Auth-Token, Authorization); longer is a 400. @default 8192 */
  maxCredentialBytes: number;
  /**
   * How long a token Keystone or the introspection endpoint refused (or the built-in OAuth 2.0
   * server does not know) stays refused without asking again; 0: not remembered. @default 5000
   */
  failureCacheMs: number;
  /** Refused tokens remembered at most (a cache of their own: they never push valid tokens out). @default 10000 */
  failureCacheMaxEntries: number;
  /**
   * Failed authentications per client address (IPv4 address or IPv6 /64): a token bucket of
   * `burst`, refilled at `perMinute`; an empty bucket answers 429 with Retry-After to credentials
   * that would need a round trip. `burst` 0: no limit. @default { burst: 30, perMinute: 60, maxClients: 10000 }
   */
  failureLimit: { burst: number; perMinute: number; maxClients: number };
  /**
   * Who owns VNF packages and VIMs: 'project' (the project that created one; another project
   * gets 404; Tacker's way) or 'shared' (every project sees and uses them, admins change them).
   * @default { packages: 'project', vims: 'project' }
   */
  tenancy: { packages: 'project' | 'shared'; vims: 'project' | 'shared' };
  keystone: {
    /** Keystone v3 URL, e.g. http://keystone:5000/v3. */
    authUrl: string | undefined;
    /** The VNFM's service user (validates the callers' tokens). */
    username: string | undefined;
    password: string | undefined;
    projectName: string | undefined;
    /** @default 'Default' */
    userDomainName: string;
    /** @default 'Default' */
    projectDomainName: string;
    /** A validated token is cached until it expires, at most this long. @default 300000 */
    cacheTtlMs: number;
    /** Most cached tokens (oldest dropped first). @default 10000 */
    cacheMaxEntries: number;
    /** Timeout of a request to Keystone. @default 10000 */
    timeoutMs: number;
    /** Keystone role name -> VNFM role (the strongest mapped role wins). @default admin->admin, member->operator, reader->reader */
    roleMap: Record<string, ApiRole>;
  };
  oauth2: {
    /** Lifetime of a token of the built-in endpoint. @default 3600 */
    tokenTtlSeconds: number;
    /**
     * How often a process checks (one indexed read) whether a client was deleted by any process
     * before it trusts a token it cached; a deleted client's tokens stop working everywhere
     * within this time. 0: check on every request. @default 1000
     */
    revocationCheckMs: number;
    /** OAuth scope -> VNFM role; the role names themselves are scopes too. @default {} */
    scopeMap: Record<string, ApiRole>;
    /** External authorization server (RFC 7662); when set, tokens unknown to the built-in endpoint are introspected there. */
    introspection: {
      endpoint: string | undefined;
      clientId: string | undefined;
      clientSecret: string | undefined;
      /** Active answers are cached until the token expires, at most this long. @default 60000 */
      cacheTtlMs: number;
      /** Claim holding the project. @default 'project' */
      projectClaim: string;
    };
  };
  mtls: {
    /** PEM files of the HTTPS listener (with 'mtls' the API listens on HTTPS). */
    certFile: string | undefined;
    keyFile: string | undefined;
    /** PEM CA bundle client certificates must chain to. */
    caFile: string | undefined;
    /** Certificates -> principals; a verified certificate not listed here is refused. */
    clients: MtlsClientEntry[];
  };
}

/** Options of the VNFM process. */
export interface VnfmConfig {
  /** Listen address. @default '127.0.0.1' */
  host: string;
  /** Listen port. @default 9890 (Tacker's port, so `openstack vnflcm` finds us) */
  port: number;
  /** Base URL clients reach us at, used in `Location`, `_links` and callback URLs. @default `http://{host}:{port}` */
  publicUrl: string;
  /** Directory of the embedded database and the generated secret key. @default './data' */
  dataDir: string;
  /** PostgreSQL URL; when set, PostgreSQL is used instead of the embedded PGlite. @default undefined */
  databaseUrl: string | undefined;
  /** pino level. @default 'info' */
  logLevel: string;
  /** 32-byte key (hex or base64) for secrets at rest; generated into dataDir when absent. A comma-separated list: the first seals, all open (key rotation, docs/security.md). */
  secretKey: string | undefined;
  /**
   * File holding the key (one key per line, hex or base64; the first seals, the others only open).
   * Lets the key live outside the data directory. Created (0600) with a new key when absent.
   * @default `<dataDir>/secret.key` (embedded database only)
   */
  secretKeyFile: string | undefined;
  /**
   * Which parameter names hold secrets (sealed at rest, `****` in responses), beyond the built-in
   * rule of src/model/sealed-params.ts (docs/security.md, Secrets and files). Exact names, any case.
   */
  secrets: {
    /** Names always treated as secrets (e.g. `vendor_blob`). @default [] */
    extraNames: string[];
    /** Names never treated as secrets, even when the rule would (e.g. `session_token_ttl`). @default [] */
    neverNames: string[];
  };
  /** Outbound request rules (docs/security.md, "Outbound requests"). */
  outbound: {
    /** CIDRs, addresses or host names always allowed (e.g. `127.0.0.0/8` in a lab). @default [] */
    allow: string[];
    /** CIDRs, addresses or host names refused in addition to loopback, link-local and metadata addresses. @default [] */
    deny: string[];
    /**
     * CIDRs, addresses or host names VIM endpoints (Keystone and its catalog's URLs, Kubernetes API
     * servers) may use inside a denied range (e.g. `127.0.0.1` for a Keystone on the VNFM's host);
     * `outbound.allow` does not apply to VIMs. Never opens the VNFM's own API address. @default []
     */
    vimAllow: string[];
  };
  /** Page size of list endpoints (0 = no paging). @default 100 */
  pageSize: number;
  /** Max JSON body size in bytes. @default 1_000_000 */
  maxBodyBytes: number;
  /** Max VNF package upload size in bytes. @default 512 MiB */
  maxPackageBytes: number;
  /** Memory settings of the embedded database (PGlite; not used with `databaseUrl`). */
  embeddedDatabase: {
    /** PostgreSQL `shared_buffers` inside the embedded database's WebAssembly memory. @default '32MB' */
    sharedBuffers: string;
    /** PostgreSQL `work_mem` (per sort or hash). @default '4MB' */
    workMem: string;
  };
  /** Per-process limits of the API server (src/api/concurrency-cap.ts). */
  api: {
    /**
     * API requests served at once by this process; one more is answered at once with 503
     * ProblemDetails and `Retry-After` instead of queueing. `/healthz`, `/readyz` and `/metrics`
     * are exempt. 0: no cap. @default 256
     */
    maxInFlightRequests: number;
    /** `Retry-After` (seconds) of that 503. @default 1 */
    busyRetryAfterSeconds: number;
  };
  /**
   * API authentication modes (docs/security.md), one or several: 'token' (static `apiTokens`),
   * 'keystone' (X-Auth-Token validated by Keystone), 'oauth2' (SOL013 client credentials: the
   * built-in `POST /token` or an external server's introspection), 'mtls' (client certificates).
   * 'none' (no authentication) only on a loopback address unless `auth.allowUnauthenticated`.
   * A single string is a list of one. @default 'none'
   */
  apiAuth: ApiAuthMode | ApiAuthMode[];
  /** Static API tokens (mode 'token'): a bare string (an admin without project) or an entry with its name, project and role. */
  apiTokens: (string | ApiTokenEntry)[];
  /** Authentication and authorization details of the modes (docs/security.md). */
  auth: AuthConfig;
  /** Liveness (`/healthz`) and readiness (`/readyz`) probes. */
  health: {
    /** Probes answer without a token even when `apiAuth` is 'token'. @default true */
    public: boolean;
    /** How long readiness waits for the database's `select 1` before reporting it down. @default 1000 */
    readyTimeoutMs: number;
    /**
     * Port of the liveness server: `/healthz` answered by a worker thread with its own event loop,
     * so the probe does not wait for the main loop's backlog (recommended: 9889). 0: off (only
     * the API port's `/healthz`). @default 0
     */
    livenessPort: number;
    /** Address the liveness server listens on. @default the API's `host` */
    livenessHost: string | undefined;
    /** The liveness port answers 503 when the main thread has not turned for longer than this (ms). @default 10000 */
    maxStallMs: number;
  };
  /** Start the simulated cloud (OpenStack, Kubernetes, Server Notifier) and register it as default VIMs. @default true */
  sim: boolean;
  /**
   * Start the simulated cloud empty: its saved state (`dataDir/sim/`) is deleted first. Otherwise
   * the simulated cloud is restored from there, as it was when the VNFM last stopped. @default false
   */
  simReset: boolean;
  /** Ports of the simulated cloud (0 = any free port). */
  simPorts: {
    /** @default 9891 */
    openstack: number;
    /** @default 9892 */
    kubernetes: number;
    /** @default 9893 */
    serverNotifier: number;
  };
  /**
   * The live-VM lab (docs/lab.md): the simulated OpenStack's servers on the lab network become real
   * hosts (network namespaces with sshd) that management drivers reach over SSH. Needs root,
   * `ip netns` and openssh-server; needs the simulated cloud (`sim`).
   */
  lab: {
    /** Start the lab with the simulated cloud (`vnfm start --lab`). @default false */
    enabled: boolean;
    /** The lab subnet; the bridge `hvlab0` gets its `.1`, the lab network's pool is `.10`-`.250`. /16 to /24. @default '10.87.0.0/24' */
    cidr: string;
    /** Name of the lab network in the simulated Neutron (ports on it make servers hosts). @default 'lab-net' */
    network: string;
    /** The external network floating IPs are allocated from (made at start when absent); a floating IP bound to a lab port reaches that port's host (NAT, needs nftables). @default 'public' */
    floatingNetwork: string;
    /** The floating network's subnet, outside the lab subnet. @default '172.24.4.0/24' */
    floatingCidr: string;
    /** The one login user of every host (created with `useradd -m` when absent). @default 'hvlab' */
    user: string;
    /** Its password. @default generated once, kept in `<dataDir>/lab/credentials.json` (mode 0600) */
    password: string | undefined;
    /** Port of the lab's own Kubernetes API on the bridge address (0 = a free port). @default 26443 */
    kubernetesPort: number;
    /** When the pods of a Node whose host died are evicted (the real default toleration is 300 s). @default 300000 */
    podEvictionTimeoutMs: number;
    /** How long the start waits for another lab on this machine to stop (0 = fail at once). @default 0 */
    waitForLockMs: number;
    /** Boot the operator's service hosts (external load balancer `hvlab-lb`, Ansible server `hvlab-ansible`) on the lab network. @default true */
    serviceHosts: boolean;
  };
  /** Op runner. */
  runner: {
    /** Worker id (unique per process). @default `${hostname}-${pid}` */
    workerId: string;
    /** Lease duration. @default 30000 */
    leaseMs: number;
    /**
     * How long after a lease ran out (database clock) another runner may take the op over: a
     * holder that is alive but late with its renewal (a loaded host, a long GC pause) keeps the op
     * if it renews within this. A lease given back (shutdown, step retry) is claimable at once.
     * @default 5000
     */
    leaseGraceMs: number;
    /** Poll interval when idle (new work also wakes the runner at once). @default 500 */
    pollMs: number;
    /** Max concurrent operations in this process. @default 8 */
    concurrency: number;
    /**
     * Automatic retries of a step that failed with a retryable error (VIM 5xx, timeouts, refused
     * connections, 429): exponential back-off with jitter, `Retry-After` honoured. The op stays
     * PROCESSING and no worker slot is held while it waits.
     */
    stepRetries: {
      /** Attempts of one step in all, the first included; 1 = no automatic retry. @default 5 */
      maxAttempts: number;
      /** Back-off cap of the first retry; doubles per retry. @default 1000 */
      baseDelayMs: number;
      /** Largest delay between two attempts (also caps a VIM's Retry-After). @default 60000 */
      maxDelayMs: number;
    };
    /**
     * On SIGTERM/close: how long running operations may go on before they are aborted at their
     * next safe point; their leases are then released so the next process resumes them at once.
     * @default 30000
     */
    shutdownGraceMs: number;
    /**
     * A stop (SIGTERM/SIGINT) always ends within `shutdownGraceMs` + this: the aborted operations
     * reaching a safe point, the HTTP server, the workers, the simulated cloud and the database
     * closing. Past it the process logs the stop steps still pending and exits with code 1.
     * @default 20000
     */
    shutdownMarginMs: number;
  };
  /** Notification delivery. */
  notifications: {
    /** Per-delivery timeout. @default 10000 */
    timeoutMs: number;
    /**
     * How long a notification is retried while its subscriber keeps failing (measured from the
     * first failed attempt of the subscriber's current failure streak), before it is marked DEAD
     * (logged at error level, counted, listable and redeliverable through the API). Not a count of
     * attempts: a subscriber down for minutes or hours loses nothing. @default 86400000 (24 h)
     */
    retryForMs: number;
    /** First back-off; doubles per attempt up to maxBackoffMs. @default 500 */
    backoffMs: number;
    /**
     * Longest pause between two attempts of one subscription (its head notification; jitter
     * +-25 %). It bounds how late a subscriber that comes back gets its first delivery (at most
     * 1.25 x this after it answers again) and what a dead subscriber costs (one request per
     * 0.75-1.25 x this per subscription, whatever the number of notifications waiting). @default 20000 (20 s)
     */
    maxBackoffMs: number;
    /** Send GET to the callback URI at subscription time and require 204. @default true */
    testCallback: boolean;
    /** Delivered and dead notifications are purged from the outbox this long after they were delivered or given up. @default 7 days */
    retentionMs: number;
    /** PEM CA bundle https callbacks and token endpoints are verified against (instead of the system CAs). @default undefined */
    caFile: string | undefined;
    /**
     * CA bundles per destination: a callback URI or token endpoint under `prefix` (same scheme,
     * host and port, path starting with the prefix's path; the longest prefix wins) is verified
     * against `caFile` instead of `caFile` above / the system CAs. For subscribers whose servers
     * use a private CA, without turning verification off. @default []
     */
    tls: NotificationTlsEntry[];
  };
  /** Grants toward an NFVO. */
  grants: {
    /** 'local' grants everything; 'external' calls an NFVO. @default 'local' */
    mode: 'local' | 'external';
    /** NFVO base URL (the grant API is `{endpoint}/grant/v1/grants`). */
    endpoint: string | undefined;
    /** OAuth2 token endpoint (client credentials). */
    tokenEndpoint: string | undefined;
    clientId: string | undefined;
    clientSecret: string | undefined;
    /** Use HTTP basic with clientId/clientSecret instead of OAuth2. @default false */
    basicAuth: boolean;
    /** PEM CA bundle the NFVO's https endpoints are verified against (instead of the system CAs). @default undefined */
    caFile: string | undefined;
    /** Max time to wait for an asynchronous (202) grant. @default 60000 */
    asyncTimeoutMs: number;
  };
  /** Fault notifications from a Server Notifier (auto-heal). */
  faultNotification: {
    /** @default true */
    enabled: boolean;
    /** @default '/server_notification' */
    prefix: string;
    /** Packing window. @default 60000 */
    windowMs: number;
    /** Receiver auth: 'none' | 'bearer' | 'basic'. @default 'none' */
    auth: 'none' | 'bearer' | 'basic';
    /** Bearer token, or 'user:password' for basic. */
    credential: string | undefined;
  };
  /** Auto-heal packing and storm guard (see docs/auto-heal.md). */
  autoheal: {
    /** Max unhealthy VNFCs of one VNF healed at once: a count or a percentage string ('40%'). @default '100%' */
    maxUnhealthy: number | string;
    /** Automatic heals of one VNFC allowed within frequencyPeriodMs. @default 10 */
    maxHealsPerVnfc: number;
    /** @default 600000 */
    frequencyPeriodMs: number;
    /** Sweep period firing due batches. @default 1000 */
    sweepMs: number;
    /** Claim lease of a batch. @default 30000 */
    leaseMs: number;
    /** Retry delay of a batch waiting for a busy VNF. @default 5000 */
    busyRetryMs: number;
    /** Batches fired in parallel by one process. @default 8 */
    concurrency: number;
    /** During a notification storm at least this fast (per s), due batches wait so intake stays fast; 0 = off. @default 200 */
    intakePriorityRate: number;
    /** Longest a due batch waits for the storm to calm down. @default 10000 */
    intakePriorityMaxMs: number;
  };
  /** Drift sync: re-observe instances and adopt what the VIM replaced by itself (see src/lcm/sync.ts). */
  sync: {
    /** Period of the background sync; 0 = off (the `/sync` endpoint still works). @default 300000 */
    intervalMs: number;
    /** Delay before the first background run. @default 60000 */
    initialDelayMs: number;
    /** VIM types the background sync visits. @default the types whose VIM plugin syncs by default (src/infra/vim-plugin.ts: Kubernetes) */
    vimTypes: string[] | undefined;
    /** Observations while a replacement is in flight. @default 4 */
    settleAttempts: number;
    /** @default 1000 */
    settleDelayMs: number;
  };
  /** VNF package onboarding limits (see docs/api.md, "Onboarding limits"). */
  packages: {
    /** Largest uncompressed size of any one CSAR entry; checked while inflating. @default 16777216 (16 MiB) */
    maxFileBytes: number;
    /** Largest uncompressed size of a file the VNFD parser reads (TOSCA-Metadata/, Definitions/, root files, imports, Kubernetes manifests). @default 4194304 (4 MiB) */
    maxVnfdBytes: number;
    /** Largest sum of the uncompressed sizes of all entries. @default 536870912 (512 MiB) */
    maxTotalBytes: number;
    /** Most entries in one CSAR. @default 10000 */
    maxEntries: number;
    /** V8 heap limit of the onboarding worker process, in MiB. @default 256 */
    maxOldGenerationSizeMb: number;
    /** Time limit of one onboarding's CSAR read + VNFD parse. @default 60000 */
    onboardTimeoutMs: number;
    /** Onboardings running at once in this process; uploads beyond get 503 with Retry-After. @default 2 */
    maxConcurrentOnboardings: number;
    /**
     * Onboardings one caller may run at once (a caller: the principal's project, else the
     * principal; the client address without authentication); a further upload of that caller
     * gets 429 with Retry-After, so one caller cannot hold every onboarding slot. @default 1
     */
    maxConcurrentOnboardingsPerCaller: number;
    /** Retry-After (seconds) of that 503. @default 5 */
    busyRetryAfterSeconds: number;
  };
  /** Timeouts of VIM operations. */
  vim: {
    /** Heat stack operation timeout. @default 1200000 */
    stackTimeoutMs: number;
    /** First interval of a Heat stack wait's polls (stack GETs); doubles per poll. @default 100 */
    stackPollInitialMs: number;
    /** Largest poll interval during the first `stackPollBackoffAfterMs` of a wait (the lag a wait adds). @default 250 */
    stackPollMs: number;
    /** After this long a wait backs off (doubling) towards `stackPollMaxMs`. @default 60000 */
    stackPollBackoffAfterMs: number;
    /** Largest poll interval of a long wait. @default 2000 */
    stackPollMaxMs: number;
    /** Kubernetes readiness timeout. @default 500000 */
    kubernetesWaitMs: number;
    /**
     * Kubernetes: create the CNF's namespace when it does not exist (labelled as created for the
     * instance), and delete it at terminate when nothing else lives in it. @default true
     */
    kubernetesCreateNamespace: boolean;
  };
  /** Management drivers: the VNFD's hook scripts and the built-in drivers. */
  mgmt: {
    /** A package hook script is killed (its whole process group) after this long. @default 1800000 */
    scriptTimeoutMs: number;
    /** Output kept per stream of a hook script (the tail beyond is dropped). @default 1048576 */
    scriptOutputMaxBytes: number;
    /** After a stop request, how long a hook script may take to exit on SIGTERM before SIGKILL. @default 5000 */
    scriptKillGraceMs: number;
    /**
     * Knobs of the built-in `k8s-kubeadm` driver (timeouts, remote paths; docs/k8s-cluster-vnfs.md),
     * checked by the driver at start-up. @default null (the driver's defaults)
     */
    kubeadm: Record<string, unknown> | null;
    /**
     * The user package hook scripts run as when the VNFM runs as root, so that they cannot read
     * the data directory, the key file or the VNFM's environment. `null` (or `self`): the VNFM's
     * own user. A VNFM not running as root runs them as its own user whatever this says.
     * @default 'nobody'
     */
    scriptUser: string | null;
    /** Knobs of the built-in `k8s-kubespray` driver (play timeouts, poll interval). @default null */
    kubespray: Record<string, unknown> | null;
  };
}

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
    sync: { intervalMs: 300_000, initialDelayMs: 60_000, vimTypes: undefined, settleAttempts: 4, settleDelayMs: 1000 },
    packages: { maxFileBytes: 16 * 1024 * 1024, maxVnfdBytes: 4 * 1024 * 1024, maxTotalBytes: 512 * 1024 * 1024, maxEntries: 10_000, maxOldGenerationSizeMb: 256, onboardTimeoutMs: 60_000, maxConcurrentOnboardings: 2, maxConcurrentOnboardingsPerCaller: 1, busyRetryAfterSeconds: 5 },
    vim: { stackTimeoutMs: 1_200_000, stackPollInitialMs: 100, stackPollMs: 250, stackPollBackoffAfterMs: 60_000, stackPollMaxMs: 2000, kubernetesWaitMs: 500_000, kubernetesCreateNamespace: true },
    mgmt: { scriptTimeoutMs: 1_800_000, scriptOutputMaxBytes: 1_048_576, scriptKillGraceMs: 5000, kubeadm: null, kubespray: null, scriptUser: 'nobody' },
  };
}

/** A partial config, as read from a file, the environment or flags. */
export type ConfigInput = DeepPartial<VnfmConfig>;
type DeepPartial<T> = { [K in keyof T]?: T[K] extends object ? (T[K] extends unknown[] ? T[K] : DeepPartial<T[K]>) : T[K] };

/** Raised when the configuration is invalid; the message names the setting. */
export class ConfigError extends Error {}

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

function merge<T>(base: T, over: unknown, path = ''): T {
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

function validateLab(cfg: VnfmConfig): void {
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

function validateNotificationTls(cfg: VnfmConfig): void {
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

function validateSecrets(cfg: VnfmConfig): void {
  for (const k of ['extraNames', 'neverNames'] as const) {
    const v = cfg.secrets[k];
    if (!Array.isArray(v) || v.some((n) => typeof n !== 'string' || n.trim() === '')) throw new ConfigError(`secrets.${k}: must be a list of parameter names`);
  }
}

function validateAuth(cfg: VnfmConfig): void {
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
 * Layers defaults < file < env < flags, fills derived defaults and validates. Throws
 * {@link ConfigError} naming the first bad setting.
 */
export function resolveConfig(layers: { file?: string | undefined; env?: Record<string, string | undefined>; flags?: ConfigInput } = {}): VnfmConfig {
  let cfg = defaultConfig();
  const filePath = layers.file ?? layers.env?.VNFM_CONFIG;
  if (filePath) cfg = merge(cfg, configFromFile(filePath));
  if (layers.env) cfg = merge(cfg, configFromEnv(layers.env));
  if (layers.flags) cfg = merge(cfg, layers.flags);
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
  for (const k of ['intervalMs', 'initialDelayMs', 'settleDelayMs'] as const) if (!(cfg.sync[k] >= 0)) throw new ConfigError(`sync.${k} must be >= 0`);
  for (const k of ['retryForMs', 'backoffMs', 'maxBackoffMs', 'timeoutMs', 'retentionMs'] as const) if (!(Number.isFinite(cfg.notifications[k]) && cfg.notifications[k] >= 0)) throw new ConfigError(`notifications.${k} must be a number >= 0`);
  if (cfg.notifications.maxBackoffMs < cfg.notifications.backoffMs) throw new ConfigError('notifications.maxBackoffMs must be >= notifications.backoffMs');
  if (!Number.isInteger(cfg.sync.settleAttempts) || cfg.sync.settleAttempts < 1) throw new ConfigError('sync.settleAttempts must be an integer >= 1');
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
  validateLab(cfg);
  if (!cfg.runner.workerId) cfg.runner.workerId = `${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
  if (!cfg.publicUrl) cfg.publicUrl = `${authModes(cfg).includes('mtls') ? 'https' : 'http'}://${cfg.host === '0.0.0.0' ? '127.0.0.1' : cfg.host}:${cfg.port}`;
  cfg.publicUrl = cfg.publicUrl.replace(/\/+$/, '');
  return cfg;
}
