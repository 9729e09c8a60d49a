/**
 * The management runtime as a built-in driver sees it, through the HTTP API with the fake infra
 * driver: binding by artifact property (the package script of a claimed hook does not run),
 * validation at acceptance (400/422 and no op occ), secrets sealed at rest and masked in every
 * body, engine-resolved heal targets with old and new resource ids, journaled steps resumed after
 * a retryable failure, progress on the op occ, instance-scoped sealed state, vimConnectionInfo
 * entries added by a driver, the stored instantiate parameters, and resource locks.
 */
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { retryableError, vnfmError } from '../../src/errors.ts';
import { MgmtStore } from '../../src/lcm/mgmt-context.ts';
import type { HookArtifact, MgmtContext, MgmtDriver, MgmtResult, MgmtTarget, MgmtValidation } from '../../src/mgmt/mgmt-driver.ts';
import { type TestVnfm, testVnfm } from '../helpers/app.ts';
import { FAKE_VIM, FakeDriver } from '../helpers/fake-driver.ts';
import { ROOT, csarOf, onboard } from '../helpers/packages.ts';

const V2 = { version: '2.0.0' };
const PASSWORD = 'cluster-pw-5f1e9a';
const TOKEN = 'cluster-token-77ab31';

/** What the test driver saw, per hook. */
interface Seen {
  hook: string;
  targets: MgmtTarget[];
  params: Record<string, unknown>;
  instantiateParams: Record<string, unknown>;
}

class TestBuiltin implements MgmtDriver {
  readonly name = 'test-builtin';
  seen: Seen[] = [];
  stepRuns: Record<string, number> = {};
  failHealStartOnce = true;
  /** Resolves when heal_end reported progress; the test then reads the op occ. */
  progressed?: () => void;
  holdHealEnd?: Promise<void>;

  claims(a: HookArtifact): boolean {
    return a.properties.healvnfm_driver === 'test-builtin';
  }
  async validate(v: MgmtValidation): Promise<void> {
    const cluster = v.params.cluster as { password?: unknown } | undefined;
    if (v.command.operation === 'INSTANTIATE' && typeof cluster?.password !== 'string') throw vnfmError('VNFM_ERR_API_BAD_REQUEST', 'additionalParams.cluster.password is required');
    if (v.params.refuse === true) throw vnfmError('VNFM_ERR_MGMT_REFUSED', 'refused by the test driver');
  }
  applies(): boolean {
    return true;
  }
  async run(ctx: MgmtContext): Promise<MgmtResult | void> {
    this.seen.push({ hook: ctx.hook, targets: ctx.targets, params: ctx.params, instantiateParams: ctx.instantiateParams });
    const count = (n: string) => async () => {
      this.stepRuns[n] = (this.stepRuns[n] ?? 0) + 1;
      return n;
    };
    if (ctx.hook === 'instantiate_end') {
      await ctx.step('install', count('install'));
      await ctx.instanceState.save({ pins: { a: 'SHA256:abc' }, token: TOKEN });
      const v = await ctx.vims.register({ name: `cluster-${ctx.instance.id}`, type: 'kubernetes', auth_url: 'https://10.0.0.1:6443', auth_cred: { bearer_token: TOKEN } });
      return { vnfInfoMetadata: { k8sCluster: { vimId: v.id } }, vimConnectionInfo: { add: { k8s: { vimId: v.id, vimType: 'kubernetes' } } } };
    }
    if (ctx.hook === 'heal_start') {
      await ctx.step('drain', count('drain'));
      if (this.failHealStartOnce) {
        this.failHealStartOnce = false;
        throw retryableError('VNFM_ERR_SSH_UNREACHABLE', 'host did not answer (test)');
      }
      await ctx.step('remove-member', count('remove-member'));
      assert.deepEqual(await ctx.instanceState.get(), { pins: { a: 'SHA256:abc' }, token: TOKEN });
    }
    if (ctx.hook === 'heal_end') {
      ctx.progress({ step: 'join', node: 'worker12', detail: 'kubeadm join' });
      this.progressed?.();
      await this.holdHealEnd;
      return { instantiateParams: { cluster: { password: `${PASSWORD}-new` } } };
    }
  }
  idempotent(): boolean {
    return true;
  }
}

