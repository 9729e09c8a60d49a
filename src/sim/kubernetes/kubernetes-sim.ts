/**
 * Starts a self-contained simulated Kubernetes cluster: an in-memory API server speaking the real
 * REST API (enough for kubectl and @kubernetes/client-node), worker nodes, and the controllers that
 * make workloads behave (scheduler, kubelet, ReplicaSet, Deployment, StatefulSet, DaemonSet, garbage
 * collector, namespaces, endpoints, volumes), plus `/_sim` fault injection. It exists so the VNFM's
 * Kubernetes driver, tests, demos and benchmarks can run against realistic behaviour without a cluster.
 */
import { randomBytes } from 'node:crypto';
import { createServer as createHttpServer } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { type AddressInfo, createServer as createNetServer, type Socket } from 'node:net';
import { stringify as toYaml } from 'yaml';
import { readSimState, SimStateSaver, writeSimState } from '../state-file.ts';
import type { AllocatorSnapshot } from './allocator.ts';
import { ApiServer } from './api-server.ts';
import { ClusterApi } from './cluster-api.ts';
import type { ControllerContext } from './controllers/context.ts';
import { DaemonSetController } from './controllers/daemonset-controller.ts';
import { DeploymentController } from './controllers/deployment-controller.ts';
import { DisruptionController } from './controllers/disruption-controller.ts';
import { EndpointsController } from './controllers/endpoints-controller.ts';
import { EventRecorder } from './controllers/event-recorder.ts';
import { GarbageCollector } from './controllers/garbage-collector.ts';
import { Kubelet } from './controllers/kubelet.ts';
import { NamespaceController } from './controllers/namespace-controller.ts';
import { NodeController, workerNode } from './controllers/node-controller.ts';
import { ReplicaSetController } from './controllers/replicaset-controller.ts';
import { Scheduler } from './controllers/scheduler.ts';
import { StatefulSetController } from './controllers/statefulset-controller.ts';
import { StorageController } from './controllers/storage-controller.ts';
import { ServiceAccountTokenController } from './controllers/token-controller.ts';
import { WorkQueue } from './controllers/work-queue.ts';
import { ApiFaults } from './faults.ts';
import { DeleteJournal } from './journal.ts';
import { ObjectStore, type StoreSnapshot } from './object-store.ts';
import { R, RESOURCES } from './resource-registry.ts';
import { createSimControl } from './sim-control.ts';
import { createSelfSignedCert, type SelfSignedCert } from './tls-cert.ts';

/** Name of the state file (`<stateDir>/kubernetes.json`). */
export const KUBERNETES_STATE_NAME = 'kubernetes';
/**
 * Name of the file of the serving certificate (`<stateDir>/kubernetes-tls.json`), apart from the
 * state: a cluster emptied by deleting its state keeps its identity, so kubeconfigs and VIM
 * registrations that trust its certificate stay valid.
 */
export const KUBERNETES_TLS_NAME = 'kubernetes-tls';

/** Saved state of the simulated cluster. */
export interface KubernetesSnapshot {
  /** Every object, verbatim, and the resourceVersion counter. */
  store: StoreSnapshot;
  /** Service cluster IPs, node ports and load-balancer IPs in use. */
  allocator: AllocatorSnapshot;
  /** Next pod IP per node. */
  kubelet: Record<string, number>;
}

/** The serving certificate as saved, with the host it was made for. */
type SavedCert = SelfSignedCert & { host: string };

/** Options of {@link startKubernetesSim}. */
export interface KubernetesSimOptions {
  /** Interface to listen on. @default '127.0.0.1' */
  host?: string;
  /** TCP port; 0 picks a free one. @default 0 */
  port?: number;
  /** Bearer token clients must present. @default a random 32-hex-char token */
  token?: string;
  /**
   * Number of Ready worker nodes (`worker-1..N`); 0 starts an empty cluster whose Nodes clients
   * register themselves (as kubelets do). @default 3
   */
  nodes?: number;
  /** Time a simulated kubelet takes to start or stop a pod. @default 100 */
  kubeletDelayMs?: number;
  /** Receives one line per request and per internal error. @default no logging */
  logger?: (line: string) => void;
  /**
   * Directory where the cluster's state (every object with its uid and resourceVersion, the
   * serving certificate) is saved as `kubernetes.json` shortly after each change and on close,
   * and restored from at start (controllers then resume: pending pods start, terminating ones
   * finish). @default no saving: the cluster starts fresh and lives in memory only
   */
  stateDir?: string;
}

/** First byte of a TLS ClientHello record (handshake content type). */
const TLS_HANDSHAKE = 0x16;

