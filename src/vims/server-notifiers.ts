/**
 * Server Notifier endpoints registered by an admin (`/vnfm/v1/server-notifiers`), each for one VIM.
 *
 * The Server Notifier management driver registers a VNF's servers with a notifier and, for that,
 * sends the VIM's Keystone token. So the notifier an instantiate request names (Tacker's
 * `additionalParams.ServerNotifierUri`, or `ServerNotifierId`) must be one registered here for the
 * VIM the instance is deployed on: otherwise the request is refused (422) before anything is sent,
 * and the driver checks again before every call (instance metadata can change after acceptance).
 */
import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import { vnfmError } from '../errors.ts';
import type { Database } from '../store/schema.ts';

/** A registered Server Notifier. */
export interface ServerNotifierRecord {
  id: string;
  name: string;
  /** Base URL of its alarm API (no trailing slash). */
  uri: string;
  /** The VIM whose servers it watches: a registered VIM's id, or the `vimId` of inline vimConnectionInfo entries. */
  vimId: string;
  /** Whether the VIM's (project-scoped) Keystone token is sent with alarm calls; false when the notifier needs none. */
  sendToken: boolean;
  description: string;
  createdAt: Date;
}

/** Input of {@link ServerNotifierRegistry.register}. */
export interface ServerNotifierInput {
  name: string;
  uri: string;
  vimId: string;
  sendToken?: boolean;
  description?: string;
}

/** Checks a URL before it is stored (the outbound rules); returns the reason it is refused. */
export type UrlCheck = (url: string) => Promise<string | undefined>;

/** The URL as stored and compared: no trailing slash, no fragment. */
export function normalizeNotifierUri(uri: string): string {
  const u = new URL(uri);
  u.hash = '';
  return u.toString().replace(/\/+$/, '');
}

type Row = Database['server_notifier'] extends infer T ? { [K in keyof T]: unknown } : never;

function toRecord(r: Row): ServerNotifierRecord {
  return {
    id: r.id as string,
    name: r.name as string,
    uri: r.uri as string,
    vimId: r.vim_id as string,
    sendToken: r.send_token as boolean,
    description: r.description as string,
    createdAt: new Date(r.created_at as string),
  };
}

/** Stores and resolves registered Server Notifiers. */
export class ServerNotifierRegistry {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly checkUrl: UrlCheck = async () => undefined,
  ) {}

  /** Registers a notifier; 422 for a URL the outbound rules refuse, 409 for a duplicate. */
  async register(input: ServerNotifierInput): Promise<ServerNotifierRecord> {
    let uri: string;
    try {
      uri = normalizeNotifierUri(input.uri);
    } catch {
      throw vnfmError('VNFM_ERR_API_UNPROCESSABLE', 'uri must be an absolute http or https URL');
    }
    const why = await this.checkUrl(uri);
    if (why) throw vnfmError('VNFM_ERR_API_UNPROCESSABLE', `uri is refused by the outbound rules: ${why}`);
    const vim = await this.db.selectFrom('vim').select('id').where('id', '=', input.vimId).executeTakeFirst();
    if (!vim && !/^[A-Za-z0-9][A-Za-z0-9_.:-]{0,254}$/.test(input.vimId)) throw vnfmError('VNFM_ERR_API_UNPROCESSABLE', 'vimId must name a registered VIM or a vimConnectionInfo vimId');
    const id = randomUUID();
    await this.db.transaction().execute(async (tx) => {
      const dup = await tx.selectFrom('server_notifier').select('id').where((eb) => eb.or([eb('name', '=', input.name), eb.and([eb('uri', '=', uri), eb('vim_id', '=', input.vimId)])])).executeTakeFirst();
      if (dup) throw vnfmError('VNFM_ERR_API_CONFLICT', `a Server Notifier with this name, or this uri for VIM ${input.vimId}, is already registered (${dup.id})`);
      await tx.insertInto('server_notifier').values({ id, name: input.name, uri, vim_id: input.vimId, send_token: input.sendToken ?? true, description: input.description ?? '' }).execute();
    });
    return this.get(id);
  }

  /** One notifier, or 404. */
  async get(id: string): Promise<ServerNotifierRecord> {
    const r = await this.db.selectFrom('server_notifier').selectAll().where('id', '=', id).executeTakeFirst();
    if (!r) throw vnfmError('VNFM_ERR_API_NOT_FOUND', `Server Notifier ${id} not found`);
    return toRecord(r as never);
  }

  /** All notifiers, oldest first. */
  async list(): Promise<ServerNotifierRecord[]> {
    const rows = await this.db.selectFrom('server_notifier').selectAll().orderBy('created_at').orderBy('id').execute();
    return rows.map((r) => toRecord(r as never));
  }

  /** Removes a registration (404 when unknown). Instances that name it fail their next alarm call. */
  async delete(id: string): Promise<void> {
    const r = await this.db.deleteFrom('server_notifier').where('id', '=', id).executeTakeFirst();
    if (Number(r.numDeletedRows) === 0) throw vnfmError('VNFM_ERR_API_NOT_FOUND', `Server Notifier ${id} not found`);
  }

  /**
   * The registration a request or an instance names (`id` wins over `uri`), for one of `vimIds`;
   * throws 422 naming why when there is none (unregistered URL, unknown id, another VIM's).
   */
  async resolve(ref: { id?: string; uri?: string }, vimIds: readonly string[]): Promise<ServerNotifierRecord> {
    let rows: ServerNotifierRecord[];
    if (ref.id !== undefined) {
      const r = await this.db.selectFrom('server_notifier').selectAll().where('id', '=', ref.id).executeTakeFirst();
      if (!r) throw vnfmError('VNFM_ERR_INST_INVALID', `ServerNotifierId ${ref.id} is not a registered Server Notifier`);
      rows = [toRecord(r as never)];
      if (ref.uri !== undefined && !sameUri(ref.uri, rows[0]?.uri)) throw vnfmError('VNFM_ERR_INST_INVALID', `ServerNotifierUri does not match the uri of Server Notifier ${ref.id}`);
    } else if (ref.uri !== undefined) {
      let uri: string;
      try {
        uri = normalizeNotifierUri(ref.uri);
      } catch {
        throw vnfmError('VNFM_ERR_INST_INVALID', 'ServerNotifierUri is not an absolute URL');
      }
      const found = await this.db.selectFrom('server_notifier').selectAll().where('uri', '=', uri).execute();
      if (found.length === 0) throw vnfmError('VNFM_ERR_INST_INVALID', 'ServerNotifierUri is not a registered Server Notifier (an admin registers it at /vnfm/v1/server-notifiers)');
      rows = found.map((r) => toRecord(r as never));
    } else {
      throw vnfmError('VNFM_ERR_INST_INVALID', 'no Server Notifier named (ServerNotifierUri or ServerNotifierId)');
    }
    const match = rows.find((r) => vimIds.includes(r.vimId));
    if (!match) throw vnfmError('VNFM_ERR_INST_INVALID', `the Server Notifier named is not registered for the VIM of this instance${vimIds.length ? '' : ' (its vimConnectionInfo has no vimId)'}`);
    return match;
  }
}

function sameUri(a: string, b: string | undefined): boolean {
  try {
    return b !== undefined && normalizeNotifierUri(a) === b;
  } catch {
    return false;
  }
}

/** The `/vnfm/v1/server-notifiers` representation. */
export function serverNotifierToApi(n: ServerNotifierRecord): Record<string, unknown> {
  return { id: n.id, name: n.name, uri: n.uri, vimId: n.vimId, sendToken: n.sendToken, description: n.description, createdAt: n.createdAt.toISOString() };
}
