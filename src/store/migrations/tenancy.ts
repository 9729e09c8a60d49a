/**
 * VNF packages and VIMs per project, and the OAuth 2.0 revocation generation.
 *
 * - `project` on `vnf_package` and `vim`: the project that created it. Null means shared: rows
 *   from before this migration, and everything created while `auth.tenancy.packages` /
 *   `auth.tenancy.vims` is `shared`, stay visible to every project.
 * - VIM names and the default VIM of a type are per project (a project's VIM named `x` does not
 *   clash with another project's; each project has its own default, the shared default serving
 *   projects without one).
 * - `auth_revocation`: one row whose `generation` grows each time an OAuth 2.0 client is deleted
 *   or changed, so that every VNFM process sharing the database drops the tokens it cached.
 */
import { type Kysely, type Migration, sql } from 'kysely';

export const TENANCY_MIGRATION = '205_tenant_packages_vims';

export const m205: Migration = {
  async up(db: Kysely<unknown>) {
    await sql`alter table vnf_package add column if not exists project text`.execute(db);
    await sql`alter table vim add column if not exists project text`.execute(db);
    await sql`create index if not exists vnf_package_project on vnf_package (project, created_at, id)`.execute(db);
    await sql`alter table vim drop constraint if exists vim_name_key`.execute(db);
    await sql`create unique index vim_name_per_project on vim (coalesce(project, ''), name)`.execute(db);
    await sql`drop index if exists vim_one_default_per_type`.execute(db);
    await sql`create unique index vim_one_default_per_project_type on vim (coalesce(project, ''), type) where is_default`.execute(db);
    await sql`create table auth_revocation (id integer primary key, generation bigint not null default 0)`.execute(db);
    await sql`insert into auth_revocation (id, generation) values (1, 0)`.execute(db);
  },
};
