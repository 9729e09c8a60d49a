/**
 * Starts the simulated OpenStack: Keystone v3 (`/v3`), Heat v1 (`/v1/{project_id}`), Nova
 * (`/v2.1`), Neutron's port listing (`/v2.0/ports`) and the `/_sim` control API on one HTTP port. It lets the VNFM's OpenStack driver,
 * its heal logic and the e2e tests run without a cloud while talking real OpenStack HTTP.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readSimState, SimStateSaver } from '../state-file.ts';
import { type ComputeSnapshot, ComputeService, type ServerLifecycleEvent, type ServerView } from './compute-service.ts';
import { HeatApi } from './heat/heat-api.ts';
import { HeatEngine, type HeatJournalEntry, type HeatSnapshot, type HeldStackOperation, type InjectableOp } from './heat/heat-engine.ts';
import { header, readJsonBody, SimHttpError, type SimRequest, type SimResponse, sendResponse, sleep, toSimRequest } from './http-kit.ts';
import { type KeystoneSnapshot, KeystoneService } from './keystone.ts';
import { handleNetworkApi } from './network-api.ts';
import { type NetworkSnapshot, NetworkService } from './network-service.ts';
import { type OpenStackSimOptions, resolveOpenStackSimOptions } from './options.ts';
import { SimAdmin, type SimRuntime, type SimService } from './sim-admin.ts';
import { type VolumeSnapshot, VolumeService } from './volume-service.ts';

/** Name of the state file (`<stateDir>/openstack.json`). */
export const OPENSTACK_STATE_NAME = 'openstack';

/** Saved state of the simulated OpenStack: one part per service, each owned by that service. */
export interface OpenStackSnapshot {
  keystone: KeystoneSnapshot;
  network: NetworkSnapshot;
  volumes: VolumeSnapshot;
  compute: ComputeSnapshot;
  heat: HeatSnapshot;
}

/** Credentials of the default user, in the shape of Tacker's `vimConnectionInfo.accessInfo`. */
export interface OpenStackSimCredentials {
  /** Keystone v3 URL (`${url}/v3`). */
  readonly authUrl: string;
  readonly username: string;
  readonly password: string;
  /** Project name. */
  readonly project: string;
  readonly projectId: string;
  readonly userDomain: string;
  readonly projectDomain: string;
  readonly region: string;
}

/** A hold on Heat stack operations, from {@link OpenStackSim.holdStackUpdates}. */
export interface StackOperationHold {
  readonly id: string;
  /** Resolves when the first held operation arrives (the API has accepted it; the stack is `*_IN_PROGRESS`). */
  readonly reached: Promise<HeldStackOperation>;
  /** Operations held so far. */
  held(): readonly HeldStackOperation[];
  /** Lets the held operations progress (each completes after the usual Heat delay) and ends the hold. */
  release(): void;
}

/** A running simulated OpenStack. */
export interface OpenStackSim {
  /** Base URL (`http://127.0.0.1:<port>`); Keystone is `${url}/v3`. */
  readonly url: string;
  /** Keystone v3 URL, `${url}/v3`. */
  readonly authUrl: string;
  readonly credentials: OpenStackSimCredentials;
  /** Secret accepted by `/_sim` (header `X-Sim-Admin-Secret`). */
  readonly adminSecret: string;
  /** Names of the simulated compute hosts. */
  readonly hosts: readonly string[];
  /** Moves the `nfv-orchestration` catalog entry (e.g. once the VNFM's port is known). */
  setVnfmUrl(url: string): void;
  /** Registers a URL receiving compute fault events (what the Server Notifier sim subscribes with). */
  addFaultWebhook(url: string, secret?: string): void;
  /** Changes how long each Heat stack operation stays in progress. */
  setHeatDelayMs(ms: number): void;
  /**
   * Holds stack updates (PATCH/PUT; or `operation` create/delete) from now on, on every stack or
   * only `stack` (name or id): Heat answers as usual and the stack stays `*_IN_PROGRESS` until
   * `release()`. Same as `POST /_sim/heat/holds`.
   */
  holdStackUpdates(opts?: { stack?: string; operation?: InjectableOp }): StackOperationHold;
  /** Heat operations received so far (create, update, delete, mark_unhealthy, signal), oldest first; also in `/_sim/state`. */
  heatJournal(): HeatJournalEntry[];
  /** The cloud's state as saved in `stateDir` (JSON-serialisable). */
  snapshot(): OpenStackSnapshot;
  /**
   * In-process observers (the live-VM lab): subscribes to server lifecycle events (created, which
   * is ACTIVE; deleted; status or networks changed by actions, faults, recoveries, updates; a port
   * created, updated or deleted). Returns the unsubscribe function. Nothing of it is on HTTP.
   */
  onServerLifecycle(listener: (ev: ServerLifecycleEvent) => void): () => void;
  /** In-process observers: every server with its ports (network, fixed IPs, allowed address pairs), as now. */
  serverViews(): ServerView[];
  /**
   * Makes sure a shared network `name` exists with one subnet of `cidr` (gateway, allocation
   * pools as given), as an operator would have made it before any stack uses it. Throws when the
   * network exists with another subnet and ports on it.
   */
  ensureNetwork(p: { name: string; cidr: string; gatewayIp?: string; allocationPools?: readonly { start: string; end: string }[] }): { networkId: string; subnetId: string; subnetName: string; cidr: string };
  /**
   * Makes sure a stand-alone server `name` (no stack) exists with a port on `networkId` holding
   * `fixedIp`, as an operator would have booted it before any VNF (an external load balancer, an
   * Ansible server): an existing server of that name with that address is kept as it is; otherwise
   * the port and an ACTIVE server are created in the sim's first project. Throws when the address
   * is held by another port.
   */
  ensureServer(p: { name: string; networkId: string; fixedIp: string; flavor?: string; image?: string; metadata?: Record<string, string> }): { serverId: string; portId: string; created: boolean };
  /** Whether the state was restored from `stateDir` at start. */
  readonly restored: boolean;
  /** Stops the server and every pending timer (and saves the state when `stateDir` is set). */
  close(): Promise<void>;
}