describe('management runtime (built-in driver)', () => {
  let vnfm: TestVnfm;
  let work: string;
  let vnfdId: string;
  const drv = new TestBuiltin();

  before(async () => {
    work = mkdtempSync(join(tmpdir(), 'vnfm-mgmt-rt-'));
    cpSync(join(ROOT, 'samples/vm-basic'), join(work, 'pkg'), { recursive: true });
    const df = join(work, 'pkg/Definitions/sample_vnf_df_simple.yaml');
    const text = readFileSync(df, 'utf8')
      .replace('          heal_end:\n            implementation: noop-hook', '          heal_start:\n            implementation: cluster-driver\n          heal_end:\n            implementation: cluster-driver')
      .replace('          instantiate_end:\n            implementation: noop-hook', '          instantiate_end:\n            implementation: cluster-driver')
      .replace(
        '      artifacts:\n',
        "      artifacts:\n        cluster-driver:\n          type: tosca.artifacts.Implementation.Python\n          file: ../Scripts/cluster_mgmt.py\n          properties:\n            healvnfm_driver: test-builtin\n",
      );
    writeFileSync(df, text);
    // A script that would fail loudly if it ever ran: claimed hooks are not run as scripts.
    writeFileSync(join(work, 'pkg/Scripts/cluster_mgmt.py'), 'import sys\nsys.exit(7)\n');
    const fake = new FakeDriver();
    vnfm = await testVnfm({
      plugins: [
        (ctx) => {
          ctx.engine?.drivers.register(fake);
          ctx.engine?.mgmt.register(drv);
        },
      ],
      config: { runner: { pollMs: 20, leaseMs: 60_000, stepRetries: { maxAttempts: 3, baseDelayMs: 10, maxDelayMs: 20 } } },
    });
    const pkg = await onboard(vnfm.app, csarOf(join(work, 'pkg')), () => vnfm.ctx.packages.idle());
    vnfdId = pkg.vnfdId as string;
  });
  after(async () => {
    await vnfm?.close();
    rmSync(work, { recursive: true, force: true });
  });

  const settle = () => vnfm.ctx.engine?.runner.idle();
  const post = (url: string, payload: unknown) => vnfm.app.inject({ method: 'POST', url, headers: V2, payload: payload as object });
  const get = async (url: string) => (await vnfm.app.inject({ method: 'GET', url, headers: V2 })).json();
  const opCount = async () => (await vnfm.store.db.selectFrom('op_occ').select('id').execute()).length;

  let instanceId = '';
  let opId = '';

  it('refuses bad driver parameters at acceptance: 400, no op occ', async () => {
    const c = await post('/vnflcm/v2/vnf_instances', { vnfdId });
    instanceId = c.json().id;
    const before = await opCount();
    const r = await post(`/vnflcm/v2/vnf_instances/${instanceId}/instantiate`, { flavourId: 'simple', vimConnectionInfo: { vim1: FAKE_VIM }, additionalParams: { cluster: {} } });
    assert.equal(r.statusCode, 400, r.body);
    assert.match(r.json().detail, /cluster\.password is required/);
    assert.equal(await opCount(), before);
  });

  it('instantiates: the driver registers a VIM and adds a vimConnectionInfo entry; secrets are masked and sealed', async () => {
    const r = await post(`/vnflcm/v2/vnf_instances/${instanceId}/instantiate`, { flavourId: 'simple', vimConnectionInfo: { vim1: FAKE_VIM }, additionalParams: { cluster: { username: 'ubuntu', password: PASSWORD } } });
    assert.equal(r.statusCode, 202, r.body);
    opId = String(r.headers.location).split('/').pop() as string;
    await settle();
    const occ = await get(`/vnflcm/v2/vnf_lcm_op_occs/${opId}`);
    assert.equal(occ.operationState, 'COMPLETED', JSON.stringify(occ.error));
    assert.equal(occ.operationParams.additionalParams.cluster.password, '****');
    assert.equal(occ.operationParams.additionalParams.cluster.username, 'ubuntu');
    const inst = await get(`/vnflcm/v2/vnf_instances/${instanceId}`);
    const vimId = inst.instantiatedVnfInfo.metadata.k8sCluster.vimId;
    assert.ok(vimId);
    assert.equal(inst.vimConnectionInfo.k8s.vimId, vimId);
    assert.ok(inst.vimConnectionInfo.vim1, 'the VM VIM entry stays');
    assert.equal(drv.stepRuns.install, 1);
    assert.equal(drv.seen.find((s) => s.hook === 'instantiate_end')?.params.cluster && (drv.seen[0]?.params.cluster as { password: string }).password, PASSWORD, 'the driver gets the secret in clear');
    // At rest: neither the password nor the token in any table.
    for (const table of ['op_occ', 'vnf_instance', 'mgmt_state', 'vim'] as const) {
      const dump = JSON.stringify(await vnfm.store.db.selectFrom(table).selectAll().execute());
      assert.ok(!dump.includes(PASSWORD), `password not in ${table}`);
      assert.ok(!dump.includes(TOKEN), `token not in ${table}`);
    }
    assert.ok(!vnfm.logs.join('').includes(PASSWORD), 'password not logged');
  });

  it('heals a VNFC: targets with old and new resource ids, journaled steps resumed after a retryable failure, progress shown, overrides persisted', async () => {
    const inst = await get(`/vnflcm/v2/vnf_instances/${instanceId}`);
    const vnfc = inst.instantiatedVnfInfo.vnfcInfo[0];
    const res = inst.instantiatedVnfInfo.vnfcResourceInfo.find((r: { id: string }) => r.id === vnfc.vnfcResourceInfoId);
    let release: () => void = () => undefined;
    drv.holdHealEnd = new Promise((r) => {
      release = r;
    });
    const progressed = new Promise<void>((r) => {
      drv.progressed = r;
    });
    const r = await post(`/vnflcm/v2/vnf_instances/${instanceId}/heal`, { vnfcInstanceId: [vnfc.id] });
    assert.equal(r.statusCode, 202, r.body);
    const healOp = String(r.headers.location).split('/').pop() as string;
    await progressed;
    // The progress write is throttled (at most one per second): wait for it to land.
    let occ = await get(`/vnflcm/v2/vnf_lcm_op_occs/${healOp}`);
    for (let i = 0; i < 300 && !occ.vnfmProgress; i++) {
      await new Promise((res) => setTimeout(res, 20));
      occ = await get(`/vnflcm/v2/vnf_lcm_op_occs/${healOp}`);
    }
    assert.equal(occ.operationState, 'PROCESSING');
    assert.equal(occ.vnfmProgress.hook, 'heal_end');
    assert.equal(occ.vnfmProgress.step, 'join');
    assert.equal(occ.vnfmProgress.node, 'worker12');
    release();
    await settle();
    occ = await get(`/vnflcm/v2/vnf_lcm_op_occs/${healOp}`);
    assert.equal(occ.operationState, 'COMPLETED', JSON.stringify(occ.error));
    assert.equal(occ.vnfmProgress, undefined, 'no progress once finished');
    assert.equal(drv.stepRuns.drain, 1, 'the step done before the failure is not run again');
    assert.equal(drv.stepRuns['remove-member'], 1);
    const starts = drv.seen.filter((s) => s.hook === 'heal_start');
    assert.equal(starts.length, 2, 'heal_start ran twice (the retry)');
    const t = starts[0]?.targets[0];
    assert.deepEqual({ id: t?.vnfcInfoId, change: t?.change, old: t?.oldResourceId }, { id: vnfc.id, change: 'heal', old: res.computeResource.resourceId });
    assert.equal((starts[0]?.instantiateParams.cluster as { password: string }).password, PASSWORD, 'stored instantiate params, secrets opened');
    const end = drv.seen.find((s) => s.hook === 'heal_end');
    assert.equal(end?.targets[0]?.oldResourceId, res.computeResource.resourceId);
    assert.ok(end?.targets[0]?.newResourceId && end.targets[0].newResourceId !== res.computeResource.resourceId, 'the new resource id after the infra step');
    // The override the driver asked to keep applies to later operations.
    const st = new MgmtStore(vnfm.store.db, vnfm.ctx.box, vnfm.ctx.vims);
    assert.equal(((await st.instantiateParams(instanceId)).cluster as { password: string }).password, `${PASSWORD}-new`);
    assert.equal(((await st.instantiateParams(instanceId)).cluster as { username: string }).username, 'ubuntu');
    for (const table of ['op_occ', 'mgmt_state'] as const) {
      const dump = JSON.stringify(await vnfm.store.db.selectFrom(table).selectAll().execute());
      assert.ok(!dump.includes(`${PASSWORD}-new`), `the new password is not in ${table} in clear`);
    }
  });

  it('a driver refusal at acceptance is a 422 and creates no op occ', async () => {
    const inst = await get(`/vnflcm/v2/vnf_instances/${instanceId}`);
    const before = await opCount();
    const r = await post(`/vnflcm/v2/vnf_instances/${instanceId}/heal`, { vnfcInstanceId: [inst.instantiatedVnfInfo.vnfcInfo[0].id], additionalParams: { refuse: true } });
    assert.equal(r.statusCode, 422, r.body);
    assert.match(r.json().detail, /refused by the test driver/);
    assert.equal(await opCount(), before);
  });

  it('locks: a key held by a running op makes another op wait until released; a finished holder loses it', async () => {
    const st = new MgmtStore(vnfm.store.db, vnfm.ctx.box, vnfm.ctx.vims);
    // Make the instantiate op look like a running one holding the lock.
    await vnfm.store.db.updateTable('op_occ').set({ operation_state: 'PROCESSING', lease_owner: 'someone' }).where('id', '=', opId).execute();
    try {
      const releaseA = await st.lock('lb:10.0.0.9', opId, new AbortController().signal, 10);
      let bHolds = false;
      const b = st.lock('lb:10.0.0.9', 'op-b', new AbortController().signal, 10).then((rel) => {
        bHolds = true;
        return rel;
      });
      // B keeps waiting while A holds the key (a few of its polls pass).
      const row = () => vnfm.store.db.selectFrom('mgmt_lock').select('op_occ_id').where('key', '=', 'lb:10.0.0.9').executeTakeFirst();
      for (let i = 0; i < 5; i++) {
        await new Promise((res) => setTimeout(res, 15));
        assert.equal((await row())?.op_occ_id, opId);
        assert.equal(bHolds, false);
      }
      await releaseA();
      const releaseB = await b;
      assert.equal((await row())?.op_occ_id, 'op-b');
      await releaseB();
      assert.equal(await row(), undefined);
    } finally {
      await vnfm.store.db.updateTable('op_occ').set({ operation_state: 'COMPLETED', lease_owner: null }).where('id', '=', opId).execute();
    }
    // A holder that is not running (COMPLETED) does not block.
    await vnfm.store.db.insertInto('mgmt_lock').values({ key: 'ansible:1', op_occ_id: opId }).execute();
    const rel = await st.lock('ansible:1', 'op-c', new AbortController().signal, 10);
    await rel();
  });
});
