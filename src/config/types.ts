/**
 * The shape of the VNFM's configuration ({@link VnfmConfig}, documented field by field) and of its
 * partial layers, and the error of a bad setting. Defaults and resolution: src/config.ts.
 */


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
  /**
   * The VNFC health model (docs/health.md): per-VIM health watchers feed one condition per VNFC;
   * a VNFC faulty for longer than `unhealthyForMs` is a sustained fault. (Not the VNFM's own
   * probes: those are `health`.)
   */
  vnfcHealth: {
    /** Watch the VIMs of instantiated VNFs and keep the model. @default true */
    enabled: boolean;
    /** Poll period of polling watchers (OpenStack), ms. @default 5000 */
    periodMs: number;
    /**
     * How long a VNFC stays `faulty` before it is a sustained fault (ms), by resource kind; a VNF
     * overrides both with `vnfConfigurableProperties.unhealthyFor` (seconds).
     * @default { vm: 30000, pod: 60000 }
     */
    unhealthyForMs: { vm: number; pod: number };
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

/** A partial config, as read from a file, the environment or flags. */
export type ConfigInput = DeepPartial<VnfmConfig>;

type DeepPartial<T> = { [K in keyof T]?: T[K] extends object ? (T[K] extends unknown[] ? T[K] : DeepPartial<T[K]>) : T[K] };

/** Raised when the configuration is invalid; the message names the setting. */
export class ConfigError extends Error {}