function serviceOf(req: SimRequest): SimService | undefined {
  const first = req.segments[0];
  if (first === 'v3') return 'identity';
  if (first === 'v1') return 'orchestration';
  if (first === 'v2.1' || first === 'v2') return 'compute';
  if (first === 'v2.0') return 'network';
  return undefined;
}

/** Starts the simulated OpenStack on `opts.host:opts.port` (ephemeral port by default). */
export async function startOpenStackSim(opts: OpenStackSimOptions = {}): Promise<OpenStackSim> {
  const o = resolveOpenStackSimOptions(opts);
  const saved = o.stateDir === undefined ? undefined : readSimState<OpenStackSnapshot>(o.stateDir, OPENSTACK_STATE_NAME);
  let saver: SimStateSaver | undefined;
  const changed = (): void => saver?.markDirty();
  const runtime: SimRuntime = {
    heatDelayMs: o.heatDelayMs,
    latencyMs: 0,
    breakRemaining: 0,
    breakStatus: 503,
    breakServices: ['identity', 'orchestration', 'compute'],
    vnfmUrl: o.vnfmUrl,
  };
  let baseUrl = '';
  const base = (): string => baseUrl;
  const keystone = new KeystoneService(o, { baseUrl: base, vnfmUrl: () => runtime.vnfmUrl });
  const network = new NetworkService();
  const volumes = new VolumeService();
  const compute = new ComputeService(o.hosts, network, volumes, base);
  const engine = new HeatEngine({
    compute,
    network,
    volumes,
    logger: o.logger,
    delayMs: () => runtime.heatDelayMs,
    heatBase: (projectId) => `${base()}/v1/${projectId}`,
    onChange: changed,
  });
  const snapshot = (): OpenStackSnapshot => ({
    keystone: keystone.snapshot(),
    network: network.snapshot(),
    volumes: volumes.snapshot(),
    compute: compute.snapshot(),
    heat: engine.snapshot(),
  });
  if (saved) {
    keystone.restore(saved.keystone);
    network.restore(saved.network);
    volumes.restore(saved.volumes);
    compute.restore(saved.compute);
    engine.restore(saved.heat);
    o.logger.info({ stacks: engine.stacks.size, servers: compute.servers.size }, 'openstack sim state restored');
  }
  if (o.stateDir !== undefined) {
    saver = new SimStateSaver({
      dir: o.stateDir,
      name: OPENSTACK_STATE_NAME,
      snapshot,
      onError: (e) => o.logger.error({ err: e.message }, 'openstack sim: saving the state failed'),
    });
    // What the restore resumed at once (Heat delay 0) is saved too.
    if (saved) saver.markDirty();
  }
  for (const n of o.networks) network.ensureNetwork(n);
  const heatApi = new HeatApi(engine, base);
  const admin = new SimAdmin(runtime, compute, engine, keystone, o.adminSecret, o.logger, network);
  if (o.faultWebhook) admin.addWebhook(o.faultWebhook, o.faultWebhookSecret);

  const route = async (req: SimRequest): Promise<SimResponse> => {
    const ctl = admin.handle(req);
    if (ctl) return ctl;
    if (req.segments.length === 0 && req.method === 'GET') {
      return { status: 300, body: { versions: { values: [keystone.versionDoc()] } } };
    }
    const service = serviceOf(req);
    if (runtime.latencyMs > 0) await sleep(runtime.latencyMs);
    if (runtime.breakRemaining > 0 && service !== undefined && runtime.breakServices.includes(service)) {
      runtime.breakRemaining -= 1;
      const status = runtime.breakStatus;
      return {
        status,
        ...(runtime.breakRetryAfter === undefined ? {} : { headers: { 'Retry-After': String(runtime.breakRetryAfter) } }),
        body: { error: { code: status, title: status === 503 ? 'Service Unavailable' : 'Error', message: 'The server is currently unavailable. Please try again at a later time.' } },
      };
    }
    const ks = keystone.handle(req);
    if (ks) return ks;
    if (service === undefined) {
      throw new SimHttpError(404, { error: { code: 404, title: 'Not Found', message: 'The resource could not be found.' } });
    }
    const token = keystone.validate(header(req, 'x-auth-token'));
    if (!token) {
      throw new SimHttpError(401, {
        error: { code: 401, title: 'Unauthorized', message: 'The request you have made requires authentication.' },
      });
    }
    const out = heatApi.handle(req, token) ?? compute.handle(req, token) ?? handleNetworkApi(network, req, token);
    if (out) return out;
    throw new SimHttpError(404, { error: { code: 404, title: 'Not Found', message: 'The resource could not be found.' } });
  };

  const onRequest = (raw: IncomingMessage, res: ServerResponse): void => {
    void (async () => {
      try {
        // Devstack-style `/identity` prefix is accepted as an alias of the root.
        if (raw.url?.startsWith('/identity/') || raw.url === '/identity') raw.url = raw.url.slice('/identity'.length) || '/';
        const body = await readJsonBody(raw);
        const req = toSimRequest(raw, body);
        const out = await route(req);
        if (req.method !== 'GET' && req.method !== 'HEAD') changed();
        sendResponse(res, out);
      } catch (e) {
        if (raw.method !== 'GET' && raw.method !== 'HEAD') changed();
        if (e instanceof SimHttpError) {
          sendResponse(res, { status: e.status, body: e.body });
          return;
        }
        o.logger.error({ err: (e as Error).message, url: raw.url }, 'openstack sim: unexpected error');
        sendResponse(res, { status: 500, body: { error: { code: 500, title: 'Internal Server Error', message: (e as Error).message } } });
      }
    })();
  };

  const server = createServer(onRequest);
  server.keepAliveTimeout = 1000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port, o.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const addr = server.address() as AddressInfo;
  const host = o.host === '0.0.0.0' || o.host === '::' ? '127.0.0.1' : o.host.includes(':') ? `[${o.host}]` : o.host;
  baseUrl = o.publicUrl ?? `http://${host}:${addr.port}`;
  const first = o.users[0] as (typeof o.users)[number];
  const project = first.projects[0] ?? 'admin';
  const credentials: OpenStackSimCredentials = {
    authUrl: `${baseUrl}/v3`,
    username: first.name,
    password: first.password,
    project,
    projectId: keystone.projectIdByName(project, first.domain) ?? '',
    userDomain: first.domain,
    projectDomain: first.domain,
    region: o.region,
  };
  o.logger.info({ url: baseUrl, hosts: o.hosts }, 'openstack sim listening');
  let closed = false;
  return {
    url: baseUrl,
    authUrl: `${baseUrl}/v3`,
    credentials,
    adminSecret: o.adminSecret,
    hosts: compute.hosts.map((h) => h.name),
    setVnfmUrl: (url) => {
      runtime.vnfmUrl = url;
    },
    addFaultWebhook: (url, secret) => {
      admin.addWebhook(url, secret);
    },
    setHeatDelayMs: (ms) => {
      runtime.heatDelayMs = Math.max(0, ms);
    },
    holdStackUpdates: (opts = {}) => {
      const h = engine.hold(opts.operation ?? 'update', opts.stack);
      return { id: h.id, reached: h.reached, held: () => h.held, release: () => void engine.releaseHold(h.id) };
    },
    heatJournal: () => engine.journal(),
    snapshot,
    onServerLifecycle: (listener) => compute.onLifecycle(listener),
    serverViews: () => [...compute.servers.values()].map((x) => compute.view(x)),
    ensureNetwork: (p) => {
      const { network: net, subnet } = network.ensureNetwork(p);
      changed();
      return { networkId: net.id, subnetId: subnet.id, subnetName: subnet.name, cidr: subnet.cidr };
    },
    ensureServer: (p) => {
      const existing = [...compute.servers.values()].find(
        (x) => x.name === p.name && x.portIds.some((id) => network.ports.get(id)?.networkId === p.networkId && network.ports.get(id)?.fixedIps.some((f) => f.ip_address === p.fixedIp)),
      );
      if (existing) return { serverId: existing.id, portId: existing.portIds.find((id) => network.ports.get(id)?.networkId === p.networkId) as string, created: false };
      const port = network.createPort({ networkId: p.networkId, projectId: credentials.projectId, name: `${p.name}-port`, fixedIps: [{ ip_address: p.fixedIp }], deviceOwner: 'compute:nova' });
      const s = compute.createServer({
        name: p.name,
        projectId: credentials.projectId,
        userId: '',
        flavor: p.flavor ?? 'm1.small',
        image: p.image ?? 'debian-12',
        metadata: p.metadata ?? {},
        portIds: [port.id],
        ownedPortIds: [],
        volumeIds: [],
      });
      changed();
      return { serverId: s.id, portId: port.id, created: true };
    },
    restored: saved !== undefined,
    close: async () => {
      if (closed) return;
      closed = true;
      engine.close();
      await admin.drain();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      saver?.close();
    },
  };
}
