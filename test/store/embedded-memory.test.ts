/**
 * Memory at scale:
 *
 * - the embedded database restarts with `shared_buffers` 32MB and `work_mem` 4MB (or the configured
 *   `embeddedDatabase.*`) on an existing data directory, and reports its WebAssembly memory
 *   (`vnfm_db_wasm_memory_bytes`);
 * - `embeddedDatabase.*` configuration: defaults, env vars, validation;
 * - the drift sync's instance selection is done by the database (`instantiatedIdsByVimType`):
 *   only INSTANTIATED instances with a VIM connection of a wanted type, oldest first, on PGlite
 *   and PostgreSQL.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import pino from 'pino';
import { ConfigError, resolveConfig } from '../../src/config.ts';
import { VnfmMetrics } from '../../src/core/metrics.ts';
import { InstanceService } from '../../src/lcm/instance-service.ts';
import { json, openStore } from '../../src/store/db.ts';
import { type TestStore, describeStores } from '../helpers/db.ts';

describe('embedded database memory settings', () => {
  it('reopens a data directory with shared_buffers 32MB and work_mem 4MB, or the configured values; reports its WebAssembly memory', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'vnfm-embedded-memory-'));
    const settings = async (embedded?: { sharedBuffers: string; workMem: string }) => {
      const s = await openStore({ dataDir: dir, skipMigrations: true, ...(embedded ? { embedded } : {}) });
      try {
        const r = await sql<{ sb: string; wm: string }>`select current_setting('shared_buffers') as sb, current_setting('work_mem') as wm`.execute(s.db);
        return { ...(r.rows[0] as { sb: string; wm: string }), bytes: s.wasmMemoryBytes?.() ?? 0, metrics: await new VnfmMetrics({ wasmMemoryBytes: () => s.wasmMemoryBytes?.() ?? 0 }).registry.metrics() };
      } finally {
        await s.close();
      }
    };
    try {
      // the process that creates the data directory runs with what its initdb wrote; every later start with ours
      await settings();
      const d = await settings();
      assert.deepEqual([d.sb, d.wm], ['32MB', '4MB']);
      assert.ok(d.bytes >= 64 * 1024 * 1024, `WebAssembly memory reported (${d.bytes})`);
      assert.match(d.metrics, new RegExp(`vnfm_db_wasm_memory_bytes ${d.bytes}`));
      const c = await settings({ sharedBuffers: '16MB', workMem: '2MB' });
      assert.deepEqual([c.sb, c.wm], ['16MB', '2MB']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('embeddedDatabase.*: defaults, env vars, validation', () => {
    assert.deepEqual(resolveConfig({}).embeddedDatabase, { sharedBuffers: '32MB', workMem: '4MB' });
    assert.deepEqual(resolveConfig({ env: { VNFM_EMBEDDED_DATABASE_SHARED_BUFFERS: '128MB', VNFM_EMBEDDED_DATABASE_WORK_MEM: '512kB' } }).embeddedDatabase, { sharedBuffers: '128MB', workMem: '512kB' });
    for (const bad of ['32', '0MB', '32 MB', '32TB', '-1MB']) {
      assert.throws(() => resolveConfig({ flags: { embeddedDatabase: { sharedBuffers: bad } } }), (e: unknown) => e instanceof ConfigError && /embeddedDatabase\.sharedBuffers/.test(e.message), bad);
    }
  });
});

await describeStores('drift sync instance selection in SQL', (env) => {
  let store: TestStore;
  before(async () => {
    store = await env.open();
    await store.db.insertInto('vnf_package').values({ id: 'pkg-1', onboarding_state: 'ONBOARDED', operational_state: 'ENABLED', usage_state: 'IN_USE', checksum: json(null), user_defined_data: json({}), vnfd: json(null) }).execute();
    const K8S = 'ETSINFV.KUBERNETES.V_1';
    const OS = 'ETSINFV.OPENSTACK_KEYSTONE.V_3';
    const cases: [string, boolean, unknown][] = [
      ['i-k8s', true, { a: { vimType: K8S } }],
      ['i-both', true, { a: { vimType: OS }, b: { vimType: K8S } }],
      ['i-os', true, { a: { vimType: OS } }],
      ['i-k8s-not-inst', false, { a: { vimType: K8S } }],
      ['i-empty', true, {}],
      ['i-null-entry', true, { a: null, b: 'x' }],
      ['i-other-key', true, { a: { type: K8S } }],
    ];
    let n = 0;
    for (const [id, inst, vci] of cases) {
      await store.db
        .insertInto('vnf_instance')
        .values({
          id,
          vnfd_id: 'd',
          vnf_pkg_id: 'pkg-1',
          vnf_provider: 'p',
          vnf_product_name: 'n',
          vnf_software_version: '1',
          vnfd_version: '1',
          instantiation_state: inst ? 'INSTANTIATED' : 'NOT_INSTANTIATED',
          vim_connection_info: json(vci),
          instantiated_vnf_info: json(inst ? { flavourId: 'simple' } : null),
          created_api: 'v2',
          created_at: new Date(Date.UTC(2024, 0, 1) + n++ * 1000).toISOString(),
          rev: 0,
        } as never)
        .execute();
    }
  });
  after(async () => {
    await store?.close();
  });

  it('returns the ids of INSTANTIATED instances with a wanted VIM type, oldest first', async () => {
    const svc = new InstanceService(store.db, undefined as never, undefined as never, undefined as never, pino({ level: 'silent' }));
    assert.deepEqual(await svc.instantiatedIdsByVimType(['ETSINFV.KUBERNETES.V_1']), ['i-k8s', 'i-both']);
    assert.deepEqual(await svc.instantiatedIdsByVimType(['ETSINFV.KUBERNETES.V_1', 'ETSINFV.OPENSTACK_KEYSTONE.V_3']), ['i-k8s', 'i-both', 'i-os']);
    assert.deepEqual(await svc.instantiatedIdsByVimType([]), []);
  });
});
