/**
 * The LB reconciler against the real HAProxy of the lab's load-balancer host (stage `lab`): start
 * from nothing, owners added side by side, membership changes through the runtime API (no reload),
 * port changes with a validated reload (old port refused), an invalid file never applied, drift
 * found and corrected, owners removed independently.
 */
import assert from 'node:assert/strict';
import { createServer, connect, type Server } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { isVnfmError } from '../../../src/errors.ts';
import { acquireLabLock, type Lab, startLab } from '../../../src/lab/index.ts';
import { type LbFrontend, readLbState, reconcileNodeMembers, reconcileOwner, removeOwner } from '../../../src/mgmt/lb/index.ts';
import { connectSsh, type SshSession } from '../../../src/mgmt/ssh/ssh-executor.ts';
import { type OpenStackSim, startOpenStackSim } from '../../../src/sim/openstack/index.ts';
import { labTestsExclusive } from '../../helpers/lab-exclusive.ts';
import { stage } from '../../helpers/stages.ts';
import { until } from '../../helpers/wait.ts';

const lab = await stage('lab');
// One lab test file at a time (see test/helpers/lab-exclusive.ts).
if (!lab.skip) await labTestsExclusive();

/** What a TCP server at ip:port says before closing ('refused' when nothing listens). */
export function answer(ip: string, port: number): Promise<string> {
  return new Promise((resolve) => {
    const s = connect({ host: ip, port });
    let text = '';
    s.setTimeout(5000, () => {
      s.destroy();
      resolve(`timeout after ${JSON.stringify(text)}`);
    });
    s.on('data', (d) => {
      text += d.toString();
    });
    s.once('end', () => resolve(text));
    s.once('error', (e: NodeJS.ErrnoException) => resolve(e.code === 'ECONNREFUSED' ? 'refused' : `error ${e.code}`));
  });
}

