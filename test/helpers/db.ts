/**
 * Test databases, and the database matrix.
 *
 * PGlite start-up (initdb) is slow, so a migrated template is dumped once into `.tmp/` and every
 * test file starts from a copy. PostgreSQL test databases are created fresh on the server at
 * `VNFM_TEST_PG_URL` (stage `pg`, test/helpers/stages.ts) and dropped when closed.
 *
 * Storage suites run over every database kind with {@link describeStores}, the way Kysely runs one
 * suite over each dialect:
 *
 * ```ts
 * await describeStores('fault ledger', (env) => {
 *   let store: TestStore;
 *   before(async () => { store = await env.open(); });
 *   it('...', async () => { ... });
 * });
 * ```
 *
 * It declares `fault ledger (PGlite)` and `fault ledger (PostgreSQL)`; the PostgreSQL suite is
 * skipped through the `pg` stage (so the runner reports it) when no server is configured, and the
 * file fails at load when `VNFM_TEST_REQUIRE` names `pg` and it cannot run. There is no silent
 * downgrade: a PostgreSQL suite never falls back to PGlite.
 */
import { createHash, randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe } from 'node:test';
import { PGlite } from '@electric-sql/pglite';
import { Kysely } from 'kysely';
import pg from 'pg';
import { knownMigrations, migrateToLatest } from '../../src/store/migrations/index.ts';
import { PGliteDialect } from '../../src/store/pglite-dialect.ts';
import { type Store, openStore } from '../../src/store/db.ts';
import { stage } from './stages.ts';

const TMP = join(process.cwd(), '.tmp');

/**
 * The template's key: every migration (the one list of src/store/migrations/index.ts), names and
 * code, so a template made before a migration was added or changed is never reused (Kysely refuses
 * executed migrations it does not know, and unordered ones).
 */
function templateKey(): string {
  const h = createHash('sha256');
  for (const [k, m] of Object.entries(knownMigrations()).sort(([a], [b]) => a.localeCompare(b))) h.update(k).update(m.up.toString());
  return h.digest('hex').slice(0, 16);
}

/** Opens a fresh, migrated PGlite database (from the cached template). */
export async function testStore(): Promise<Store> {
  // migrations still run (no-op when the template is current; applies newer ones otherwise)
  return openStore({ loadDataDir: await templateDump() });
}

/** The migrated PGlite template (built once into `.tmp/`), e.g. to start an on-disk data directory from. */
export async function templateDump(): Promise<Blob> {
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
  return new Blob([readFileSync(file)]);
}

/** The database kinds of the matrix. */
export const STORE_KINDS = ['pglite', 'postgres'] as const;
/** One database kind. */
export type StoreKind = (typeof STORE_KINDS)[number];
/** How a kind is named in suite titles. */
export const STORE_LABELS: Record<StoreKind, string> = { pglite: 'PGlite', postgres: 'PostgreSQL' };

/**
 * A test database handle. `close()` is idempotent; on PostgreSQL the handle that created the
 * database also drops it (after closing the second pools opened on it).
 */
export interface TestStore extends Store {
  /** PostgreSQL: the URL of this very database (another pool may be opened on it). */
  readonly url?: string;
}

/** What a {@link describeStores} body gets. */
export interface StoreEnv {
  kind: StoreKind;
  /** `PGlite` or `PostgreSQL`. */
  label: string;
  /**
   * Opens a fresh, migrated database of this kind: PGlite from the template; PostgreSQL a new
   * database, dropped when the store is closed. Whatever is still open when the suite ends is
   * closed (and dropped) by the helper, after the suite's own `after` hooks.
   */
  open(): Promise<TestStore>;
  /**
   * PostgreSQL only: a second, independent connection pool on the database of `store` (what a
   * second VNFM process has). Closed with `store`, or on its own. Undefined on PGlite, which has one
   * handle per database: its connections are serialised, so there is nothing to open twice.
   */
  openSecond?(store: TestStore): Promise<TestStore>;
}

/** Runs `fn` once, then returns its first promise. */
function once(fn: () => Promise<void>): () => Promise<void> {
  let p: Promise<void> | undefined;
  return () => (p ??= fn());
}

