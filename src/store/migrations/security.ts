/**
 * Security tables.
 *
 * - `server_notifier`: Server Notifier endpoints an admin registered, each for one VIM. A VIM's
 *   Keystone token is only ever sent to one of these (an instantiate request names one by URL or
 *   id; an unregistered URL is refused), never to a URL a request brought.
 */
import { type Kysely, type Migration, sql } from 'kysely';

export const SERVER_NOTIFIER_MIGRATION = '180_server_notifiers';

export const m180: Migration = {
  async up(db: Kysely<unknown>) {
    await sql`
      create table server_notifier (
        id text primary key,
        name text not null unique,
        uri text not null,
        vim_id text not null,
        send_token boolean not null default true,
        description text not null default '',
        created_at timestamptz not null default now()
      )`.execute(db);
    await sql`create unique index server_notifier_uri_vim on server_notifier (uri, vim_id)`.execute(db);
  },
};
