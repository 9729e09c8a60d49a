/**
 * k8s-kubeadm instantiate_end / terminate_end / whole heal against a scripted cluster: main master
 * install, admin token through the API (bootstrapped from admin.conf, then the sealed token), other
 * masters and workers joined with fresh material passed off the command line, hosts blocks, the VIM
 * registered once (retries and replays included), the vimConnectionInfo entry and
 * metadata.k8sCluster; terminate and whole heal remove the VIM and its entry.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseHostsBlock } from '../../../src/mgmt/drivers/k8s-kubeadm/hosts-block.ts';
import { isSensitiveOutput, secretsIn } from '../../../src/mgmt/drivers/k8s-kubeadm/remote.ts';
import type { K8sClusterMeta } from '../../../src/mgmt/drivers/k8s-kubeadm/hooks.ts';
import type { KubeadmInstanceState } from '../../../src/mgmt/drivers/k8s-kubeadm/run-context.ts';
import { assertNoSecrets, harness, m, w } from './harness.ts';

describe('k8s-kubeadm instantiate_end (1 master, 2 workers)', () => {
  it('builds the cluster, registers the VIM with the CA, returns the entry and the cluster metadata', async () => {
    const h = harness([m(11)], [w(21), w(22)]);
    const r = await h.instantiate();
    assert.ok(r);
    // steps in order
    assert.deepEqual(h.world.steps, [
      'instantiate_end:hosts:master11',
      'instantiate_end:hosts:worker21',
      'instantiate_end:hosts:worker22',
      'instantiate_end:install-master:master11',
      'instantiate_end:admin-credentials',
      'instantiate_end:join-worker:worker21',
      'instantiate_end:join-worker:worker22',
      'instantiate_end:etcd-members',
      'instantiate_end:register-vim',
    ]);
    // install script calls: main master then workers, secrets only through the sourced file
    assert.deepEqual(
      h.cluster.installs.map((i) => [i.host, i.args.join(' ')]),
      [
        ['10.0.0.11', '-m 10.0.0.11 -i 10.0.0.11 -p 192.168.0.0/16 -a 10.199.187.0/24'],
        ['10.0.0.21', `-w 10.0.0.21 -i 10.0.0.11 -t ${h.cluster.joinTokens[1]} -s ${h.cluster.caHash}`],
        ['10.0.0.22', `-w 10.0.0.22 -i 10.0.0.11 -t ${h.cluster.joinTokens[2]} -s ${h.cluster.caHash}`],
      ],
    );
    assert.deepEqual(
      h.cluster.installs.map((i) => i.env.ha_flag),
      ['False', 'False', 'False'],
    );
    for (const c of h.cluster.lines(/install_k8s_cluster/)) assert.match(c, /-t "\$HEALVNFM_TOKEN" -s "\$HEALVNFM_CA_HASH"$|'-a' '10\.199\.187\.0\/24'$/);
    // the API: bootstrap with admin.conf, then the ServiceAccount token
    assert.equal(h.conns[0]?.kubeconfig !== undefined, true);
    assert.equal(h.conns[0]?.server, 'https://10.0.0.11:6443');
    assert.equal(h.conns[1]?.token, h.cluster.kube.adminToken);
    assert.ok(h.cluster.kube.has('ServiceAccount', 'kube-system', 'admin'));
    assert.equal((h.cluster.kube.obj('ClusterRoleBinding', undefined, 'admin')?.roleRef as { name?: string } | undefined)?.name, 'cluster-admin');
    assert.equal(h.cluster.kube.obj('Secret', 'kube-system', 'admin-token')?.type, 'kubernetes.io/service-account-token');
    // the VIM
    assert.equal(h.world.vims.vims.size, 1);
    const vim = h.world.vims.vims.get('vim-1');
    assert.equal(vim?.name, 'kubernetes_vim_inst-1');
    assert.equal(vim?.authUrl, 'https://10.0.0.11:6443');
    assert.equal(vim?.input.type, 'kubernetes');
    assert.equal(vim?.input.auth_cred?.bearer_token, h.cluster.kube.adminToken);
    assert.equal(String(vim?.input.auth_cred?.ssl_ca_cert).trim(), h.cluster.caPem.trim());
    const entries = Object.values(r.vimConnectionInfo?.add ?? {});
    assert.equal(entries.length, 1);
    assert.deepEqual(entries[0], { vimId: 'vim-1', vimType: 'ETSINFV.KUBERNETES.V_1', interfaceInfo: { endpoint: 'https://10.0.0.11:6443' } });
    // metadata
    const meta = r.vnfInfoMetadata?.k8sCluster as K8sClusterMeta;
    assert.equal(meta.vimId, 'vim-1');
    assert.equal(meta.vimName, 'kubernetes_vim_inst-1');
    assert.deepEqual(Object.keys(meta.nodes), ['master11', 'worker21', 'worker22']);
    assert.deepEqual(meta.nodes.worker21, { role: 'worker', vnfcInfoId: 'vi-w21', vnfcResourceInfoId: 'w21', nicIp: '10.0.0.21', sshIp: '10.0.0.21', joined: true });
    assert.equal(meta.nodes.master11?.etcdMemberId, h.cluster.members[0]?.id.toString(16));
    // sealed state: admin token and host key pins per server
    const st = h.world.instanceState.value as KubeadmInstanceState;
    assert.equal(st.adminToken, h.cluster.kube.adminToken);
    assert.deepEqual(st.hostKeys, { 'srv-m11-g1': 'SHA256:host-10.0.0.11-gen1', 'srv-w21-g1': 'SHA256:host-10.0.0.21-gen1', 'srv-w22-g1': 'SHA256:host-10.0.0.22-gen1' });
    // /etc/hosts block everywhere
    for (const ip of ['10.0.0.11', '10.0.0.21', '10.0.0.22']) {
      const hosts = h.cluster.vms.get(ip)?.files.get('/etc/hosts') ?? '';
      assert.ok(hosts.startsWith('127.0.0.1 localhost\n'));
      assert.deepEqual(parseHostsBlock(hosts).map((e) => e.name), ['master11', 'worker21', 'worker22']);
    }
    // Nodes Ready
    for (const n of ['master11', 'worker21', 'worker22']) assert.ok(h.cluster.kube.has('Node', undefined, n));
    assertNoSecrets(h);
  });

  it('a retry replays the journal; a new run over the built cluster skips installs; the VIM stays single', async () => {
    const h = harness([m(11)], [w(21), w(22)]);
    await h.instantiate();
    const installs = h.cluster.installs.length;
    // the same op again: every step is journaled
    const again = await h.instantiate();
    assert.equal(h.cluster.installs.length, installs);
    assert.equal(h.world.vims.registerCalls, 1);
    assert.equal(Object.keys(again?.vimConnectionInfo?.add ?? {}).length, 1);
    // the journal lost (a new op id): check-first steps find everything done
    const r = await h.run('instantiate_end', { operation: 'INSTANTIATE', flavourId: 'simple', additionalParams: h.params }, { opId: 'op-inst-2' });
    assert.equal(h.cluster.installs.length, installs, 'no install ran again');
    assert.equal(h.world.vims.vims.size, 1);
    assert.equal(Object.values(r?.vimConnectionInfo?.add ?? {})[0]?.vimId, 'vim-1');
    // the same entry id whatever run produced it: the engine adds one entry only
    assert.deepEqual(Object.keys(r?.vimConnectionInfo?.add ?? {}), Object.keys(again?.vimConnectionInfo?.add ?? {}));
    assert.match(Object.keys(r?.vimConnectionInfo?.add ?? {})[0] ?? '', /^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  it('refuses colliding node names before touching anything', async () => {
    const h = harness([m(11)], [w(21), { id: 'wx', ip: '10.0.1.21', resourceId: 'srv-wx' }]);
    await assert.rejects(h.instantiate(), (e: Error & { code?: string }) => e.code === 'VNFM_ERR_MGMT_REFUSED' && /worker21 \(VNFCs w21, wx\)/.test(e.message));
    assert.equal(h.cluster.commands.length, 0);
    assert.equal(h.cluster.connects.length, 0);
  });
});

describe('k8s-kubeadm instantiate_end (3 masters, HA)', () => {
  it('joins the other masters as control-plane nodes, registers https://VIP:16443, records etcd member ids', async () => {
    const h = harness([m(11), m(12), m(13)], [w(21)]);
    const r = await h.instantiate();
    assert.deepEqual(
      h.cluster.installs.map((i) => [i.host, i.args.slice(0, 4).join(' '), i.env.ha_flag]),
      [
        ['10.0.0.11', '-m 10.0.0.11,10.0.0.12,10.0.0.13 -i 10.0.0.100', 'True'],
        ['10.0.0.12', '-m 10.0.0.11,10.0.0.12,10.0.0.13 -i 10.0.0.100', 'True'],
        ['10.0.0.13', '-m 10.0.0.11,10.0.0.12,10.0.0.13 -i 10.0.0.100', 'True'],
        ['10.0.0.21', '-w 10.0.0.21 -i 10.0.0.100', 'True'],
      ],
    );
    // control-plane joins carry a certificate key, fetched right before each join
    const joins = h.cluster.installs.filter((i) => i.args.includes('-k'));
    assert.equal(joins.length, 2);
    assert.deepEqual(
      joins.map((j) => j.args[j.args.indexOf('-k') + 1]),
      h.cluster.certKeys.slice(1, 3),
    );
    assert.equal(h.cluster.members.length, 3);
    const meta = r?.vnfInfoMetadata?.k8sCluster as K8sClusterMeta;
    for (const name of ['master11', 'master12', 'master13']) assert.equal(meta.nodes[name]?.etcdMemberId, h.cluster.memberNamed(name)?.id.toString(16));
    assert.equal(h.world.vims.vims.get('vim-1')?.authUrl, 'https://10.0.0.100:16443');
    assert.equal(meta.clusterIp, '10.0.0.100');
    assertNoSecrets(h);
  });
});

describe('k8s-kubeadm install script secrets', () => {
  it('a script that reads HEALVNFM_TOKEN gets the token and certificate key only through its environment', async () => {
    const h = harness([m(11), m(12), m(13)], [w(21)]);
    h.world.scriptText = '#!/bin/bash\n: "${HEALVNFM_TOKEN:=}"\n';
    await h.instantiate();
    const joins = h.cluster.installs.filter((i) => i.host !== '10.0.0.11');
    assert.equal(joins.length, 3);
    for (const j of joins) {
      assert.ok(!j.args.includes('-t') && !j.args.includes('-k'), `no secret argument: ${j.args.join(' ')}`);
      assert.ok(j.args.includes('-s'), 'the CA hash (public) stays an argument');
      assert.ok(h.cluster.joinTokens.includes(j.env.HEALVNFM_TOKEN as string));
    }
    assert.ok(h.cluster.certKeys.includes(joins[0]?.env.HEALVNFM_CERT_KEY as string));
    assert.equal(h.cluster.members.length, 3);
    assertNoSecrets(h);
  });
});

describe('k8s-kubeadm secrets in failures and output', () => {
  it('a failed join echoing its token fails with the token masked; kubeadm-shaped tokens and keys never reach progress', async () => {
    const h = harness([m(11)], [w(21)]);
    h.cluster.failInstallOn.add('10.0.0.21');
    await assert.rejects(h.instantiate(), (e: Error & { code?: string }) => {
      assert.equal(e.code, 'VNFM_ERR_MGMT_COMMAND');
      assert.match(e.message, /--token \*\*\*/);
      assert.ok(!h.cluster.joinTokens.some((t) => e.message.includes(t)));
      return true;
    });
    assertNoSecrets(h);
  });

  it('an install script that exits 0 without its result markers fails at once, naming them and its last lines (redacted)', async () => {
    const h = harness([m(11)], [w(21)]);
    h.cluster.silentInstallOn.add('10.0.0.11');
    await assert.rejects(h.instantiate(), (e: Error & { code?: string; retryable?: boolean }) => {
      assert.equal(e.code, 'VNFM_ERR_MGMT_FAILED');
      assert.equal(e.retryable, false, 'not retried: the op fails at once');
      assert.match(e.message, /^the install script on master11 \(10\.0\.0\.11\) exited 0 but did not print token:, server:, ssl_ca_cert_hash: /);
      assert.match(e.message, /E: Unable to locate package kubeadm \| \[bootstrap-token\] Using token: \*\*\*\* \| bash: line 12: kubeadm: command not found/);
      assert.doesNotMatch(e.message, /abcdef\.0123456789abcdef/);
      assert.doesNotMatch(e.message, /admin\.conf failed/);
      return true;
    });
    assert.equal(h.cluster.installs.length, 1, 'the script ran once; nothing ran after it');
    assert.deepEqual(h.world.steps.at(-1), 'instantiate_end:install-master:master11', 'no step after the install');
  });

  it('recognises secret-looking install output', () => {
    assert.ok(isSensitiveOutput('[bootstrap-token] Using token: abcdef.0123456789abcdef'));
    assert.ok(isSensitiveOutput('0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef'));
    assert.ok(isSensitiveOutput('HEALVNFM-RESULT {"role":"master"}'));
    assert.ok(!isSensitiveOutput('[preflight] Running pre-flight checks'));
    assert.deepEqual(secretsIn('kubeadm join x --token abcdef.0123456789abcdef --x'), ['abcdef.0123456789abcdef']);
  });
});