/** A running simulated cluster. */
export interface KubernetesSim {
  /**
   * HTTPS base URL of the API server, e.g. `https://127.0.0.1:6443` (kubectl only sends bearer
   * tokens over TLS). The certificate is self-signed; see {@link KubernetesSim.caCert}.
   */
  readonly url: string;
  /** Plain-HTTP base URL on the same port (convenient for curl / fetch, e.g. the `/_sim` API). */
  readonly httpUrl: string;
  /** PEM of the self-signed server certificate, to trust it (it is also in {@link kubeconfig}). */
  readonly caCert: string;
  /** Bearer token accepted by the API server and the `/_sim` endpoints. */
  readonly token: string;
  /**
   * A kubeconfig (YAML) pointing kubectl / client-node at this cluster with the token.
   * `namespace` sets the context's default namespace.
   */
  kubeconfig(opts?: { namespace?: string; name?: string }): string;
  /** The cluster's state as saved in `stateDir` (JSON-serialisable). */
  snapshot(): KubernetesSnapshot;
  /**
   * Marks a node NotReady (its kubelet stopped posting status), taints it unreachable and evicts
   * its pods after `evictAfterMs` (default 0), as `POST /_sim/nodes/<name>/fail` does. Returns
   * false when there is no such node.
   */
  failNode(name: string, opts?: { evictAfterMs?: number }): boolean;
  /** Brings a failed node back to Ready (`POST /_sim/nodes/<name>/recover`); false when there is no such node. */
  recoverNode(name: string): boolean;
  /** Whether the state was restored from `stateDir` at start. */
  readonly restored: boolean;
  /** Stops the server, ends watches and timers (and saves the state when `stateDir` is set). */
  close(): Promise<void>;
}

function bootstrap(api: ClusterApi, nodes: number): void {
  for (const ns of ['default', 'kube-system', 'kube-public', 'kube-node-lease']) {
    api.create(R.namespaces, '', { metadata: { name: ns } });
  }
  for (let i = 1; i <= nodes; i++) api.create(R.nodes, '', workerNode(`worker-${i}`, i));
  api.create(R.storageclasses, '', {
    metadata: { name: 'standard', annotations: { 'storageclass.kubernetes.io/is-default-class': 'true' } },
    provisioner: 'sim.k8s.io/hostpath',
    reclaimPolicy: 'Delete',
    volumeBindingMode: 'Immediate',
    allowVolumeExpansion: true,
  });
  api.create(R.services, 'default', {
    metadata: { name: 'kubernetes', namespace: 'default', labels: { component: 'apiserver', provider: 'kubernetes' } },
    spec: { clusterIP: '10.96.0.1', ports: [{ name: 'https', port: 443, protocol: 'TCP', targetPort: 6443 }] },
  });
  api.create(R.endpoints, 'default', {
    metadata: { name: 'kubernetes', namespace: 'default', labels: { 'endpointslice.kubernetes.io/skip-mirror': 'true' } },
    subsets: [{ addresses: [{ ip: '192.168.0.2' }], ports: [{ name: 'https', port: 6443, protocol: 'TCP' }] }],
  });
}

