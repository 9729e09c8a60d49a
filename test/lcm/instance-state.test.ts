/**
 * The one writer of `vnf_instance` rows (src/lcm/instance-state.ts) and its concurrency rule: every
 * write is a compare-and-set on `rev`. A write based on a stale read changes nothing, is refused
 * with 409 VNFM_ERR_INST_BUSY and rolls back the rest of its transaction; of two writers that read
 * the same `rev`, exactly one wins; every change increments `rev`.
 */
import assert from 'node:assert/strict';
import { before, it } from 'node:test';
import { isVnfmError } from '../../src/errors.ts';
import { createInstanceRow, deleteInstanceRow, updateInstanceRow } from '../../src/lcm/instance-state.ts';
import { json } from '../../src/store/db.ts';
import { type TestStore, describeStores } from '../helpers/db.ts';

const PKG = { vnfdId: 'vnfd-1', vnfPkgId: 'pkg-1', vnfProvider: 'Company', vnfProductName: 'Sample', vnfSoftwareVersion: '1.0', vnfdVersion: '1.0' };

function busy(e: unknown): boolean {
  return isVnfmError(e, 'VNFM_ERR_INST_BUSY');
}

await describeStores('instance rows: one writer, compare-and-set on rev', (env) => {
  let store: TestStore;
  let n = 0;

  before(async () => {
    store = await env.open();
    await store.db
      .insertInto('vnf_package')
      .values({ id: 'pkg-1', onboarding_state: 'ONBOARDED', operational_state: 'ENABLED', usage_state: 'IN_USE', checksum: json(null), user_defined_data: json({}), vnfd: json(null) })
      .execute();
  });

  async function newInstance(): Promise<string> {
    const id = `inst-${++n}`;
    await store.db.transaction().execute((tx) =>
      createInstanceRow(tx, { id, ...PKG, vnfInstanceName: 'a', vnfInstanceDescription: null, vimConnectionInfo: {}, vimSecrets: 'sealed', metadata: { k: 1 }, createdApi: 'v2', project: null }),
    );
    return id;
  }

  async function row(id: string) {
    return store.db.selectFrom('vnf_instance').select(['rev', 'vnf_instance_name', 'instantiation_state', 'metadata', 'instantiated_vnf_info']).where('id', '=', id).executeTakeFirst();
  }

  it('creates NOT_INSTANTIATED at rev 0; a write at the current rev applies and increments it', async () => {
    const id = await newInstance();
    assert.deepEqual(await row(id), { rev: 0, vnf_instance_name: 'a', instantiation_state: 'NOT_INSTANTIATED', metadata: { k: 1 }, instantiated_vnf_info: null });
    const rev = await store.db.transaction().execute((tx) => updateInstanceRow(tx, id, 0, { vnfInstanceName: 'b', instantiationState: 'INSTANTIATED', instantiatedVnfInfo: { flavourId: 'simple', vnfState: 'STARTED' } }));
    assert.equal(rev, 1);
    assert.deepEqual(await row(id), { rev: 1, vnf_instance_name: 'b', instantiation_state: 'INSTANTIATED', metadata: { k: 1 }, instantiated_vnf_info: { flavourId: 'simple', vnfState: 'STARTED' } });
  });

  it('refuses a write based on a stale rev (409, nothing written) and rolls back the rest of its transaction', async () => {
    const id = await newInstance();
    await store.db.transaction().execute((tx) => updateInstanceRow(tx, id, 0, { metadata: { k: 2 } }));
    await assert.rejects(
      store.db.transaction().execute(async (tx) => {
        // another write of the same transaction (as an op occ change would be)
        await tx.updateTable('vnf_package').set({ usage_state: 'NOT_IN_USE' }).where('id', '=', 'pkg-1').execute();
        await updateInstanceRow(tx, id, 0, { metadata: { k: 3 } }, 'custom detail');
      }),
      (e) => busy(e) && (e as Error).message === 'custom detail',
    );
    assert.deepEqual(await row(id), { rev: 1, vnf_instance_name: 'a', instantiation_state: 'NOT_INSTANTIATED', metadata: { k: 2 }, instantiated_vnf_info: null });
    const pkg = await store.db.selectFrom('vnf_package').select('usage_state').where('id', '=', 'pkg-1').executeTakeFirstOrThrow();
    assert.equal(pkg.usage_state, 'IN_USE');
  });

  it('of two writers that read the same rev, exactly one wins', async () => {
    const id = await newInstance();
    const results = await Promise.allSettled(
      ['x', 'y'].map((name) =>
        store.db.transaction().execute(async (tx) => {
          await updateInstanceRow(tx, id, 0, { vnfInstanceName: name });
          return name;
        }),
      ),
    );
    const won = results.filter((r) => r.status === 'fulfilled').map((r) => (r as PromiseFulfilledResult<string>).value);
    const lost = results.filter((r) => r.status === 'rejected');
    assert.equal(won.length, 1);
    assert.equal(lost.length, 1);
    assert.ok(busy((lost[0] as PromiseRejectedResult).reason));
    const r = await row(id);
    assert.equal(r?.rev, 1);
    assert.equal(r?.vnf_instance_name, won[0]);
  });

  it('deletes only at the current rev', async () => {
    const id = await newInstance();
    await store.db.transaction().execute((tx) => updateInstanceRow(tx, id, 0, { vnfInstanceDescription: 'd' }));
    await assert.rejects(
      store.db.transaction().execute((tx) => deleteInstanceRow(tx, id, 0)),
      busy,
    );
    assert.ok(await row(id));
    await store.db.transaction().execute((tx) => deleteInstanceRow(tx, id, 1));
    assert.equal(await row(id), undefined);
  });

  it('a write to an instance that is gone is refused too', async () => {
    await assert.rejects(
      store.db.transaction().execute((tx) => updateInstanceRow(tx, 'no-such-instance', 0, { metadata: null })),
      busy,
    );
  });
});
