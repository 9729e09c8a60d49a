/**
 * After-commit hooks: work that must wait until a transaction's writes are visible to others (a
 * worker woken to read rows the transaction inserted). Hooks are keyed by the Kysely transaction
 * object; the store's database ({@link StoreKysely}, what `openStore` returns) runs them right
 * after `db.transaction().execute(...)` commits, and drops them when it rolls back. On the plain
 * database (no transaction: the statement already committed) a hook runs at once.
 */
import { type Kysely, Kysely as KyselyClass, type Transaction, type TransactionBuilder } from 'kysely';

/** The hooks of the transactions in progress that were started by a {@link StoreKysely}. */
const pending = new WeakMap<object, (() => void)[]>();

/**
 * Runs `fn` once the writes made through `db` are committed: at once for the plain database,
 * after the commit for a transaction started by the store's database (never, if it rolls back).
 * A transaction started elsewhere (no hook list) runs `fn` at once too, as the plain database.
 */
export function afterCommit<DB>(db: Kysely<DB> | Transaction<DB>, fn: () => void): void {
  const hooks = db.isTransaction ? pending.get(db) : undefined;
  if (hooks) hooks.push(fn);
  else fn();
}

/** Runs the hooks of a committed transaction; one that throws does not stop the others. */
function fire(hooks: (() => void)[]): void {
  for (const fn of hooks) {
    try {
      fn();
    } catch {
      // a hook only wakes a worker; its failure must not fail the committed transaction
    }
  }
}

/** A transaction builder whose `execute` runs the transaction's after-commit hooks. */
function withHooks<DB>(builder: TransactionBuilder<DB>): TransactionBuilder<DB> {
  const hooked = {
    setAccessMode: (...a: Parameters<TransactionBuilder<DB>['setAccessMode']>) => withHooks(builder.setAccessMode(...a)),
    setIsolationLevel: (...a: Parameters<TransactionBuilder<DB>['setIsolationLevel']>) => withHooks(builder.setIsolationLevel(...a)),
    execute: async <T>(callback: (trx: Transaction<DB>) => Promise<T>): Promise<T> => {
      let hooks: (() => void)[] | undefined;
      let tx: Transaction<DB> | undefined;
      try {
        const out = await builder.execute((t) => {
          tx = t;
          hooks = [];
          pending.set(t, hooks);
          return callback(t);
        });
        if (tx) pending.delete(tx);
        if (hooks?.length) fire(hooks);
        return out;
      } catch (e) {
        if (tx) pending.delete(tx);
        throw e;
      }
    },
  };
  return hooked as unknown as TransactionBuilder<DB>;
}

/** The store's Kysely database: its transactions run their {@link afterCommit} hooks. */
export class StoreKysely<DB> extends KyselyClass<DB> {
  override transaction(): TransactionBuilder<DB> {
    return withHooks(super.transaction());
  }
}
