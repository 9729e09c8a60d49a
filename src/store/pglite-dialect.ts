/**
 * A small Kysely dialect over PGlite (PostgreSQL in WASM). Kysely 0.28 has none; ours serializes
 * every connection on PGlite's single session, so a transaction holds the session exclusively,
 * exactly like one PostgreSQL connection. SQL, jsonb and `FOR UPDATE SKIP LOCKED` are the same as
 * in production.
 */
import type { PGlite } from '@electric-sql/pglite';
import {
  type CompiledQuery,
  type DatabaseConnection,
  type Dialect,
  type Driver,
  type Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type QueryResult,
  type TransactionSettings,
} from 'kysely';
import { TurnGate } from './turn-gate.ts';

/** PostgreSQL's type OID of `bytea`. */
const BYTEA_OID = 17;

/**
 * `bytea` to and from PostgreSQL's hex text format in native code. PGlite's own codec goes through
 * a JavaScript string per byte (`Array.from(bytes).map(...)`, `parseInt` per pair), about 2 s per
 * MiB of package content on the event loop; `Buffer`'s hex codec does the same in well under 1 ms
 * per MiB.
 */
export const BYTEA_CODEC = {
  serializers: {
    [BYTEA_OID]: (v: unknown): string => {
      if (!(v instanceof Uint8Array)) throw new Error('Invalid input for bytea type');
      return `\\x${Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('hex')}`;
    },
  },
  parsers: {
    // The hex format (`\x...`, PostgreSQL's default bytea_output) is the only one PGlite sends.
    [BYTEA_OID]: (text: string): Buffer => Buffer.from(text.startsWith('\\x') ? text.slice(2) : text, 'hex'),
  },
};

/** A bytea parameter from this size on goes to PGlite as a file ({@link viaBlob}), not as hex text. */
export const BLOB_PARAM_MIN_BYTES = 64 * 1024;

/**
 * Rewrites a query whose one large `bytea` parameter (a package upload) is better handed over as
 * PGlite's `/dev/blob` file: its hex text would still be measured and copied character by
 * character by PGlite's protocol writer (~0.5 s per MiB on the event loop). `$n` becomes
 * `(pg_read_binary_file('/dev/blob') || $n::bytea)` with `$n` bound to empty bytes, so the
 * parameter numbering stays as Kysely compiled it. Undefined when the query has no such parameter
 * (or several).
 */
function viaBlob(sql: string, params: readonly unknown[]): { sql: string; params: unknown[]; blob: Blob } | undefined {
  let at = -1;
  for (let i = 0; i < params.length; i++) {
    const p = params[i];
    if (p instanceof Uint8Array && p.byteLength >= BLOB_PARAM_MIN_BYTES) {
      if (at >= 0) return undefined;
      at = i;
    }
  }
  if (at < 0) return undefined;
  const ref = new RegExp(`\\$${at + 1}(?![0-9])`, 'g');
  if (!ref.test(sql)) return undefined;
  const out = [...params];
  const bytes = out[at] as Uint8Array;
  out[at] = Buffer.alloc(0);
  return { sql: sql.replace(ref, `(pg_read_binary_file('/dev/blob') || $${at + 1}::bytea)`), params: out, blob: new Blob([bytes as Uint8Array<ArrayBuffer>]) };
}

class PGliteConnection implements DatabaseConnection {
  constructor(private readonly db: PGlite) {}

  async executeQuery<R>(q: CompiledQuery): Promise<QueryResult<R>> {
    const big = viaBlob(q.sql, q.parameters);
    const res = big
      ? await this.db.query<R>(big.sql, big.params, { rowMode: 'object', ...BYTEA_CODEC, blob: big.blob })
      : await this.db.query<R>(q.sql, q.parameters as unknown[], { rowMode: 'object', ...BYTEA_CODEC });
    const affected = res.affectedRows;
    return {
      rows: res.rows,
      ...(affected !== undefined && affected !== null ? { numAffectedRows: BigInt(affected) } : {}),
    };
  }

  // biome-ignore lint/correctness/useYield: streaming is not supported by PGlite
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('streaming queries are not supported on PGlite');
  }
}

/**
 * Serializes access to the single PGlite session. PGlite runs a query synchronously on the event
 * loop's thread, so a holder also waits for its {@link TurnGate} turn: the queries of many
 * requests do not run back to back in one turn while other sockets wait.
 */
class Mutex {
  private tail: Promise<void> = Promise.resolve();
  constructor(private readonly gate: TurnGate) {}
  async lock(): Promise<() => void> {
    let release!: () => void;
    const next = new Promise<void>((r) => {
      release = r;
    });
    const prev = this.tail;
    this.tail = prev.then(() => next);
    await prev;
    await this.gate.pass();
    return release;
  }
}

class PGliteDriver implements Driver {
  private readonly mutex: Mutex;
  private readonly releases = new WeakMap<DatabaseConnection, () => void>();
  private readonly conn: PGliteConnection;

  constructor(
    private readonly db: PGlite,
    gate: TurnGate,
  ) {
    this.conn = new PGliteConnection(db);
    this.mutex = new Mutex(gate);
  }

  async init(): Promise<void> {
    await this.db.waitReady;
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    const release = await this.mutex.lock();
    // One connection object per acquisition so release maps stay exact.
    const c = Object.create(this.conn) as PGliteConnection;
    this.releases.set(c, release);
    return c;
  }

  async beginTransaction(c: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    await c.executeQuery({ sql: settings.isolationLevel ? `begin isolation level ${settings.isolationLevel}` : 'begin', parameters: [] } as unknown as CompiledQuery);
  }

  async commitTransaction(c: DatabaseConnection): Promise<void> {
    await c.executeQuery({ sql: 'commit', parameters: [] } as unknown as CompiledQuery);
  }

  async rollbackTransaction(c: DatabaseConnection): Promise<void> {
    await c.executeQuery({ sql: 'rollback', parameters: [] } as unknown as CompiledQuery);
  }

  async releaseConnection(c: DatabaseConnection): Promise<void> {
    const release = this.releases.get(c);
    this.releases.delete(c);
    release?.();
  }

  async destroy(): Promise<void> {
    await this.db.close();
  }
}

/** Kysely dialect for a PGlite instance the caller created (in memory or with a data dir). */
export class PGliteDialect implements Dialect {
  constructor(
    private readonly db: PGlite,
    private readonly gate: TurnGate = new TurnGate(),
  ) {}
  createAdapter() {
    return new PostgresAdapter();
  }
  createDriver(): Driver {
    return new PGliteDriver(this.db, this.gate);
  }
  createQueryCompiler() {
    return new PostgresQueryCompiler();
  }
  createIntrospector(db: Kysely<unknown>) {
    return new PostgresIntrospector(db);
  }
}