/** Starts the simulated cluster and its HTTP API. */
export async function startKubernetesSim(opts: KubernetesSimOptions = {}): Promise<KubernetesSim> {
  const host = opts.host ?? '127.0.0.1';
  const token = opts.token ?? randomBytes(16).toString('hex');
  const log = opts.logger ?? (() => {});
  const saved = opts.stateDir === undefined ? undefined : readSimState<KubernetesSnapshot>(opts.stateDir, KUBERNETES_STATE_NAME);
  const store = new ObjectStore();
  const api = new ClusterApi(store);
  const queue = new WorkQueue((key, err) => log(`controller error in ${key}: ${(err as Error)?.stack ?? String(err)}`));
  const events = new EventRecorder(api);
  const ctx: ControllerContext = { api, store, queue, events, settings: { kubeletDelayMs: Math.max(0, opts.kubeletDelayMs ?? 100) }, log };
  let savedCert: SavedCert | undefined;
  try {
    savedCert = opts.stateDir === undefined ? undefined : readSimState<SavedCert>(opts.stateDir, KUBERNETES_TLS_NAME);
  } catch (e) {
    log(`${(e as Error).message}: a new certificate is made`);
  }
  let cert: SelfSignedCert;
  if (savedCert && savedCert.host === host) cert = savedCert;
  else {
    cert = createSelfSignedCert([host]);
    if (opts.stateDir !== undefined) writeSimState(opts.stateDir, KUBERNETES_TLS_NAME, { certPem: cert.certPem, keyPem: cert.keyPem, host } satisfies SavedCert);
  }

  new GarbageCollector(ctx);
  new Scheduler(ctx);
  const kubelet = new Kubelet(ctx);
  new ReplicaSetController(ctx);
  new DeploymentController(ctx);
  new StatefulSetController(ctx);
  new DaemonSetController(ctx);
  new NamespaceController(ctx, cert.certPem);
  new EndpointsController(ctx);
  new StorageController(ctx);
  const tokens = new ServiceAccountTokenController(ctx, cert.certPem, cert.keyPem);
  const nodes = new NodeController(ctx);
  const disruption = new DisruptionController(ctx);

  if (saved) {
    api.allocator.restore(saved.allocator);
    kubelet.restore(saved.kubelet);
    const defs = new Map(RESOURCES.map((d) => [d.key, d]));
    store.restore(saved.store, (key) => defs.get(key));
    events.adoptStored();
    log(`state restored from ${opts.stateDir}: ${saved.store.objects.length} objects, resourceVersion ${saved.store.rv}`);
  } else bootstrap(api, Math.max(0, opts.nodes ?? 3));

  const faults = new ApiFaults();
  const journal = new DeleteJournal();
  let address = '';
  // The control handler needs the server's watch registry, created just below.
  let server: ApiServer | undefined;
  const simControl = createSimControl({
    ctx,
    api,
    faults,
    kubelet,
    nodes,
    endWatches: () => server?.endWatches(),
    watchCount: () => server?.watchCount() ?? 0,
    watches: () => server?.watches,
    journal,
  });
  server = new ApiServer({ api, store, faults, token, log, simControl, journal, serverAddress: () => address, admitEviction: (pod, dryRun) => disruption.admitEviction(pod, dryRun), authenticate: (t) => tokens.authenticate(t) });
  const apiServer = server;
  const snapshot = (): KubernetesSnapshot => ({
    store: store.snapshot(),
    allocator: api.allocator.snapshot(),
    kubelet: kubelet.snapshot(),
  });
  const saver =
    opts.stateDir === undefined
      ? undefined
      : new SimStateSaver({ dir: opts.stateDir, name: KUBERNETES_STATE_NAME, snapshot, onError: (e) => log(`saving the state failed: ${e.message}`) });
  store.subscribe(() => saver?.markDirty());
  // A new cluster is saved at once.
  if (!saved) saver?.markDirty();
  const httpServer = createHttpServer(apiServer.handle);
  const httpsServer = createHttpsServer({ key: cert.keyPem, cert: cert.certPem }, apiServer.handle);
  for (const srv of [httpServer, httpsServer]) srv.keepAliveTimeout = 65_000;
  const sockets = new Set<Socket>();
  // One port for both protocols: a TLS ClientHello starts with 0x16, plain HTTP with a method name.
  const front = createNetServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
    socket.once('data', (first: Buffer) => {
      socket.pause();
      socket.unshift(first);
      (first[0] === TLS_HANDSHAKE ? httpsServer : httpServer).emit('connection', socket);
      process.nextTick(() => socket.resume());
    });
  });
  await new Promise<void>((resolve, reject) => {
    front.once('error', reject);
    front.listen(opts.port ?? 0, host, () => {
      front.off('error', reject);
      resolve();
    });
  });
  const port = (front.address() as AddressInfo).port;
  const urlHost = host.includes(':') ? `[${host}]` : host === '0.0.0.0' ? '127.0.0.1' : host;
  address = `${urlHost}:${port}`;
  const url = `https://${address}`;
  const httpUrl = `http://${address}`;
  let closed = false;

  return {
    url,
    httpUrl,
    caCert: cert.certPem,
    token,
    kubeconfig(o = {}) {
      const name = o.name ?? 'sim';
      return toYaml({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name, cluster: { server: url, 'certificate-authority-data': Buffer.from(cert.certPem).toString('base64') } }],
        users: [{ name, user: { token } }],
        contexts: [{ name, context: { cluster: name, user: name, namespace: o.namespace ?? 'default' } }],
        'current-context': name,
        preferences: {},
      });
    },
    snapshot,
    failNode: (name, o = {}) => nodes.failNode(name, Math.max(0, o.evictAfterMs ?? 0)) !== undefined,
    recoverNode: (name) => nodes.recoverNode(name) !== undefined,
    restored: saved !== undefined,
    async close() {
      if (closed) return;
      closed = true;
      queue.close();
      saver?.close();
      apiServer.endWatches();
      await new Promise<void>((resolve) => {
        front.close(() => resolve());
        for (const s of sockets) s.destroy();
        httpServer.closeAllConnections();
        httpsServer.closeAllConnections();
      });
    },
  };
}
