/**
 * After-commit hooks (src/store/after-commit.ts) on the store's database: a hook registered in a
 * transaction runs once the transaction committed (its rows visible to another reader), never when
 * it rolls back; on the plain database it runs at once.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { afterCommit } from '../../src/store/after-commit.ts';
import type { Store } from '../../src/store/db.ts';
import { testStore } from '../helpers/db.ts';

describe('after-commit hooks', () => {
  let store: Store;
  before(async () => {
    store = await testStore();
    await sql`create table t_after_commit (v int)`.execute(store.db);
  });
  after(() => store.close());

  it('runs after the commit, when the transaction’s rows are visible', async () => {
    const seen: number[] = [];
    let ranInside = false;
    await store.db.transaction().execute(async (tx) => {
      await sql`insert into t_after_commit values (1)`.execute(tx);
      afterCommit(tx, () => {
        seen.push(-1);
        void store.db.selectFrom('t_after_commit' as never).select(sql<number>`count(*)::int`.as('n')).executeTakeFirstOrThrow().then((r) => seen.push((r as { n: number }).n));
      });
      ranInside = seen.length > 0;
    });
    assert.equal(ranInside, false);
    assert.deepEqual(seen.slice(0, 1), [-1]);
    await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(seen, [-1, 1]);
  });

  it('never runs when the transaction rolls back', async () => {
    let ran = false;
    await assert.rejects(
      store.db.transaction().execute(async (tx) => {
        afterCommit(tx, () => {
          ran = true;
        });
        throw new Error('boom');
      }),
      /boom/,
    );
    assert.equal(ran, false);
  });

  it('keeps the hooks through setIsolationLevel, and runs at once on the plain database', async () => {
    let ran = 0;
    await store.db
      .transaction()
      .setIsolationLevel('serializable')
      .execute(async (tx) => {
        afterCommit(tx, () => ran++);
        assert.equal(ran, 0);
      });
    assert.equal(ran, 1);
    afterCommit(store.db, () => ran++);
    assert.equal(ran, 2);
  });
});
