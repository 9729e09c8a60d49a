/**
 * The read side of Neutron's `/v2.0` API on the simulated cloud: `GET /v2.0/ports` (filters on
 * any port attribute, repeatable for several values, e.g. `device_id=a&device_id=b`; `fields` to
 * pick attributes) and `GET /v2.0/ports/{id}`. Ports are created by the simulated Heat; a port's
 * link is set down or up through `/_sim/ports/{id}/down|up` (status `DOWN` while its server runs).
 */
import { SimHttpError, type SimRequest, type SimResponse } from './http-kit.ts';
import type { TokenInfo } from './keystone.ts';
import type { NetworkService, SimPort } from './network-service.ts';

function notFound(message: string): SimHttpError {
  return new SimHttpError(404, { NeutronError: { type: 'PortNotFound', message, detail: '' } }, message);
}

/** Keeps the `fields` asked for (all when none). */
function pick(doc: Record<string, unknown>, fields: readonly string[]): Record<string, unknown> {
  if (fields.length === 0) return doc;
  const out: Record<string, unknown> = {};
  for (const f of fields) if (f in doc) out[f] = doc[f];
  return out;
}

/** Handles `/v2.0/...`; returns `undefined` for other paths. */
export function handleNetworkApi(network: NetworkService, req: SimRequest, token: TokenInfo): SimResponse | undefined {
  const s = req.segments;
  if (s[0] !== 'v2.0') return undefined;
  const isAdmin = token.roles.includes('admin');
  const visible = (p: SimPort): boolean => isAdmin || p.projectId === token.project?.id;
  const fields = req.query.getAll('fields');
  if (s[1] === 'ports' && req.method === 'GET') {
    if (s.length === 2) {
      const filters = new Map<string, string[]>();
      for (const [k, v] of req.query) if (k !== 'fields' && k !== 'limit' && k !== 'marker') filters.set(k, [...(filters.get(k) ?? []), v]);
      const ports = [...network.ports.values()].filter(visible).map((p) => network.portDoc(p));
      const hit = ports.filter((d) => [...filters].every(([k, vs]) => vs.includes(String(d[k]))));
      return { status: 200, body: { ports: hit.map((d) => pick(d, fields)) } };
    }
    if (s.length === 3) {
      const p = network.ports.get(s[2] as string);
      if (!p || !visible(p)) throw notFound(`Port ${s[2]} could not be found.`);
      return { status: 200, body: { port: pick(network.portDoc(p), fields) } };
    }
  }
  throw new SimHttpError(404, { NeutronError: { type: 'HTTPNotFound', message: 'The resource could not be found.', detail: '' } });
}
