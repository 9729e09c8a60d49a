/**
 * Opens the database: embedded PGlite in a data directory by default, PostgreSQL via `pg` when a
 * URL is configured. One SQL dialect (PostgreSQL) either way, migrated at open. An embedded data
 * directory is locked for this process (src/store/data-dir-lock.ts): a second process on it fails
 * to open with {@link DataDirLockedError}.
 */
import { mkdirSync } from 'node:fs';
import { PGlite } from '@electric-sql/pglite';
import { Kysely, type KyselyPlugin, PostgresDialect } from 'kysely';
import { migrateToLatest } from './migrations/index.ts';
import { StoreKysely } from './after-commit.ts';
import { PGliteDialect } from './pglite-dialect.ts';
import { acquireDataDirLock, type LockHolder } from './data-dir-lock.ts';
import type { Database } from './schema.ts';
import { TurnGate } from './turn-gate.ts';

/** An open database handle with what kind it is (some behaviours, e.g. advisory waits, differ). */
export interface Store {
  db: Kysely<Database>;
  kind: 'pglite' | 'postgres';
  /**
   * PostgreSQL: a connection pool of its own (2 connections, no turn gate) for lease renewals, so
   * that a heartbeat never queues behind the API's and the workers' queries. Absent on the
   * embedded database (one process: leases only fence that process's own executors).
   */
  leaseDb?: Kysely<Database>;
  close(): Promise<void>;
  /** Size of the embedded database's WebAssembly linear memory (PGlite only; metrics). */
  wasmMemoryBytes?(): number;
}

/** Options of {@link openStore}. */
export interface StoreOptions {
  /** PostgreSQL URL; when absent, PGlite is used. */
  databaseUrl?: string | undefined;
  /** PGlite data directory; `memory://` for a throwaway database. */
  dataDir?: string | undefined;
  /** A PGlite data-dir dump to start from (tests: a pre-migrated template). */
  loadDataDir?: Blob | undefined;
  /** Called when an idle PostgreSQL connection fails (logged by the caller). */
  onPoolError?: (e: Error) => void;
  /** Skip migrations (the template is already migrated). @default false */
  skipMigrations?: boolean;
  /** Memory settings of the embedded database (PGlite only); defaults {@link EMBEDDED_DEFAULTS}. */
  embedded?: { sharedBuffers?: string | undefined; workMem?: string | undefined } | undefined;
  /** Called when the data directory's lock was left by a dead process and is taken over (logged by the caller). */
  onStaleLock?: (stale: LockHolder, file: string) => void;
}

export { DataDirLockedError } from './data-dir-lock.ts';

/**
 * Memory settings of the embedded database. PostgreSQL's shared buffers live inside PGlite's
 * WebAssembly memory, which grows and never shrinks: PGlite's default (128 MB) grows that memory
 * from 128 to ~190 MB and adds ~140 MB of RSS with 10,000 instances; 32 MB keeps the linear memory at
 * its initial 128 MB, and reads beyond the buffers come from the operating system's file cache
 * (docs/benchmarks.md, "Restart"). They apply when an existing data directory is opened; the
 * process that creates one (and a `memory://` database) keeps the 128 MB its initdb wrote.
 */
export const EMBEDDED_DEFAULTS = { sharedBuffers: '32MB', workMem: '4MB' } as const;

/**
 * PostgreSQL answers arrive on the pool's sockets, many in one turn of the event loop under load;
 * what the caller does with each (building and sending a response) is synchronous work. Each
 * answer is handed on in its own {@link TurnGate} turn, so sockets are read in between.
 */
function turnPerResult(gate: TurnGate): KyselyPlugin {
  return {
    transformQuery: (args) => args.node,
    transformResult: async (args) => {
      await gate.pass();
      return args.result;
    },
  };
}

/** Opens and migrates the database. */
export async function openStore(opts: StoreOptions): Promise<Store> {
  if (opts.databaseUrl) {
    // the PostgreSQL client is loaded only for a PostgreSQL database (start-up of the embedded one)
    const { default: pg } = await import('pg');
    const pool = new pg.Pool({ connectionString: opts.databaseUrl, max: 10 });
    // An idle connection dropped by the server (restart, failover, admin kill) must not crash the
    // process: the pool discards it and the next query opens a new one.
    pool.on('error', (e) => opts.onPoolError?.(e));
    const db: Kysely<Database> = new StoreKysely<Database>({ dialect: new PostgresDialect({ pool }), plugins: [turnPerResult(new TurnGate())] });
    if (!opts.skipMigrations) await migrateToLatest(db as Kysely<unknown>);
    const leasePool = new pg.Pool({ connectionString: opts.databaseUrl, max: 2 });
    leasePool.on('error', (e) => opts.onPoolError?.(e));
    const leaseDb = new Kysely<Database>({ dialect: new PostgresDialect({ pool: leasePool }) });
    return {
      db,
      leaseDb,
      kind: 'postgres',
      close: async () => {
        try {
          await db.destroy();
        } finally {
          await leaseDb.destroy();
        }
      },
    };
  }
  const dir = opts.dataDir ?? 'memory://';
  const onDisk = !dir.startsWith('memory://');
  if (onDisk) mkdirSync(dir, { recursive: true });
  // One process per embedded data directory: taken before PGlite touches a file, released at close.
  const lock = onDisk ? acquireDataDirLock(dir, opts.onStaleLock ? { onStale: opts.onStaleLock } : {}) : undefined;
  try {
    const settings = ['-c', `shared_buffers=${opts.embedded?.sharedBuffers ?? EMBEDDED_DEFAULTS.sharedBuffers}`, '-c', `work_mem=${opts.embedded?.workMem ?? EMBEDDED_DEFAULTS.workMem}`];
    const pglite = new PGlite(onDisk ? dir : undefined, { startParams: [...PGlite.defaultStartParams, ...settings], ...(opts.loadDataDir ? { loadDataDir: opts.loadDataDir } : {}) });
    await pglite.waitReady;
    const db: Kysely<Database> = new StoreKysely<Database>({ dialect: new PGliteDialect(pglite) });
    if (!opts.skipMigrations) await migrateToLatest(db as Kysely<unknown>);
    return {
      db,
      kind: 'pglite',
      wasmMemoryBytes: () => (pglite as unknown as { mod?: { wasmMemory?: WebAssembly.Memory } }).mod?.wasmMemory?.buffer.byteLength ?? 0,
      close: async () => {
        try {
          await db.destroy();
        } finally {
          lock?.release();
        }
      },
    };
  } catch (e) {
    lock?.release();
    throw e;
  }
}

/** Serializes a value for a jsonb column. */
export function json(v: unknown): string {
  return JSON.stringify(v ?? null);
}