async function adminQuery(text: string): Promise<void> {
  const c = new pg.Client({ connectionString: process.env.VNFM_TEST_PG_URL });
  await c.connect();
  try {
    await c.query(text);
  } finally {
    await c.end();
  }
}

/** Creates a fresh database on the server at VNFM_TEST_PG_URL; closing the store drops it. */
async function createPgStore(): Promise<TestStore> {
  const base = process.env.VNFM_TEST_PG_URL;
  if (!base) throw new Error('VNFM_TEST_PG_URL is not set');
  const name = `vnfm_test_${randomUUID().replace(/-/g, '').slice(0, 16)}`;
  await adminQuery(`create database ${name}`);
  const u = new URL(base);
  u.pathname = `/${name}`;
  const url = u.toString();
  let store: Store;
  try {
    store = await openStore({ databaseUrl: url });
  } catch (e) {
    await adminQuery(`drop database if exists ${name} with (force)`).catch(() => undefined);
    throw e;
  }
  const seconds: TestStore[] = [];
  const handle: TestStore & { seconds: TestStore[] } = {
    db: store.db,
    kind: store.kind,
    url,
    seconds,
    close: once(async () => {
      for (const s of seconds.splice(0).reverse()) await s.close().catch(() => undefined);
      await store.close().catch(() => undefined);
      await adminQuery(`drop database if exists ${name} with (force)`);
    }),
  };
  return handle;
}

/** A second pool on the database of a store made by {@link createPgStore}. */
async function openSecondPool(of: TestStore): Promise<TestStore> {
  if (of.kind !== 'postgres' || !of.url) throw new Error('openSecond needs a PostgreSQL test store');
  const s = await openStore({ databaseUrl: of.url, skipMigrations: true });
  const second: TestStore = { db: s.db, kind: s.kind, url: of.url, close: once(() => s.close()) };
  (of as TestStore & { seconds?: TestStore[] }).seconds?.push(second);
  return second;
}

/**
 * Opens a fresh database on the PostgreSQL server at `VNFM_TEST_PG_URL`, or undefined when it is
 * not set. Prefer {@link describeStores}, which reports an unavailable server through the `pg`
 * stage instead of leaving the decision to the caller.
 */
export async function testPgStore(): Promise<(TestStore & { dropAll(): Promise<void> }) | undefined> {
  if (!process.env.VNFM_TEST_PG_URL) return undefined;
  const s = await createPgStore();
  return Object.assign(s, { dropAll: () => s.close() });
}

/** Options of {@link describeStores}, passed to both suites. */
export interface DescribeStoresOptions {
  timeout?: number;
  concurrency?: number;
}

/**
 * Declares `body` once per database kind: `${title} (PGlite)` and `${title} (PostgreSQL)`. The
 * PostgreSQL suite is skipped through the `pg` stage when no server is configured (the runner names
 * it); when `VNFM_TEST_REQUIRE` names `pg` and it cannot run, this throws, so the file fails.
 * Await it at the top level of the test file (the stage is probed before any suite is declared).
 */
export async function describeStores(title: string, body: (env: StoreEnv) => void, opts: DescribeStoresOptions = {}): Promise<void> {
  const pgStage = await stage('pg');
  for (const kind of STORE_KINDS) {
    const label = STORE_LABELS[kind];
    const skip = kind === 'postgres' ? pgStage.skip : false;
    describe(`${title} (${label})`, { ...opts, skip }, () => {
      const opened: TestStore[] = [];
      const env: StoreEnv =
        kind === 'pglite'
          ? {
              kind,
              label,
              async open() {
                const s = await testStore();
                const t: TestStore = { db: s.db, kind: s.kind, close: once(() => s.close()) };
                opened.push(t);
                return t;
              },
            }
          : {
              kind,
              label,
              async open() {
                const s = await createPgStore();
                opened.push(s);
                return s;
              },
              async openSecond(of) {
                const s = await openSecondPool(of);
                opened.push(s);
                return s;
              },
            };
      body(env);
      // Registered after the body's hooks, so it runs after them (they may still use the stores).
      after(async () => {
        for (const s of opened.splice(0).reverse()) await s.close();
      });
    });
  }
}
