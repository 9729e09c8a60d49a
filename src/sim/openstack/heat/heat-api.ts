/**
 * HTTP surface of the simulated Heat (`/v1/{project_id}/...`): stack CRUD with Heat's 302
 * lookups by name, resource listings with `nested_depth`, mark-unhealthy, signals, events,
 * template/environment/files/outputs. Views reproduce Heat's documents field by field because
 * VNFM drivers parse them (e.g. the `stack` link of a resource row names its owning nested stack).
 */
import { asObject, SimHttpError, type SimRequest, type SimResponse } from '../http-kit.ts';
import { isoSeconds } from '../ids.ts';
import type { TokenInfo } from '../keystone.ts';
import { HeatApiError, type HeatEngine } from './heat-engine.ts';
import type { HeatEvent, HeatResource, HeatStack } from './heat-model.ts';
import { displayParam } from './hot-template.ts';

const TITLES: Record<number, [string, string]> = {
  400: ['Bad Request', 'The server could not comply with the request since it is either malformed or otherwise incorrect.'],
  401: ['Unauthorized', 'This server could not verify that you are authorized to access the document you requested.'],
  403: ['Forbidden', 'Access was denied to this resource.'],
  404: ['Not Found', 'The resource could not be found.'],
  405: ['Method Not Allowed', 'The method is not allowed for this resource.'],
  409: ['Conflict', 'There was a conflict when trying to complete your request.'],
};

/** A Heat-shaped error response. */
export function heatError(status: number, type: string, message: string): SimHttpError {
  const [title, explanation] = TITLES[status] ?? ['Error', 'An error occurred.'];
  return new SimHttpError(status, { explanation, code: status, error: { message, traceback: null, type }, title }, message);
}

const LOOKUP_SUBPATHS = new Set(['resources', 'events', 'template', 'actions', 'environment', 'files']);

function iso(ms: number | undefined): string | null {
  return ms === undefined ? null : isoSeconds(ms);
}

