/**
 * `GET /servers` and `/servers/detail` of the simulated Nova, with Nova's filters: `name` (a
 * regular expression), `status`, `host`/`node` (admin), and `changes-since` / `changes-before`
 * (ISO 8601, compared with each server's `updated`). As in Nova, a listing with `changes-since`
 * also returns the servers deleted since then (soft-deleted rows, status `DELETED`).
 */
import { SimHttpError, type SimRequest } from './http-kit.ts';

/** What the filters read of a server (the compute service's `SimServer`). */
export interface ListedServer {
  readonly name: string;
  readonly status: string;
  readonly host: string;
  /** Nova's `updated` (ISO 8601). */
  readonly updatedAt: string;
}

/** What the listing reads of the compute state. */
export interface ServerListSource<S extends ListedServer> {
  readonly servers: ReadonlyMap<string, S>;
  /** Deleted servers still known (oldest first), for `changes-since`. */
  readonly deleted: ReadonlyMap<string, S>;
}

function badFilter(name: string, value: string): SimHttpError {
  const message = `Invalid filter field: ${name}. Value ${value} is not a valid ISO 8601 time.`;
  return new SimHttpError(400, { badRequest: { code: 400, message } }, message);
}

/** Parses an ISO 8601 time of a `changes-*` filter (400 like Nova when it is not one). */
function timeFilter(req: SimRequest, name: string): number | undefined {
  const raw = req.query.get(name);
  if (raw === null) return undefined;
  // Nova accepts a date, or a time with or without an offset (UTC then); `+` may arrive as a space.
  let v = raw.trim().replace(/ (\d{2}:?\d{2})$/, '+$1').replace(/([+-]\d{2})(\d{2})$/, '$1:$2');
  if (/T\d{2}:\d{2}(:\d{2}(\.\d+)?)?$/.test(v)) v += 'Z';
  const ms = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2}))?$/.test(v) ? Date.parse(v) : Number.NaN;
  if (!Number.isFinite(ms)) throw badFilter(name, raw);
  return ms;
}

/** Servers of a listing request, filtered as Nova does (visibility first). */
export function listServers<S extends ListedServer>(src: ServerListSource<S>, req: SimRequest, visible: (s: S) => boolean, isAdmin: boolean): S[] {
  const since = timeFilter(req, 'changes-since');
  const before = timeFilter(req, 'changes-before');
  if (since !== undefined && before !== undefined && before < since) {
    const message = 'The value of changes-since must be less than or equal to changes-before.';
    throw new SimHttpError(400, { badRequest: { code: 400, message } }, message);
  }
  const name = req.query.get('name');
  const status = req.query.get('status');
  const hostFilter = req.query.get('host') ?? req.query.get('node');
  let list = [...src.servers.values()];
  // Nova returns deleted rows only to a changes-since (or changes-before) listing.
  if (since !== undefined || before !== undefined) list = list.concat([...src.deleted.values()]);
  list = list.filter(visible);
  if (since !== undefined) list = list.filter((x) => Date.parse(x.updatedAt) >= since);
  if (before !== undefined) list = list.filter((x) => Date.parse(x.updatedAt) <= before);
  if (name) {
    let re: RegExp | undefined;
    try {
      re = new RegExp(name);
    } catch {
      re = undefined;
    }
    list = list.filter((x) => (re ? re.test(x.name) : x.name === name));
  }
  if (status) list = list.filter((x) => x.status === status.toUpperCase());
  if (hostFilter && isAdmin) list = list.filter((x) => x.host === hostFilter);
  return list;
}