describe('LB reconciler on the lab\'s load-balancer host (real HAProxy)', { skip: lab.skip }, () => {
  let release: () => void;
  let os: OpenStackSim;
  let theLab: Lab;
  let lb: SshSession;
  let lbIp = '';
  const backends: Server[] = [];
  const ports: number[] = [];

  /** A backend on the bridge address answering `name`. */
  const backend = async (name: string): Promise<number> => {
    const srv = createServer((c) => c.end(`${name}\n`));
    await new Promise<void>((r) => srv.listen(0, theLab.bridgeIp, () => r()));
    backends.push(srv);
    return (srv.address() as { port: number }).port;
  };
  const fe = (name: string, bind: number, servers: { name: string; port: number }[]): LbFrontend => ({
    name,
    bind,
    servers: servers.map((s) => ({ name: s.name, address: theLab.bridgeIp, port: s.port })),
  });
  const sh = async (cmd: string): Promise<string> => (await lb.run(cmd, { sudo: true })).stdout;
  const haproxyPid = async (): Promise<string> => (await sh('. /etc/hvlab/env && cat $HVLAB_STATE/haproxy.pid')).trim();

  before(async () => {
    release = await acquireLabLock({ waitMs: 900_000, what: 'test/mgmt/lb/reconciler-lab.test.ts' });
    os = await startOpenStackSim({ heatDelayMs: 10 });
    theLab = await startLab({ openstack: os, dataDir: 'memory://lb-reconciler-test', kubernetesPort: 0, serviceHosts: true });
    lbIp = theLab.serviceHosts?.lb as string;
    lb = await until('SSH to the LB host', async () => {
      try {
        return await connectSsh({ host: lbIp, username: theLab.credentials.user, password: theLab.credentials.password }, { attempts: 1 });
      } catch {
        return undefined;
      }
    }, 60_000, 200);
    for (const n of ['a1', 'a2', 'b1']) ports.push(await backend(n));
  });
  after(async () => {
    lb?.close();
    for (const s of backends) s.close();
    await theLab?.close();
    await os?.close();
    release?.();
  });

  let hashA: string | null = null;

  it('starts HAProxy with a base configuration and the first owner\'s section when the LB has none', async () => {
    assert.equal((await lb.exec('test -e /etc/haproxy/haproxy.cfg')).code, 1, 'no configuration yet');
    const r = await reconcileOwner(lb, { owner: 'cnf-a', frontends: [fe('fa', 30100, [{ name: 'a1', port: ports[0] as number }])] });
    assert.equal(r.action, 'start');
    assert.deepEqual(r.ports, { before: [], after: [30100] });
    hashA = r.hash;
    assert.equal(await answer(lbIp, 30100), 'a1\n');
    const st = await readLbState(lb);
    assert.equal(st.running, true);
    assert.equal(st.recordedHash, st.fileHash, 'the applied file\'s hash is recorded next to it');
    assert.deepEqual(Object.keys(st.owners), ['cnf-a']);
    assert.equal(st.owners['cnf-a']?.hash, hashA);
    assert.match(st.text ?? '', /stats socket \/etc\/haproxy\/admin\.sock mode 600 level admin/);
  });

  it('does nothing when the live file already is the desired one', async () => {
    const pid = await haproxyPid();
    const r = await reconcileOwner(lb, { owner: 'cnf-a', frontends: [fe('fa', 30100, [{ name: 'a1', port: ports[0] as number }])] }, { lastAppliedHash: hashA });
    assert.equal(r.action, 'unchanged');
    assert.equal(r.drift, undefined);
    assert.equal(await haproxyPid(), pid, 'no reload');
  });

  it('adds a second owner beside the first (reload), both answer', async () => {
    const r = await reconcileOwner(lb, { owner: 'cnf-b', frontends: [fe('fb', 30101, [{ name: 'b1', port: ports[2] as number }])] });
    assert.equal(r.action, 'reload');
    assert.equal(await answer(lbIp, 30101), 'b1\n');
    assert.equal(await answer(lbIp, 30100), 'a1\n');
  });

  it('changes only members through the runtime API: no reload, file rewritten for restarts', async () => {
    const pid = await haproxyPid();
    const r = await reconcileOwner(lb, { owner: 'cnf-a', frontends: [fe('fa', 30100, [{ name: 'a2', port: ports[1] as number }])] }, { lastAppliedHash: hashA });
    assert.equal(r.action, 'runtime', JSON.stringify(r));
    assert.ok(r.runtime?.some((c) => c.startsWith('add server fa/a2')), JSON.stringify(r.runtime));
    assert.ok(r.runtime?.some((c) => c === 'del server fa/a1'), JSON.stringify(r.runtime));
    hashA = r.hash;
    assert.equal(await haproxyPid(), pid, 'the same HAProxy process (no reload)');
    await until('the new member answers', async () => ((await answer(lbIp, 30100)) === 'a2\n' ? true : undefined), 30_000);
    const state = await sh('echo "show servers state fa" | socat stdio UNIX-CONNECT:/etc/haproxy/admin.sock');
    assert.match(state, / a2 /);
    assert.doesNotMatch(state, / a1 /);
    const file = await sh('cat /etc/haproxy/haproxy.cfg');
    assert.match(file, new RegExp(`server a2 ${theLab.bridgeIp.replaceAll('.', '\\.')}:${ports[1]} check`));
    assert.doesNotMatch(file, /server a1 /);
  });

  it('moves a port with a validated reload: the old port refused, the new one answers, the other owner untouched', async () => {
    const before = (await readLbState(lb)).owners['cnf-b'];
    const r = await reconcileOwner(lb, { owner: 'cnf-a', frontends: [fe('fa', 30102, [{ name: 'a2', port: ports[1] as number }])] }, { lastAppliedHash: hashA });
    assert.equal(r.action, 'reload');
    assert.deepEqual(r.ports, { before: [30100], after: [30102] });
    hashA = r.hash;
    assert.equal(await answer(lbIp, 30100), 'refused');
    assert.equal(await answer(lbIp, 30102), 'a2\n');
    assert.deepEqual((await readLbState(lb)).owners['cnf-b'], before);
    assert.equal(await answer(lbIp, 30101), 'b1\n');
  });

  it('never applies a file haproxy -c rejects: FAILED_TEMP-class error naming haproxy\'s message, live file untouched', async () => {
    const live = await sh('cat /etc/haproxy/haproxy.cfg');
    await assert.rejects(
      reconcileOwner(lb, { owner: 'cnf-a', frontends: [fe('fa', 30102, [{ name: 'a2', port: ports[1] as number }]), { name: 'fbad', bind: 30103, servers: [{ name: 'x', address: '10.87.0.300', port: 80 }] }] }),
      (e: unknown) => {
        assert.ok(isVnfmError(e, 'VNFM_ERR_MGMT_COMMAND'), String(e));
        assert.equal((e as { retryable: boolean }).retryable, false);
        assert.match((e as Error).message, /haproxy -c exit \d+\): .*10\.87\.0\.300/);
        assert.match((e as Error).message, /the live configuration was not changed/);
        return true;
      },
    );
    assert.equal(await sh('cat /etc/haproxy/haproxy.cfg'), live);
    assert.equal((await lb.exec('test -e /etc/haproxy/haproxy.cfg.new', { sudo: true })).code, 1, 'the rejected file is not left behind');
    assert.equal(await answer(lbIp, 30103), 'refused');
    assert.equal(await answer(lbIp, 30102), 'a2\n');
  });

  it('refuses a frontend name or port another owner holds, before writing anything', async () => {
    await assert.rejects(reconcileOwner(lb, { owner: 'cnf-c', frontends: [fe('fc', 30101, [])] }), (e: unknown) => isVnfmError(e, 'VNFM_ERR_MGMT_REFUSED') && /port 30101 .*cnf-b/.test((e as Error).message));
    assert.equal((await readLbState(lb)).owners['cnf-c'], undefined);
  });

  it('finds drift (the live section edited behind its back), reports it and re-applies', async () => {
    await sh(`sed -i 's/^    server a2 .*$/    server a9 10.87.0.1:1 check/' /etc/haproxy/haproxy.cfg`);
    const r = await reconcileOwner(lb, { owner: 'cnf-a', frontends: [fe('fa', 30102, [{ name: 'a2', port: ports[1] as number }])] }, { lastAppliedHash: hashA });
    assert.deepEqual(r.drift, { file: true, section: true });
    assert.notEqual(r.action, 'unchanged');
    assert.equal(r.hash, hashA, 'back to the applied section');
    const st = await readLbState(lb);
    assert.equal(st.owners['cnf-a']?.hash, hashA);
    assert.equal(st.recordedHash, st.fileHash);
    assert.equal(await answer(lbIp, 30102), 'a2\n');
  });

  it('follows node changes in every CNF section through the runtime API (no reload), and reports hand edits as drift', async () => {
    const pid = await haproxyPid();
    // a node-port style backend: the servers listen on the frontend's own port (a local listener on the bridge stands for the nodes)
    const np = createServer((c) => c.end('node-port\n'));
    await new Promise<void>((r) => np.listen(30104, theLab.bridgeIp, () => r()));
    backends.push(np);
    await reconcileOwner(lb, { owner: 'cnf-n', frontends: [fe('fn', 30104, [{ name: 'old-node', port: 30104 }])] });
    const pidAfterAdd = await haproxyPid();
    const r = await reconcileNodeMembers(lb, [{ name: 'new-node', address: theLab.bridgeIp, ready: true, schedulable: true }, { name: 'down-node', address: '10.87.0.99', ready: false, schedulable: true }]);
    assert.deepEqual(r.skipped, []);
    const n = r.results.find((x) => x.owner === 'cnf-n');
    assert.equal(n?.action, 'runtime', JSON.stringify(r));
    assert.ok(n?.runtime?.includes('del server fn/old-node'));
    assert.ok(r.results.filter((x) => x.owner !== 'cnf-n').every((x) => x.action !== 'reload' && x.action !== 'start'), 'the other sections only change members');
    assert.equal(await haproxyPid(), pidAfterAdd, 'no reload');
    assert.notEqual(pidAfterAdd, pid, 'the new section itself needed one');
    const state = await sh('echo "show servers state fn" | socat stdio UNIX-CONNECT:/etc/haproxy/admin.sock');
    assert.match(state, / new-node /);
    assert.doesNotMatch(state, / old-node | down-node /);
    assert.equal(await answer(lbIp, 30104), 'node-port\n');
    // a hand edit of one section: drift of that owner only
    await sh(`sed -i 's/^    server new-node /    server new-node2 /' /etc/haproxy/haproxy.cfg`);
    const st = await readLbState(lb);
    assert.equal(st.fileDrift, true);
    assert.equal(st.owners['cnf-n']?.drift, true);
    assert.equal(st.owners['cnf-b']?.drift, false);
    assert.deepEqual((await reconcileNodeMembers(lb, [{ name: 'new-node', address: theLab.bridgeIp, ready: true, schedulable: true }])).results.find((x) => x.owner === 'cnf-n')?.drift, { file: true, section: true });
    const fixed = await readLbState(lb);
    assert.equal(fixed.fileDrift, false, 'corrected');
    assert.equal(fixed.owners['cnf-n']?.drift, false);
    await removeOwner(lb, 'cnf-n');
  });

  it('removes one owner (its ports refused) and keeps the other; removing again is a no-op', async () => {
    const r = await removeOwner(lb, 'cnf-a');
    assert.equal(r.action, 'reload');
    assert.equal(r.hash, null);
    assert.equal(await answer(lbIp, 30102), 'refused');
    assert.equal(await answer(lbIp, 30101), 'b1\n');
    assert.equal((await removeOwner(lb, 'cnf-a')).action, 'unchanged');
    await removeOwner(lb, 'cnf-b');
    assert.equal(await answer(lbIp, 30101), 'refused');
    assert.deepEqual((await readLbState(lb)).owners, {});
  });

  it('a stale section in the way (its instance gone) is removed with the new owner\'s apply and reported; one in use refuses, naming its owner and instance', async () => {
    const [p1] = ports as [number];
    const apiFe = (owner: string) => ({ owner, frontends: [fe('kubernetes-apiserver', 30105, [{ name: `${owner}-master`, port: p1 }])] });
    // a section left behind by an instance that no longer exists
    await reconcileOwner(lb, apiFe('cluster-gone-1'));
    assert.equal(await answer(lbIp, 30105), 'a1\n');
    // without a stale check: refused, naming the owner and its instance, nothing written
    const text = (await readLbState(lb)).text;
    await assert.rejects(reconcileOwner(lb, apiFe('cluster-new-2')), (e: unknown) => {
      assert.ok(isVnfmError(e) && e.code === 'VNFM_ERR_MGMT_REFUSED', String(e));
      assert.match(e.message, /kubernetes-apiserver is already defined by owner cluster-gone-1/);
      assert.match(e.message, /sections in the way: cluster-gone-1 \(VNF instance gone-1\)/);
      return true;
    });
    // the owner still in use: refused too
    const asked: string[] = [];
    await assert.rejects(
      reconcileOwner(lb, apiFe('cluster-new-2'), {
        ownerIsStale: async (o) => {
          asked.push(o);
          return false;
        },
      }),
      (e: unknown) => isVnfmError(e) && /cluster-gone-1 \(VNF instance gone-1, which still exists/.test(e.message),
    );
    assert.deepEqual(asked, ['cluster-gone-1']);
    assert.equal((await readLbState(lb)).text, text, 'nothing written');
    // the stale one goes in the same validated write, and is reported
    const removed: string[] = [];
    const r = await reconcileOwner(lb, apiFe('cluster-new-2'), { ownerIsStale: async (o) => o === 'cluster-gone-1', onStaleOwnerRemoved: (o) => removed.push(o) });
    assert.deepEqual(r.removedStale, ['cluster-gone-1']);
    assert.deepEqual(removed, ['cluster-gone-1']);
    const st = await readLbState(lb);
    assert.deepEqual(Object.keys(st.owners), ['cluster-new-2']);
    assert.doesNotMatch(st.text ?? '', /cluster-gone-1/);
    assert.equal(await answer(lbIp, 30105), 'a1\n');
    await removeOwner(lb, 'cluster-new-2');
    assert.deepEqual((await readLbState(lb)).owners, {});
  });
});