function isObj(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function parseTags(v: unknown): string[] | null | undefined {
  if (v === undefined) return undefined;
  if (v === null || v === '') return null;
  if (Array.isArray(v)) return v.map(String);
  return String(v)
    .split(',')
    .map((x) => x.trim())
    .filter((x) => x !== '');
}

function parseFiles(v: unknown): Record<string, string> | undefined {
  if (v === undefined || v === null) return undefined;
  if (!isObj(v)) throw heatError(400, 'HTTPBadRequest', 'files must be a map');
  const out: Record<string, string> = {};
  for (const [k, x] of Object.entries(v)) out[k] = typeof x === 'string' ? x : JSON.stringify(x);
  return out;
}

function parseParams(v: unknown): Record<string, unknown> | undefined {
  if (v === undefined || v === null) return undefined;
  if (!isObj(v)) throw heatError(400, 'HTTPBadRequest', 'parameters must be a map');
  return v;
}

function parseBool(v: unknown, fallback: boolean): boolean {
  if (v === undefined || v === null) return fallback;
  if (typeof v === 'boolean') return v;
  return ['true', '1', 'yes', 't', 'on'].includes(String(v).toLowerCase());
}

/** Heat API routes and views over a {@link HeatEngine}. */
export class HeatApi {
  constructor(
    private readonly engine: HeatEngine,
    private readonly baseUrl: () => string,
  ) {}

  private heatBase(projectId: string): string {
    return `${this.baseUrl()}/v1/${projectId}`;
  }

  private stackUrl(s: HeatStack): string {
    return `${this.heatBase(s.projectId)}/stacks/${s.name}/${s.id}`;
  }

  /** Handles `/v1/...`; returns `undefined` for other paths. */
  handle(req: SimRequest, token: TokenInfo): SimResponse | undefined {
    const s = req.segments;
    if (s[0] !== 'v1') return undefined;
    const tenant = s[1];
    if (tenant === undefined) {
      return {
        status: 200,
        body: { versions: [{ id: 'v1.0', status: 'CURRENT', links: [{ rel: 'self', href: `${this.baseUrl()}/v1/` }] }] },
      };
    }
    if (!token.project || tenant !== token.project.id) {
      throw heatError(403, 'Forbidden', 'You are not authorized to use the project in the URL.');
    }
    const projectId = tenant;
    const rest = s.slice(2);
    try {
      if (rest[0] === 'resource_types' && req.method === 'GET') {
        return { status: 200, body: { resource_types: this.engine.resourceTypes() } };
      }
      if (rest[0] === 'validate' && req.method === 'POST') {
        const b = asObject(req.body);
        return {
          status: 200,
          body: this.engine.validateOnly(b.template, parseFiles(b.files) ?? {}, b.environment, parseParams(b.parameters) ?? {}),
        };
      }
      if (rest[0] !== 'stacks') throw heatError(404, 'HTTPNotFound', 'The resource could not be found.');
      if (rest.length === 1) {
        if (req.method === 'GET') return this.list(req, projectId);
        if (req.method === 'POST') return this.create(req, projectId, token);
        throw heatError(405, 'HTTPMethodNotAllowed', 'Method not allowed');
      }
      const name = rest[1] as string;
      if (rest.length === 2 || (rest.length === 3 && LOOKUP_SUBPATHS.has(rest[2] as string) && req.method === 'GET')) {
        const found = this.engine.lookup(projectId, name);
        if (!found) throw heatError(404, 'EntityNotFound', `The Stack (${name}) could not be found.`);
        const sub = rest.length === 3 ? `/${rest[2]}` : '';
        const location = `${this.stackUrl(found)}${sub}${req.search}`;
        return { status: 302, headers: { Location: location }, body: { location } };
      }
      const id = rest[2] as string;
      const stack = this.engine.get(projectId, name, id);
      if (!stack) throw heatError(404, 'EntityNotFound', `The Stack (${name}) could not be found.`);
      return this.onStack(req, stack, rest.slice(3));
    } catch (e) {
      if (e instanceof HeatApiError) throw heatError(e.status, e.type, e.message);
      throw e;
    }
  }

  private onStack(req: SimRequest, stack: HeatStack, sub: string[]): SimResponse {
    const live = (): void => {
      if (stack.deleted) throw heatError(404, 'EntityNotFound', `The Stack (${stack.name}) could not be found.`);
    };
    if (sub.length === 0) {
      switch (req.method) {
        case 'GET':
          return { status: 200, body: { stack: this.stackDetail(stack) } };
        case 'PUT':
        case 'PATCH': {
          live();
          const b = asObject(req.body);
          const patch = req.method === 'PATCH' || b.existing === true || b.existing === 'true';
          this.engine.updateStack(
            stack,
            {
              template: b.template === null ? undefined : b.template,
              files: parseFiles(b.files),
              environment: b.environment,
              parameters: parseParams(b.parameters),
              clearParameters: Array.isArray(b.clear_parameters) ? b.clear_parameters.map(String) : undefined,
              disableRollback: b.disable_rollback === undefined ? undefined : parseBool(b.disable_rollback, true),
              timeoutMins: b.timeout_mins === undefined ? undefined : b.timeout_mins === null ? null : Number(b.timeout_mins),
              tags: parseTags(b.tags),
            },
            patch,
          );
          return {
            status: 202,
            body: { message: 'The request is accepted for processing.<br /><br />\n\n\n', code: '202 Accepted', title: 'Accepted' },
          };
        }
        case 'DELETE':
          live();
          this.engine.deleteStack(stack);
          return { status: 204 };
        default:
          throw heatError(405, 'HTTPMethodNotAllowed', 'Method not allowed');
      }
    }
    const [what, arg, more] = sub;
    if (what === 'resources') {
      if (arg === undefined) {
        if (req.method !== 'GET') throw heatError(405, 'HTTPMethodNotAllowed', 'Method not allowed');
        return { status: 200, body: { resources: this.listResources(req, stack) } };
      }
      const r = stack.resources.get(arg);
      if (!r) throw heatError(404, 'ResourceNotFound', `The Resource (${arg}) could not be found in Stack ${stack.name}.`);
      if (more === undefined) {
        if (req.method === 'GET') {
          return {
            status: 200,
            body: {
              resource: {
                ...this.resourceRow(stack, r),
                description: '',
                attributes: this.engine.resourceAttributes(stack, r),
              },
            },
          };
        }
        if (req.method === 'PATCH') {
          const b = asObject(req.body);
          for (const k of Object.keys(b)) {
            if (k !== 'mark_unhealthy' && k !== 'resource_status_reason') {
              throw heatError(400, 'HTTPBadRequest', `Invalid key ${k} in body`);
            }
          }
          if (typeof b.mark_unhealthy !== 'boolean') {
            throw heatError(400, 'HTTPBadRequest', 'Unrecognized value "mark_unhealthy", acceptable values are: true, false');
          }
          this.engine.markUnhealthy(stack, arg, b.mark_unhealthy, typeof b.resource_status_reason === 'string' ? b.resource_status_reason : '');
          return { status: 200, body: null };
        }
        throw heatError(405, 'HTTPMethodNotAllowed', 'Method not allowed');
      }
      if (more === 'signal' && req.method === 'POST') {
        this.engine.signal(stack, arg, req.body);
        return { status: 200, body: null };
      }
      if (more === 'metadata' && req.method === 'GET') {
        return { status: 200, body: { metadata: this.engine.resourceMetadata(r) } };
      }
      if (more === 'events' && req.method === 'GET') {
        return { status: 200, body: { events: this.events(req, stack, arg) } };
      }
      throw heatError(404, 'HTTPNotFound', 'The resource could not be found.');
    }
    if (req.method === 'POST' && what === 'actions') {
      live();
      const b = asObject(req.body);
      if ('check' in b) {
        for (const r of stack.resources.values()) if (r.status !== 'FAILED') r.action = 'CHECK';
        stack.action = 'CHECK';
        stack.status = [...stack.resources.values()].some((r) => r.status === 'FAILED') ? 'FAILED' : 'COMPLETE';
        stack.reason = 'Stack CHECK completed successfully';
        return { status: 200 };
      }
      throw heatError(400, 'HTTPBadRequest', 'Only the "check" action is simulated.');
    }
    if (req.method !== 'GET') throw heatError(405, 'HTTPMethodNotAllowed', 'Method not allowed');
    switch (what) {
      case 'events':
        return { status: 200, body: { events: this.events(req, stack, undefined) } };
      case 'template':
        return { status: 200, body: stack.template.raw };
      case 'environment':
        return { status: 200, body: stack.environment };
      case 'files':
        return { status: 200, body: stack.files };
      case 'outputs': {
        const outs = this.engine.outputs(stack);
        if (arg === undefined) {
          return { status: 200, body: { outputs: outs.map((o) => ({ output_key: o.key, description: o.description })) } };
        }
        const o = outs.find((x) => x.key === arg);
        if (!o) throw heatError(404, 'NotFound', `Specified output key ${arg} not found.`);
        return {
          status: 200,
          body: {
            output: {
              output_key: o.key,
              output_value: o.value,
              description: o.description,
              ...(o.error ? { output_error: o.error } : {}),
            },
          },
        };
      }
      default:
        throw heatError(404, 'HTTPNotFound', 'The resource could not be found.');
    }
  }

  private create(req: SimRequest, projectId: string, token: TokenInfo): SimResponse {
    const b = asObject(req.body);
    const name = b.stack_name;
    if (typeof name !== 'string' || name === '') throw heatError(400, 'HTTPBadRequest', 'No stack name specified');
    if (b.template === undefined || b.template === null) {
      if (b.template_url !== undefined) throw heatError(400, 'HTTPBadRequest', 'template_url is not supported by the simulated Heat; send "template".');
      throw heatError(400, 'HTTPBadRequest', 'No template specified');
    }
    const stack = this.engine.createStack({
      name,
      template: b.template,
      files: parseFiles(b.files) ?? {},
      environment: b.environment,
      parameters: parseParams(b.parameters) ?? {},
      disableRollback: parseBool(b.disable_rollback, true),
      timeoutMins: b.timeout_mins === undefined || b.timeout_mins === null ? null : Number(b.timeout_mins),
      tags: parseTags(b.tags) ?? null,
      projectId,
      userId: token.userId,
      userName: token.userName,
    });
    return {
      status: 201,
      headers: { Location: this.stackUrl(stack) },
      body: { stack: { id: stack.id, links: [{ href: this.stackUrl(stack), rel: 'self' }] } },
    };
  }

  private list(req: SimRequest, projectId: string): SimResponse {
    const q = req.query;
    const showNested = parseBool(q.get('show_nested'), false);
    const showDeleted = parseBool(q.get('show_deleted'), false);
    const names = [...q.getAll('name'), ...q.getAll('stack_name')];
    const statuses = q.getAll('status').map((x) => x.toUpperCase());
    const actions = q.getAll('action').map((x) => x.toUpperCase());
    const ids = q.getAll('id');
    let stacks = [...this.engine.stacks.values()].filter(
      (s) =>
        s.projectId === projectId &&
        (showDeleted || !s.deleted) &&
        (showNested || s.parent === undefined) &&
        (names.length === 0 || names.includes(s.name)) &&
        (statuses.length === 0 || statuses.includes(s.status) || statuses.includes(`${s.action}_${s.status}`)) &&
        (actions.length === 0 || actions.includes(s.action)) &&
        (ids.length === 0 || ids.includes(s.id)),
    );
    const sortDir = q.get('sort_dir') === 'asc' ? 1 : -1;
    stacks.sort((a, b) => (a.createdAt - b.createdAt) * sortDir);
    const marker = q.get('marker');
    if (marker) {
      const i = stacks.findIndex((s) => s.id === marker);
      if (i >= 0) stacks = stacks.slice(i + 1);
    }
    const limit = Number(q.get('limit'));
    if (Number.isInteger(limit) && limit > 0) stacks = stacks.slice(0, limit);
    return { status: 200, body: { stacks: stacks.map((s) => this.stackSummary(s)) } };
  }

  private stackSummary(s: HeatStack, detail = false): Record<string, unknown> {
    return {
      id: s.id,
      stack_name: s.name,
      ...(detail ? {} : { project: s.projectId }),
      description: detail ? s.template.description : '',
      creation_time: iso(s.createdAt),
      updated_time: iso(s.updatedAt),
      deletion_time: iso(s.deletedAt),
      stack_status: `${s.action}_${s.status}`,
      stack_status_reason: s.reason,
      stack_owner: s.userName,
      stack_user_project_id: s.projectId,
      parent: s.parent?.stackId ?? null,
      tags: detail ? (s.tags ?? []) : s.tags,
      links: [{ href: this.stackUrl(s), rel: 'self' }],
    };
  }

  private stackDetail(s: HeatStack): Record<string, unknown> {
    const parameters: Record<string, string> = {
      'OS::project_id': s.projectId,
      'OS::stack_id': s.id,
      'OS::stack_name': s.name,
    };
    for (const [k, v] of Object.entries(s.params)) parameters[k] = displayParam(s.template.parameters[k], v);
    const outputs = s.deleted
      ? []
      : this.engine.outputs(s).map((o) => ({
          output_key: o.key,
          output_value: o.value,
          description: o.description,
          ...(o.error ? { output_error: o.error } : {}),
        }));
    return {
      ...this.stackSummary(s, true),
      parameters,
      outputs,
      disable_rollback: s.disableRollback,
      timeout_mins: s.timeoutMins,
      notification_topics: [],
      capabilities: [],
      template_description: s.template.description,
    };
  }

  /** One row of a resource listing, Heat's shape (links `self`, `stack`, and `nested` when it owns one). */
  private resourceRow(stack: HeatStack, r: HeatResource): Record<string, unknown> {
    const selfUrl = `${this.stackUrl(stack)}/resources/${encodeURIComponent(r.name)}`;
    const links: { href: string; rel: string }[] = [
      { href: selfUrl, rel: 'self' },
      { href: this.stackUrl(stack), rel: 'stack' },
    ];
    const child = r.nestedStackId ? this.engine.stacks.get(r.nestedStackId) : undefined;
    if (child && !child.deleted) links.push({ href: this.stackUrl(child), rel: 'nested' });
    const row: Record<string, unknown> = {
      resource_name: r.name,
      logical_resource_id: r.name,
      physical_resource_id: r.physicalId,
      resource_type: r.type,
      resource_status: `${r.action}_${r.status}`,
      resource_status_reason: r.reason,
      creation_time: iso(r.createdAt),
      updated_time: iso(r.updatedAt ?? r.createdAt),
      required_by: [...r.requiredBy],
      links,
    };
    if (stack.parent) row.parent_resource = stack.parent.resourceName;
    return row;
  }

  private listResources(req: SimRequest, stack: HeatStack): Record<string, unknown>[] {
    const depthRaw = req.query.get('nested_depth');
    const depth = depthRaw === null ? 0 : Math.max(0, Math.floor(Number(depthRaw)) || 0);
    const types = req.query.getAll('type');
    const names = req.query.getAll('name');
    const statuses = req.query.getAll('status').map((x) => x.toUpperCase());
    const actions = req.query.getAll('action').map((x) => x.toUpperCase());
    const physical = req.query.getAll('physical_resource_id');
    // As Heat does: the filters on resource columns select the resources of each stack, and only
    // the selected ones are descended into (a `name` filter finds no nested resource under a
    // parent of another name); `type` is applied afterwards, to the whole nested listing.
    const selected = (r: HeatResource): boolean =>
      (names.length === 0 || names.includes(r.name)) &&
      (statuses.length === 0 || statuses.includes(r.status) || statuses.includes(`${r.action}_${r.status}`)) &&
      (actions.length === 0 || actions.includes(r.action)) &&
      (physical.length === 0 || physical.includes(r.physicalId));
    // with_detail (Heat: resource description, metadata and every attribute but `show`)
    const detail = ['true', '1', 'yes', 'on'].includes((req.query.get('with_detail') ?? '').toLowerCase());
    const out: Record<string, unknown>[] = [];
    const walk = (s: HeatStack, d: number): void => {
      for (const r of s.resources.values()) {
        if (!selected(r) || (types.length > 0 && !types.includes(r.type))) continue;
        out.push(detail ? { ...this.resourceRow(s, r), description: '', metadata: {}, attributes: this.engine.resourceAttributes(s, r) } : this.resourceRow(s, r));
      }
      if (d === 0) return;
      for (const r of s.resources.values()) {
        if (!selected(r)) continue;
        const child = r.nestedStackId ? this.engine.stacks.get(r.nestedStackId) : undefined;
        if (child && !child.deleted) walk(child, d - 1);
      }
    };
    walk(stack, depth);
    return out;
  }

  private eventDoc(stack: HeatStack, e: HeatEvent): Record<string, unknown> {
    const resUrl = `${this.stackUrl(stack)}/resources/${encodeURIComponent(e.resourceName)}`;
    return {
      id: e.id,
      event_time: isoSeconds(e.time),
      resource_name: e.resourceName,
      logical_resource_id: e.resourceName,
      physical_resource_id: e.physicalId,
      resource_status: `${e.action}_${e.status}`,
      resource_status_reason: e.reason,
      links: [
        { href: `${resUrl}/events/${e.id}`, rel: 'self' },
        { href: resUrl, rel: 'resource' },
        { href: this.stackUrl(stack), rel: 'stack' },
      ],
    };
  }

  private events(req: SimRequest, stack: HeatStack, resourceName: string | undefined): Record<string, unknown>[] {
    const q = req.query;
    const depth = Math.max(0, Math.floor(Number(q.get('nested_depth') ?? 0)) || 0);
    const statuses = q.getAll('resource_status').map((x) => x.toUpperCase());
    const actions = q.getAll('resource_action').map((x) => x.toUpperCase());
    const names = q.getAll('resource_name');
    let list: { stack: HeatStack; e: HeatEvent }[] = [];
    const walk = (s: HeatStack, d: number): void => {
      for (const e of s.events) list.push({ stack: s, e });
      if (d === 0) return;
      for (const c of this.engine.children(s)) walk(c, d - 1);
    };
    walk(stack, resourceName === undefined ? depth : 0);
    list = list.filter(
      ({ e }) =>
        (resourceName === undefined || (e.resourceName === resourceName && !e.stackEvent)) &&
        (statuses.length === 0 || statuses.includes(e.status) || statuses.includes(`${e.action}_${e.status}`)) &&
        (actions.length === 0 || actions.includes(e.action)) &&
        (names.length === 0 || names.includes(e.resourceName)),
    );
    list.sort((a, b) => a.e.time - b.e.time);
    // Heat lists newest first unless sort_dir=asc.
    if (q.get('sort_dir') !== 'asc') list.reverse();
    const marker = q.get('marker');
    if (marker) {
      const i = list.findIndex((x) => x.e.id === marker);
      if (i >= 0) list = list.slice(i + 1);
    }
    const limit = Number(q.get('limit'));
    if (Number.isInteger(limit) && limit > 0) list = list.slice(0, limit);
    return list.map(({ stack: s, e }) => this.eventDoc(s, e));
  }
}
