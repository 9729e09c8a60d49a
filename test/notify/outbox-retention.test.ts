/**
 * Outbox retention: delivered and dead notifications older than the retention are purged, pending
 * ones never are.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { type NotifyVnfm, notifyVnfm } from './fixture.ts';

let v: NotifyVnfm;
before(async () => {
  v = await notifyVnfm({ config: { notifications: { retentionMs: 60_000 } } });
});
after(async () => {
  await v?.close();
});

it('purges old DELIVERED and DEAD rows, keeps PENDING and recent ones', async () => {
  const db = v.store.db;
  const old = new Date(Date.now() - 120_000);
  const row = (status: string, created: Date) => ({ subscription_id: 's', notification: '{}', status, attempts: 0, next_attempt_at: created, created_at: created });
  await db.insertInto('outbox').values([row('DELIVERED', old), row('DEAD', old), row('PENDING', old), row('DELIVERED', new Date())]).execute();
  const removed = await v.notify.worker.purge();
  assert.equal(removed, 2);
  const left = (await db.selectFrom('outbox').select('status').execute()).map((r) => r.status).sort();
  assert.deepEqual(left, ['DELIVERED', 'PENDING']);
});