describe('k8s-kubeadm terminate_end and whole heal', () => {
  it('terminate deletes the VIM, drops its entry and the sealed state', async () => {
    const h = harness([m(11)], [w(21)]);
    const built = await h.instantiate();
    h.inst.instantiatedVnfInfo = { ...(h.inst.instantiatedVnfInfo as NonNullable<typeof h.inst.instantiatedVnfInfo>), metadata: { k8sCluster: built?.vnfInfoMetadata?.k8sCluster } };
    const r = await h.run('terminate_end', { operation: 'TERMINATE', terminationType: 'FORCEFUL', additionalParams: {} }, { opId: 'op-term' });
    assert.deepEqual(h.world.vims.deleted, ['vim-1']);
    assert.deepEqual(r?.vimConnectionInfo, { removeVimIds: ['vim-1'] });
    assert.deepEqual(r?.vnfInfoMetadata, { k8sCluster: null });
    assert.deepEqual(h.world.instanceState.value, {});
    // again (the engine had not applied the result yet): deleting an unknown VIM is not an error
    const again = await h.run('terminate_end', { operation: 'TERMINATE', terminationType: 'FORCEFUL', additionalParams: {} }, { opId: 'op-term-2' });
    assert.equal(h.world.vims.vims.size, 0);
    assert.deepEqual(again?.vimConnectionInfo, { removeVimIds: ['vim-1'] });
  });

  it('whole heal: heal_start removes the VIM and entry; heal_end rebuilds and registers a new VIM', async () => {
    const h = harness([m(11)], [w(21)]);
    const built = await h.instantiate();
    h.inst.instantiatedVnfInfo = { ...(h.inst.instantiatedVnfInfo as NonNullable<typeof h.inst.instantiatedVnfInfo>), metadata: { k8sCluster: built?.vnfInfoMetadata?.k8sCluster } };
    const heal = { operation: 'HEAL' as const, scope: 'entire' as const, vnfcInfoIds: [], includeStorage: true, additionalParams: {} };
    const start = await h.run('heal_start', heal, { opId: 'op-heal' });
    assert.deepEqual(start?.vimConnectionInfo, { removeVimIds: ['vim-1'] });
    assert.equal(h.world.vims.vims.size, 0);
    // the stack is re-created: new servers, empty VMs at the same addresses
    for (const ip of ['10.0.0.11', '10.0.0.21']) h.cluster.replaceVm(ip);
    h.cluster.kube.store.clear();
    const fresh = harness([m(11, 2)], [w(21, 2)]).inst;
    const end = await h.run('heal_end', heal, { opId: 'op-heal', instance: fresh });
    assert.equal(h.world.vims.vims.size, 1);
    const entry = Object.values(end?.vimConnectionInfo?.add ?? {});
    assert.equal(entry.length, 1);
    assert.equal(entry[0]?.vimId, 'vim-2');
    assert.equal((end?.vnfInfoMetadata?.k8sCluster as K8sClusterMeta).vimId, 'vim-2');
    // new pins for the new servers only
    assert.deepEqual(Object.keys((h.world.instanceState.value as KubeadmInstanceState).hostKeys ?? {}).sort(), ['srv-m11-g2', 'srv-w21-g2']);
    assertNoSecrets(h);
  });
});
