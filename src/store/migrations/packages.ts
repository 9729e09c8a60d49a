/**
 * Columns of the package layer added after the core schema, with a name that sorts after every
 * earlier migration (listed in src/store/migrations/index.ts).
 *
 * - `vnf_package.onboard_attempts`: onboarding attempts started for the current content (reset by
 *   an upload). A package found PROCESSING at start-up is onboarded again only while this is below
 *   2 (the first attempt plus one resume); otherwise it is marked ERROR, so a package that takes
 *   the VNFM down cannot do it again on every start.
 * - `vnf_package.package_info`: the VNFD-derived `softwareImages` and `additionalArtifacts` of the
 *   VnfPkgInfo (src/packages/package-info.ts), computed at onboarding, so lists show them without
 *   reading the VNFD; null for packages onboarded before it (then derived from the VNFD when shown).
 */
import type { ColumnType, Kysely, Migration } from 'kysely';
import { sql } from 'kysely';

declare module '../schema.ts' {
  interface VnfPackageTable {
    /** Onboarding attempts started for the current content. */
    onboard_attempts: ColumnType<number, number | undefined, number>;
    /** softwareImages and additionalArtifacts of the package, set at onboarding. */
    package_info: ColumnType<unknown | null, string | null | undefined, string | null>;
  }
}

/** Name of the migration (sorts after the core, auto-heal, LCM and notification ones). */
export const PACKAGE_ONBOARD_ATTEMPTS_MIGRATION = '140_vnf_package_onboard_attempts';

export const m140: Migration = {
  async up(db: Kysely<unknown>) {
    await sql`alter table vnf_package add column onboard_attempts integer not null default 0`.execute(db);
  },
};

/** Name of the package-info migration. */
export const PACKAGE_INFO_MIGRATION = '225_vnf_package_info';

export const m225: Migration = {
  async up(db: Kysely<unknown>) {
    await sql`alter table vnf_package add column package_info jsonb`.execute(db);
  },
};
