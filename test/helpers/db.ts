/**
 * Test databases. PGlite start-up (initdb) is slow, so a migrated template is dumped once into
 * `.tmp/` and every test file starts from a copy. With `VNFM_TEST_PG_URL` set, storage tests also
 * run on that PostgreSQL server, each in a fresh schema-less database created for the run.
 */
import { createHash, randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { Kysely } from 'kysely';
import pg from 'pg';
import { MIGRATIONS, migrateToLatest } from '../../src/store/migrations/index.ts';
import { PGliteDialect } from '../../src/store/pglite-dialect.ts';
import { type Store, openStore } from '../../src/store/db.ts';

const TMP = join(process.cwd(), '.tmp');

function templateKey(): string {
  const h = createHash('sha256');
  for (const [k, m] of Object.entries(MIGRATIONS)) h.update(k).update(m.up.toString());
  return h.digest('hex').slice(0, 16);
}

/** Opens a fresh, migrated PGlite database (from the cached template). */
export async function testStore(): Promise<Store> {
  mkdirSync(TMP, { recursive: true });
  const file = join(TMP, `pglite-template-${templateKey()}.tar.gz`);
  if (!existsSync(file)) {
    const pgl = new PGlite();
    const db = new Kysely<unknown>({ dialect: new PGliteDialect(pgl) });
    await migrateToLatest(db);
    const dump = await pgl.dumpDataDir('gzip');
    const tmp = `${file}.${randomUUID()}`;
    writeFileSync(tmp, Buffer.from(await dump.arrayBuffer()));
    renameSync(tmp, file);
    await db.destroy();
  }
  const blob = new Blob([readFileSync(file)]);
  // migrations still run (no-op when the template is current; applies newer ones otherwise)
  return openStore({ loadDataDir: blob });
}

/** Opens a fresh database on the PostgreSQL server at `VNFM_TEST_PG_URL`, or undefined. */
export async function testPgStore(): Promise<(Store & { dropAll(): Promise<void> }) | undefined> {
  const url = process.env.VNFM_TEST_PG_URL;
  if (!url) return undefined;
  const name = `vnfm_test_${randomUUID().replace(/-/g, '').slice(0, 12)}`;
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const u = new URL(url);
  u.pathname = `/${name}`;
  const store = await openStore({ databaseUrl: u.toString() });
  return {
    ...store,
    async dropAll() {
      await store.close();
      const a = new pg.Client({ connectionString: url });
      await a.connect();
      await a.query(`drop database if exists ${name} with (force)`);
      await a.end();
    },
  };
}
