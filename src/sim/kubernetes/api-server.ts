/**
 * HTTP front end of the simulated cluster: bearer-token auth, discovery, the REST verbs on every
 * resource (list with label/field selectors and paging, get, create, replace, the PATCH flavours,
 * delete with DeleteOptions, deletecollection), `status` / `scale` / pod `log`, `eviction` (honouring
 * PodDisruptionBudgets) and `binding` subresources, watches as chunked JSON lines resuming from a resourceVersion, and
 * server-side printing (`Table`) for kubectl. Faults (latency, broken API) are applied here.
 */
import { timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { parse as parseYaml } from 'yaml';
import { ApiError, badRequest, invalid, methodNotAllowed } from './api-errors.ts';
import type { ClusterApi, DeleteOpts, PropagationPolicy } from './cluster-api.ts';
import { aggregatedDiscovery, apiGroup, apiGroupList, apiResourceList, apiVersions, VERSION_INFO } from './discovery.ts';
import type { ApiFaults } from './faults.ts';
import type { ObjectStore, StoreEvent } from './object-store.ts';
import { openApiV3Doc, openApiV3Root } from './openapi.ts';
import { decodeKubernetesProtobuf, isProtobuf } from './protobuf.ts';
import { findResource, R, type ResourceDef } from './resource-registry.ts';
import { exactName, type FieldRequirement, type LabelSelectorReq, matchFields, matchLabels, parseFieldSelector, parseLabelSelector, selectorToString } from './selectors.ts';
import type { DeleteJournal } from './journal.ts';
import { type IncludeObject, toTable } from './table.ts';
import type { KubeObject, Loose, WatchEventType } from './types.ts';
import { WatchStreams } from './watch-streams.ts';

/** Handler of the `/_sim` control endpoints (provided by the simulator wiring). */
export type SimControlHandler = (method: string, path: string, query: URLSearchParams, body: Loose) => { code: number; body: Loose };

/** Wiring of the HTTP front end. */
export interface ApiServerDeps {
  api: ClusterApi;
  store: ObjectStore;
  faults: ApiFaults;
  token: string;
  log: (line: string) => void;
  simControl: SimControlHandler;
  /** Client deletions are recorded here (`GET /_sim/journal`). */
  journal?: DeleteJournal;
  /** `host:port` advertised in `/api`. */
  serverAddress: () => string;
  /** PodDisruptionBudget check of an eviction: throws the API error that refuses it. */
  admitEviction?: (pod: KubeObject, dryRun: boolean) => void;
  /**
   * Accepts bearer tokens besides {@link ApiServerDeps.token} on the Kubernetes API (not on `/_sim`):
   * the service-account tokens of the cluster.
   */
  authenticate?: (token: string) => boolean;
}

/** How a response should be rendered, from the Accept header. */
type Rendering = 'json' | 'table' | 'partial';

interface Route {
  def: ResourceDef;
  ns: string | undefined;
  name: string | undefined;
  sub: string | undefined;
  watchPath: boolean;
}

const MAX_BODY = 3 * 1024 * 1024;

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

function rendering(accept: string | undefined): Rendering {
  if (!accept) return 'json';
  for (const part of accept.split(',')) {
    const p = part.trim();
    if (!p.startsWith('application/json')) continue;
    if (/as=Table/.test(p)) return 'table';
    if (/as=PartialObjectMetadata/.test(p)) return 'partial';
    return 'json';
  }
  return 'json';
}

function wantsAggregated(accept: string | undefined): string | undefined {
  if (!accept) return undefined;
  for (const part of accept.split(',')) {
    const p = part.trim();
    if (!p.startsWith('application/json')) continue;
    if (/as=APIGroupDiscoveryList/.test(p)) {
      if (/v=v2beta1/.test(p)) return 'v2beta1';
      if (/v=v2(;|$)/.test(p)) return 'v2';
      continue;
    }
    return undefined;
  }
  return undefined;
}

function statusOk(code: number, details?: Loose): Loose {
  const s: Loose = { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', code };
  if (details) s.details = details;
  return s;
}

function notFoundPath(): ApiError {
  return new ApiError(404, 'NotFound', 'the server could not find the requested resource', { causes: [{ reason: 'UnexpectedServerResponse', message: '404 page not found' }] });
}

function intParam(q: URLSearchParams, name: string): number | undefined {
  const v = q.get(name);
  if (v === null || v === '') return undefined;
  const n = Number(v);
  if (!Number.isInteger(n)) throw badRequest(`invalid value for ${name}: ${v}`);
  return n;
}

function isTrue(v: string | null): boolean {
  return v === 'true' || v === '1';
}

function objKey(o: KubeObject): string {
  return `${o.metadata.namespace ?? ''}/${o.metadata.name}`;
}

function partial(o: KubeObject): Loose {
  return { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: o.metadata };
}

/** The request handler of the simulated API server. */
export class ApiServer {
  /** The open watch streams (the `/_sim` control API ends, holds and bookmarks them). */
  readonly watches = new WatchStreams();
  private readonly tokenBuf: Buffer;

  constructor(private readonly d: ApiServerDeps) {
    this.tokenBuf = Buffer.from(d.token);
  }

  /** Number of open watch streams. */
  watchCount(): number {
    return this.watches.count();
  }

  /** Ends every open watch stream (server shutdown, simulated outage). */
  endWatches(): void {
    this.watches.endAll();
  }

  /** Whether the request carries the admin token (or, unless `adminOnly`, a service-account token). */
  private authorized(req: IncomingMessage, adminOnly = false): boolean {
    const h = req.headers.authorization ?? '';
    const m = /^Bearer\s+(.+)$/i.exec(h);
    if (!m) return false;
    const token = (m[1] as string).trim();
    const got = Buffer.from(token);
    if (got.length === this.tokenBuf.length && timingSafeEqual(got, this.tokenBuf)) return true;
    return !adminOnly && this.d.authenticate !== undefined && this.d.authenticate(token);
  }

  private send(res: ServerResponse, code: number, body: Loose, contentType = 'application/json'): void {
    const text = typeof body === 'string' ? body : JSON.stringify(body);
    res.writeHead(code, { 'Content-Type': contentType, 'Content-Length': Buffer.byteLength(text), 'Cache-Control': 'no-cache, private' });
    res.end(text);
  }

  private sendError(res: ServerResponse, err: unknown): number {
    const e = err instanceof ApiError ? err : new ApiError(500, 'InternalError', `Internal error occurred: ${(err as Error)?.message ?? String(err)}`);
    if (!(err instanceof ApiError)) this.d.log(`internal error: ${(err as Error)?.stack ?? String(err)}`);
    this.send(res, e.code, e.toStatus());
    return e.code;
  }

  private readBody(req: IncomingMessage): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      let size = 0;
      req.on('data', (c: Buffer) => {
        size += c.length;
        if (size > MAX_BODY) {
          reject(new ApiError(413, 'RequestEntityTooLarge', 'Request entity too large: limit is 3145728'));
          req.destroy();
          return;
        }
        chunks.push(c);
      });
      req.on('end', () => resolve(Buffer.concat(chunks)));
      req.on('error', reject);
    });
  }

  private parseBody(raw: Buffer, contentType: string | undefined): Loose {
    if (raw.length === 0) return undefined;
    if (isProtobuf(contentType)) return decodeKubernetesProtobuf(raw);
    const text = raw.toString('utf8');
    if (!text.trim()) return undefined;
    const ct = (contentType ?? '').toLowerCase();
    try {
      if (ct.includes('yaml')) return parseYaml(text);
      return JSON.parse(text);
    } catch (err) {
      if (!ct.includes('json')) {
        try {
          return parseYaml(text);
        } catch {
          // fall through
        }
      }
      throw badRequest(`error decoding body: ${(err as Error).message}`);
    }
  }

  /** Node `http` request listener. */
  handle = (req: IncomingMessage, res: ServerResponse): void => {
    const started = Date.now();
    this.dispatch(req, res)
      .then((code) => {
        if (code) this.d.log(`${req.method} ${req.url} ${code} ${Date.now() - started}ms`);
      })
      .catch((err) => {
        const code = res.headersSent ? 0 : this.sendError(res, err);
        this.d.log(`${req.method} ${req.url} ${code || 'aborted'} ${Date.now() - started}ms`);
      });
  };

  private async dispatch(req: IncomingMessage, res: ServerResponse): Promise<number> {
    const url = new URL(req.url ?? '/', 'http://sim.local');
    const path = url.pathname.length > 1 ? url.pathname.replace(/\/+$/, '') : url.pathname;
    const method = (req.method ?? 'GET').toUpperCase();
    const q = url.searchParams;

    if (path === '/_sim' || path.startsWith('/_sim/')) {
      if (!this.authorized(req, true)) return this.unauthorized(res);
      const body = this.parseBody(await this.readBody(req), req.headers['content-type']);
      const out = this.d.simControl(method, path, q, body);
      this.send(res, out.code, out.body);
      return out.code;
    }

    const faults = this.d.faults;
    if (faults.latencyMs > 0) await sleep(faults.latencyMs);
    if (faults.takeBreak()) {
      const code = faults.breakStatus;
      this.send(res, code, new ApiError(code, code === 503 ? 'ServiceUnavailable' : 'InternalError', code === 503 ? 'the server is currently unable to handle the request' : 'an error on the server has prevented the request from succeeding').toStatus());
      return code;
    }

    if (method === 'GET' && (path === '/healthz' || path === '/livez' || path === '/readyz')) {
      this.send(res, 200, 'ok', 'text/plain; charset=utf-8');
      return 200;
    }
    if (method === 'GET' && path === '/version') {
      this.send(res, 200, VERSION_INFO);
      return 200;
    }
    if (!this.authorized(req)) return this.unauthorized(res);

    const rawBody = method === 'GET' || method === 'HEAD' ? Buffer.alloc(0) : await this.readBody(req);
    const accept = req.headers.accept;
    const seg = path.split('/').filter((s) => s.length > 0);

    // Discovery.
    if (method === 'GET') {
      if (path === '/api') {
        const agg = wantsAggregated(accept);
        if (agg) return this.sendDiscovery(res, aggregatedDiscovery(true, `apidiscovery.k8s.io/${agg}`), agg);
        this.send(res, 200, apiVersions(this.d.serverAddress()));
        return 200;
      }
      if (path === '/apis') {
        const agg = wantsAggregated(accept);
        if (agg) return this.sendDiscovery(res, aggregatedDiscovery(false, `apidiscovery.k8s.io/${agg}`), agg);
        this.send(res, 200, apiGroupList());
        return 200;
      }
      if (path === '/openapi/v3') return this.sendOr404(res, openApiV3Root());
      if (seg[0] === 'openapi' && seg[1] === 'v3') return this.sendOr404(res, openApiV3Doc(seg.slice(2).join('/')));
      if (seg[0] === 'api' && seg.length === 2) return this.sendOr404(res, apiResourceList('', seg[1] as string));
      if (seg[0] === 'apis' && seg.length === 2) return this.sendOr404(res, apiGroup(seg[1] as string));
      if (seg[0] === 'apis' && seg.length === 3) return this.sendOr404(res, apiResourceList(seg[1] as string, seg[2] as string));
    }

    const route = this.route(seg);
    if (!route) throw notFoundPath();
    const body = this.parseBody(rawBody, req.headers['content-type']);
    return this.resource(req, res, method, route, q, body, rendering(accept));
  }

  private unauthorized(res: ServerResponse): number {
    this.send(res, 401, new ApiError(401, 'Unauthorized', 'Unauthorized').toStatus());
    return 401;
  }

  private sendDiscovery(res: ServerResponse, doc: Loose, version: string): number {
    this.send(res, 200, doc, `application/json;g=apidiscovery.k8s.io;v=${version};as=APIGroupDiscoveryList`);
    return 200;
  }

  private sendOr404(res: ServerResponse, doc: Loose | undefined): number {
    if (!doc) throw notFoundPath();
    this.send(res, 200, doc);
    return 200;
  }

  private route(seg: string[]): Route | undefined {
    let group: string;
    let version: string;
    let rest: string[];
    if (seg[0] === 'api' && seg.length >= 3) {
      group = '';
      version = seg[1] as string;
      rest = seg.slice(2);
    } else if (seg[0] === 'apis' && seg.length >= 4) {
      group = seg[1] as string;
      version = seg[2] as string;
      rest = seg.slice(3);
    } else return undefined;
    let watchPath = false;
    if (rest[0] === 'watch') {
      watchPath = true;
      rest = rest.slice(1);
    }
    let ns: string | undefined;
    if (rest[0] === 'namespaces' && rest.length >= 3 && rest[2] !== 'status' && rest[2] !== 'finalize') {
      ns = rest[1];
      rest = rest.slice(2);
    }
    if (rest.length < 1 || rest.length > 3) return undefined;
    const def = findResource(group, version, rest[0] as string);
    if (!def) return undefined;
    if (!def.namespaced && ns !== undefined) return undefined;
    const name = rest[1];
    if (def.namespaced && ns === undefined && name !== undefined) return undefined;
    return { def, ns, name, sub: rest[2], watchPath };
  }

  private async resource(req: IncomingMessage, res: ServerResponse, method: string, r: Route, q: URLSearchParams, body: Loose, render: Rendering): Promise<number> {
    const { api } = this.d;
    const { def, name, sub } = r;
    const ns = r.ns ?? '';
    const dryRun = q.getAll('dryRun').includes('All') || (Array.isArray(body?.dryRun) && body.dryRun.includes('All'));
    const isWatch = r.watchPath || isTrue(q.get('watch'));

    if (name === undefined) {
      switch (method) {
        case 'GET':
          if (isWatch) return this.watch(req, res, r, q, render);
          return this.list(res, r, q, render);
        case 'POST': {
          if (r.ns === undefined && def.namespaced) throw notFoundPath();
          const obj = api.create(def, ns, body, { dryRun });
          this.send(res, 201, obj);
          return 201;
        }
        case 'DELETE':
          return this.deleteCollection(res, r, q, body, dryRun);
        default:
          throw methodNotAllowed();
      }
    }

    if (sub === undefined || sub === 'status' || (sub === 'finalize' && def === R.namespaces)) {
      const subresource = sub === 'status' ? 'status' : undefined;
      if (sub === 'status' && !def.sub.status) throw notFoundPath();
      switch (method) {
        case 'GET': {
          if (isWatch) return this.watch(req, res, { ...r, name: undefined }, withName(q, name), render);
          const obj = api.get(def, ns, name);
          return this.sendObject(res, def, obj, render, q);
        }
        case 'PUT': {
          if (sub === 'finalize') {
            const cur = api.get(def, ns, name);
            const next = api.mutate(def, ns, name, (d) => {
              d.spec = { ...(d.spec ?? {}), finalizers: body?.spec?.finalizers ?? [] };
            });
            this.send(res, 200, next ?? cur);
            return 200;
          }
          const obj = api.update(def, ns, name, body, { subresource, dryRun });
          this.send(res, 200, obj);
          return 200;
        }
        case 'PATCH': {
          const { obj, created } = api.patch(def, ns, name, contentTypeOf(req), body, { subresource, dryRun });
          this.send(res, created ? 201 : 200, obj);
          return created ? 201 : 200;
        }
        case 'DELETE': {
          if (sub) throw methodNotAllowed();
          return this.deleteOne(res, def, ns, name, q, body, dryRun);
        }
        case 'POST':
          throw methodNotAllowed();
        default:
          throw methodNotAllowed();
      }
    }

    if (sub === 'scale' && def.sub.scale) return this.scale(req, res, method, def, ns, name, body, dryRun);
    if (def === R.pods && sub === 'log' && method === 'GET') return this.podLog(res, ns, name, q);
    if (def === R.pods && sub === 'eviction' && method === 'POST') {
      const pod = api.get(def, ns, name);
      // dryRun may come with the request or inside the Eviction's deleteOptions
      const evictionDryRun = dryRun || (Array.isArray(body?.deleteOptions?.dryRun) && body.deleteOptions.dryRun.includes('All'));
      this.d.admitEviction?.(pod, evictionDryRun);
      const opts = deleteOptions(new URLSearchParams(), body?.deleteOptions ?? {}, evictionDryRun);
      const { obj } = api.delete(def, ns, name, opts);
      if (!evictionDryRun) this.d.journal?.record(obj, def.kind, 'eviction');
      this.send(res, 201, statusOk(201));
      return 201;
    }
    if (def === R.pods && sub === 'binding' && method === 'POST') {
      const target = body?.target?.name;
      if (!target) throw invalid(def, name, [{ reason: 'FieldValueRequired', message: 'Required value', field: 'target.name' }]);
      const pod = api.get(def, ns, name);
      if (pod.spec?.nodeName) throw new ApiError(409, 'Conflict', `Operation cannot be fulfilled on pods/binding "${name}": pod ${name} is already assigned to node "${pod.spec.nodeName}"`);
      api.mutate(def, ns, name, (d) => {
        d.spec.nodeName = target;
      });
      this.send(res, 201, statusOk(201));
      return 201;
    }
    if (def === R.pods && ['exec', 'attach', 'portforward', 'proxy'].includes(sub)) {
      throw badRequest(`${sub} is not supported by the simulated cluster`);
    }
    throw notFoundPath();
  }

  private sendObject(res: ServerResponse, def: ResourceDef, obj: KubeObject, render: Rendering, q: URLSearchParams): number {
    if (render === 'table') {
      this.send(res, 200, toTable(def, [obj], { resourceVersion: obj.metadata.resourceVersion }, includeObject(q)));
    } else if (render === 'partial') {
      this.send(res, 200, partial(obj));
    } else this.send(res, 200, obj);
    return 200;
  }

  private selection(r: Route, q: URLSearchParams): { items: KubeObject[]; labels: LabelSelectorReq; fields: FieldRequirement[] } {
    const labels = parseLabelSelector(q.get('labelSelector'));
    const fields = parseFieldSelector(q.get('fieldSelector'));
    const { store } = this.d;
    const ns = r.def.namespaced ? r.ns : undefined;
    const name = exactName(fields);
    let candidates: KubeObject[];
    if (name !== undefined && (ns !== undefined || !r.def.namespaced)) {
      const o = store.get(r.def, ns ?? '', name);
      candidates = o ? [o] : [];
    } else candidates = store.list(r.def, ns);
    const items = candidates.filter((o) => matchLabels(labels, o.metadata.labels) && matchFields(fields, o));
    return { items, labels, fields };
  }

  private list(res: ServerResponse, r: Route, q: URLSearchParams, render: Rendering): number {
    const { items } = this.selection(r, q);
    items.sort((a, b) => (objKey(a) < objKey(b) ? -1 : objKey(a) > objKey(b) ? 1 : 0));
    const rv = String(this.d.store.currentRv());
    let page = items;
    const meta: Loose = { resourceVersion: rv };
    const cont = q.get('continue');
    if (cont) {
      let after: string;
      try {
        after = JSON.parse(Buffer.from(cont, 'base64url').toString('utf8')).k;
      } catch {
        throw badRequest('continue key is not valid');
      }
      page = page.filter((o) => objKey(o) > after);
    }
    const limit = intParam(q, 'limit');
    if (limit && limit > 0 && page.length > limit) {
      const last = page[limit - 1] as KubeObject;
      meta.continue = Buffer.from(JSON.stringify({ k: objKey(last), rv })).toString('base64url');
      meta.remainingItemCount = page.length - limit;
      page = page.slice(0, limit);
    }
    if (render === 'table') {
      this.send(res, 200, toTable(r.def, page, meta, includeObject(q)));
    } else if (render === 'partial') {
      this.send(res, 200, { kind: 'PartialObjectMetadataList', apiVersion: 'meta.k8s.io/v1', metadata: meta, items: page.map(partial) });
    } else {
      this.send(res, 200, { kind: `${r.def.kind}List`, apiVersion: r.def.apiVersion, metadata: meta, items: page });
    }
    return 200;
  }

  private deleteOne(res: ServerResponse, def: ResourceDef, ns: string, name: string, q: URLSearchParams, body: Loose, dryRun: boolean): number {
    const opts = deleteOptions(q, body ?? {}, dryRun);
    const { obj, removed } = this.d.api.delete(def, ns, name, opts);
    if (!dryRun) this.d.journal?.record(obj, def.kind, 'delete');
    if (removed && def !== R.pods) {
      const details: Loose = { name, kind: def.plural, uid: obj.metadata.uid };
      if (def.group) details.group = def.group;
      this.send(res, 200, statusOk(200, details));
      return 200;
    }
    const code = !removed && opts.propagationPolicy === 'Foreground' ? 202 : 200;
    this.send(res, code, obj);
    return code;
  }

  private deleteCollection(res: ServerResponse, r: Route, q: URLSearchParams, body: Loose, dryRun: boolean): number {
    const { items } = this.selection(r, q);
    const opts = deleteOptions(q, body ?? {}, dryRun);
    const out: KubeObject[] = [];
    for (const o of items) {
      try {
        const gone = this.d.api.delete(r.def, o.metadata.namespace ?? '', o.metadata.name as string, opts).obj;
        if (!dryRun) this.d.journal?.record(gone, r.def.kind, 'deletecollection');
        out.push(gone);
      } catch (err) {
        if (!(err instanceof ApiError) || err.code !== 404) throw err;
      }
    }
    this.send(res, 200, { kind: `${r.def.kind}List`, apiVersion: r.def.apiVersion, metadata: { resourceVersion: String(this.d.store.currentRv()) }, items: out });
    return 200;
  }

  private scale(req: IncomingMessage, res: ServerResponse, method: string, def: ResourceDef, ns: string, name: string, body: Loose, dryRun: boolean): number {
    const { api } = this.d;
    const toScale = (o: KubeObject): Loose => ({
      kind: 'Scale',
      apiVersion: 'autoscaling/v1',
      metadata: { name: o.metadata.name, namespace: o.metadata.namespace, uid: o.metadata.uid, resourceVersion: o.metadata.resourceVersion, creationTimestamp: o.metadata.creationTimestamp },
      spec: { replicas: o.spec?.replicas ?? 0 },
      status: { replicas: o.status?.replicas ?? 0, selector: selectorToString(o.spec?.selector) },
    });
    const cur = api.get(def, ns, name);
    if (method === 'GET') {
      this.send(res, 200, toScale(cur));
      return 200;
    }
    let desired: Loose;
    if (method === 'PUT') desired = body;
    else if (method === 'PATCH') desired = api.patchDocument(toScale(cur), contentTypeOf(req), body);
    else throw methodNotAllowed();
    const rv = desired?.metadata?.resourceVersion;
    if (rv && rv !== cur.metadata.resourceVersion) {
      throw new ApiError(409, 'Conflict', `Operation cannot be fulfilled on ${def.plural}.${def.group} "${name}": the object has been modified; please apply your changes to the latest version and try again`, { name, group: def.group, kind: def.plural });
    }
    const replicas = desired?.spec?.replicas;
    if (!Number.isInteger(replicas) || replicas < 0) {
      throw new ApiError(422, 'Invalid', `Scale.autoscaling "${name}" is invalid: spec.replicas: Invalid value: ${JSON.stringify(replicas)}: must be greater than or equal to 0`, { name, group: 'autoscaling', kind: 'Scale', causes: [{ reason: 'FieldValueInvalid', message: 'Invalid value: must be greater than or equal to 0', field: 'spec.replicas' }] });
    }
    const next = { ...cur, spec: { ...cur.spec, replicas } };
    const updated = api.update(def, ns, name, next, { dryRun });
    this.send(res, 200, toScale(updated));
    return 200;
  }

  private podLog(res: ServerResponse, ns: string, name: string, q: URLSearchParams): number {
    const pod = this.d.api.get(R.pods, ns, name);
    const containers = (pod.spec?.containers ?? []) as Loose[];
    const cname = q.get('container') ?? (containers.length === 1 ? containers[0]?.name : undefined);
    if (!cname) throw badRequest(`a container name must be specified for pod ${name}, choose one of: [${containers.map((c) => c.name).join(' ')}]`);
    const cs = ((pod.status?.containerStatuses ?? []) as Loose[]).find((c) => c.name === cname);
    if (!cs || cs.state?.waiting) {
      throw badRequest(`container "${cname}" in pod "${name}" is waiting to start: ${cs?.state?.waiting?.reason ?? 'ContainerCreating'}`);
    }
    const image = containers.find((c) => c.name === cname)?.image ?? '';
    const since = cs.state?.running?.startedAt ?? pod.status?.startTime ?? '';
    const lines = [`${since} simulated container ${cname} (${image}) started on ${pod.spec?.nodeName}`, `${since} listening, pod IP ${pod.status?.podIP ?? ''}`];
    this.send(res, 200, `${lines.join('\n')}\n`, 'text/plain');
    return 200;
  }

  private watch(req: IncomingMessage, res: ServerResponse, r: Route, q: URLSearchParams, render: Rendering): Promise<number> {
    const { store } = this.d;
    const labels = parseLabelSelector(q.get('labelSelector'));
    const fields = parseFieldSelector(q.get('fieldSelector'));
    const ns = r.def.namespaced ? r.ns : undefined;
    const def = r.def;
    const include = includeObject(q);
    const bookmarks = isTrue(q.get('allowWatchBookmarks'));
    const matches = (o: KubeObject | undefined): boolean =>
      !!o && (ns === undefined || o.metadata.namespace === ns) && matchLabels(labels, o.metadata.labels) && matchFields(fields, o);
    const encode = (type: WatchEventType, o: KubeObject | Loose): string => {
      let object: Loose = o;
      if (type !== 'ERROR' && type !== 'BOOKMARK') {
        if (render === 'table') object = toTable(def, [o as KubeObject], { resourceVersion: (o as KubeObject).metadata.resourceVersion }, include === 'None' ? 'Metadata' : include);
        else if (render === 'partial') object = partial(o as KubeObject);
      }
      return `${JSON.stringify({ type, object })}\n`;
    };
    const translate = (ev: StoreEvent): WatchEventType | undefined => {
      if (ev.def !== def) return undefined;
      const now = ev.type !== 'DELETED' && matches(ev.obj);
      const before = ev.type !== 'ADDED' && matches(ev.old);
      if (ev.type === 'ADDED') return now ? 'ADDED' : undefined;
      if (ev.type === 'DELETED') return before ? 'DELETED' : undefined;
      if (now && before) return 'MODIFIED';
      if (now) return 'ADDED';
      if (before) return 'DELETED';
      return undefined;
    };

    const rvParam = q.get('resourceVersion') ?? '';
    const sendInitial = isTrue(q.get('sendInitialEvents'));
    let replay: StoreEvent[] = [];
    if (rvParam !== '' && rvParam !== '0' && !sendInitial) {
      const n = Number(rvParam);
      if (!Number.isFinite(n)) throw badRequest(`invalid resource version: ${rvParam}`);
      const since = store.eventsSince(n);
      if (since === 'expired') {
        res.writeHead(200, { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked', 'Cache-Control': 'no-cache, private' });
        res.end(encode('ERROR', new ApiError(410, 'Expired', `too old resource version: ${rvParam} (${store.currentRv()})`).toStatus()));
        return Promise.resolve(200);
      }
      replay = since;
    }
    res.writeHead(200, { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked', 'Cache-Control': 'no-cache, private' });
    res.flushHeaders();
    const bookmark = () => encode('BOOKMARK', { kind: def.kind, apiVersion: def.apiVersion, metadata: { resourceVersion: String(store.currentRv()) } });
    const stream = this.watches.add(res, bookmarks ? bookmark : undefined);

    if (rvParam === '' || rvParam === '0' || sendInitial) {
      const initial = (() => {
        const name = exactName(fields);
        if (name !== undefined && (ns !== undefined || !def.namespaced)) {
          const o = store.get(def, ns ?? '', name);
          return o ? [o] : [];
        }
        return store.list(def, ns);
      })().filter(matches);
      for (const o of initial) res.write(encode('ADDED', o));
      if (sendInitial && bookmarks) {
        res.write(encode('BOOKMARK', { kind: def.kind, apiVersion: def.apiVersion, metadata: { resourceVersion: String(store.currentRv()), annotations: { 'k8s.io/initial-events-end': 'true' } } }));
      }
    }
    for (const ev of replay) {
      const t = translate(ev);
      if (t) stream.send(encode(t, ev.obj));
    }

    return new Promise<number>((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const unsubscribe = store.subscribe((ev) => {
        const t = translate(ev);
        if (t) stream.send(encode(t, ev.obj));
      });
      const finish = () => {
        unsubscribe();
        if (timer) clearTimeout(timer);
        this.watches.delete(res);
        if (!res.writableEnded) res.end();
        resolve(200);
      };
      const timeout = intParam(q, 'timeoutSeconds');
      // like the real server, a stream that allowed bookmarks gets one before it ends at its timeout
      const expire = () => {
        if (bookmarks && !this.watches.held && !res.writableEnded) res.write(bookmark());
        finish();
      };
      if (timeout && timeout > 0) timer = setTimeout(expire, timeout * 1000);
      req.on('close', finish);
      res.on('close', finish);
      res.on('finish', finish);
    });
  }
}

function withName(q: URLSearchParams, name: string): URLSearchParams {
  const out = new URLSearchParams(q);
  const fs = out.get('fieldSelector');
  out.set('fieldSelector', fs ? `${fs},metadata.name=${name}` : `metadata.name=${name}`);
  return out;
}

function includeObject(q: URLSearchParams): IncludeObject {
  const v = q.get('includeObject');
  return v === 'None' || v === 'Object' ? v : 'Metadata';
}

function contentTypeOf(req: IncomingMessage): string {
  return String(req.headers['content-type'] ?? '')
    .split(';')[0]
    ?.trim()
    .toLowerCase() as string;
}

function deleteOptions(q: URLSearchParams, body: Loose, dryRun: boolean): DeleteOpts {
  const opts: DeleteOpts = { dryRun };
  const policy = (q.get('propagationPolicy') ?? body?.propagationPolicy) as PropagationPolicy | undefined;
  if (policy) {
    if (!['Foreground', 'Background', 'Orphan'].includes(policy)) throw badRequest(`propagationPolicy: Unsupported value: "${policy}"`);
    opts.propagationPolicy = policy;
  }
  const graceQ = q.get('gracePeriodSeconds');
  const grace = graceQ !== null ? Number(graceQ) : body?.gracePeriodSeconds;
  if (grace !== undefined && grace !== null) opts.gracePeriodSeconds = Number(grace);
  const orphanQ = q.get('orphanDependents');
  const orphan = orphanQ !== null ? orphanQ === 'true' : body?.orphanDependents;
  if (typeof orphan === 'boolean') opts.orphanDependents = orphan;
  if (body?.preconditions) opts.preconditions = body.preconditions;
  return opts;
}
