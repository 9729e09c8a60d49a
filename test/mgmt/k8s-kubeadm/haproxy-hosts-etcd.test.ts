/**
 * Text parsers and renderers of the k8s-kubeadm driver: the masters' HAProxy backend (exact names:
 * master1 vs master12), the runtime API commands and `show servers state`, the `/etc/hosts`
 * marked block, and etcdctl's JSON (uint64 ids, real 3.4 output) and text output.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  findMember,
  leaderOf,
  memberHealth,
  memberIdFromHex,
  memberIdHex,
  membersWithPeerIp,
  parseEndpointHealth,
  parseEndpointStatus,
  parseMemberList,
  quoteBigInts,
} from '../../../src/mgmt/drivers/k8s-kubeadm/etcd.ts';
import { addServer, adminSocketPath, listServers, parseServersState, removeServer, runtime, serverLine } from '../../../src/mgmt/drivers/k8s-kubeadm/haproxy.ts';
import { applyHostsBlock, HOSTS_BEGIN, HOSTS_END, parseHostsBlock } from '../../../src/mgmt/drivers/k8s-kubeadm/hosts-block.ts';

/** The configuration Tacker's install script writes (abridged), with two masters sharing a prefix. */
const CFG = `global
    log /dev/log    local0
    chroot /var/lib/haproxy
    stats socket /run/haproxy/admin.sock mode 660 level admin expose-fd listeners
    stats timeout 30s
    daemon

defaults
    mode                    http
    timeout connect 5000

frontend kubernetes-apiserver
    mode                 tcp
    bind                 *:16443
    option               tcplog
    default_backend      kubernetes-apiserver

backend kubernetes-apiserver
    mode        tcp
    balance     roundrobin
    server  master1  10.0.0.1:6443 check
    server  master12  10.0.0.12:6443 check
    server  master13  10.0.0.13:6443 check

listen stats
    bind                 *:1080
    stats auth           admin:awesomePassword
    stats refresh        5s
    stats uri            /admin?stats
`;

describe('k8s-kubeadm HAProxy configuration', () => {
  it('lists the backend servers exactly', () => {
    assert.deepEqual(
      listServers(CFG, 'kubernetes-apiserver')?.map((s) => [s.name, s.address]),
      [
        ['master1', '10.0.0.1:6443'],
        ['master12', '10.0.0.12:6443'],
        ['master13', '10.0.0.13:6443'],
      ],
    );
    assert.equal(listServers(CFG, 'nope'), undefined);
    assert.equal(adminSocketPath(CFG), '/run/haproxy/admin.sock');
    assert.equal(adminSocketPath(CFG.replace(' level admin', '')), undefined);
  });

  it('removes master1 without touching master12 (no substring match), and nothing else', () => {
    const r = removeServer(CFG, 'kubernetes-apiserver', 'master1');
    assert.equal(r.changed, true);
    assert.deepEqual(
      listServers(r.text, 'kubernetes-apiserver')?.map((s) => s.name),
      ['master12', 'master13'],
    );
    assert.equal(r.text, CFG.replace('    server  master1  10.0.0.1:6443 check\n', ''));
    assert.deepEqual(removeServer(r.text, 'kubernetes-apiserver', 'master1'), { text: r.text, changed: false });
  });

  it('adds a master back after the last server line, in the script format; idempotent; replaces a moved address', () => {
    const without = removeServer(CFG, 'kubernetes-apiserver', 'master12').text;
    const r = addServer(without, 'kubernetes-apiserver', 'master12', '10.0.0.12', 6443);
    assert.equal(r.changed, true);
    assert.deepEqual(
      listServers(r.text, 'kubernetes-apiserver')?.map((s) => s.name),
      ['master1', 'master13', 'master12'],
    );
    assert.ok(r.text.includes(`${serverLine('master12', '10.0.0.12', 6443)}\n\nlisten stats`));
    assert.equal(serverLine('master12', '10.0.0.12', 6443), '    server  master12  10.0.0.12:6443 check');
    assert.equal(addServer(r.text, 'kubernetes-apiserver', 'master12', '10.0.0.12', 6443).changed, false);
    const moved = addServer(r.text, 'kubernetes-apiserver', 'master12', '10.0.0.99', 6443);
    assert.deepEqual(
      listServers(moved.text, 'kubernetes-apiserver')?.map((s) => s.address),
      ['10.0.0.1:6443', '10.0.0.13:6443', '10.0.0.99:6443'],
    );
    // a backend without servers gets the line at its end
    const empty = CFG.replace(/ {4}server .*\n/g, '');
    const e = addServer(empty, 'kubernetes-apiserver', 'master1', '10.0.0.1', 6443);
    assert.match(e.text, /balance {5}roundrobin\n {4}server {2}master1 {2}10\.0\.0\.1:6443 check\n\nlisten stats/);
    assert.throws(() => addServer(CFG, 'other', 'x', '1.2.3.4', 1), /no backend other/);
  });

  it('runtime API commands and show servers state', () => {
    assert.equal(runtime.maint('kubernetes-apiserver', 'master1'), 'set server kubernetes-apiserver/master1 state maint');
    assert.equal(runtime.del('kubernetes-apiserver', 'master1'), 'del server kubernetes-apiserver/master1');
    assert.equal(runtime.add('kubernetes-apiserver', 'master1', '10.0.0.1', 6443), 'add server kubernetes-apiserver/master1 10.0.0.1:6443 check');
    const out = `1
# be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state srv_uweight srv_iweight srv_time_since_last_change srv_check_status srv_check_result srv_check_health srv_check_state srv_agent_state bk_f_forced_id srv_f_forced_id srv_fqdn srv_port srvrecord srv_use_ssl srv_check_port srv_check_addr srv_agent_addr srv_agent_port
3 kubernetes-apiserver 1 master1 10.0.0.1 2 0 1 1 12 6 3 4 6 0 0 0 - 6443 - 0 0 - - 0
3 kubernetes-apiserver 2 master12 10.0.0.12 0 1 1 1 3 6 3 4 6 0 0 0 - 6443 - 0 0 - - 0
`;
    assert.deepEqual(parseServersState(out), [
      { backend: 'kubernetes-apiserver', name: 'master1', address: '10.0.0.1:6443', opState: 2, adminState: 0 },
      { backend: 'kubernetes-apiserver', name: 'master12', address: '10.0.0.12:6443', opState: 0, adminState: 1 },
    ]);
  });
});

describe('k8s-kubeadm /etc/hosts block', () => {
  const entries = [
    { ip: '10.0.0.12', name: 'master12' },
    { ip: '10.0.0.1', name: 'master1' },
    { ip: '10.0.0.21', name: 'worker21' },
  ];

  it('appends the block once, rewrites it whole, keeps every other line', () => {
    const orig = '127.0.0.1 localhost\n10.0.0.50 other-host\n';
    const a = applyHostsBlock(orig, entries);
    assert.equal(a, `127.0.0.1 localhost\n10.0.0.50 other-host\n${HOSTS_BEGIN}\n10.0.0.1 master1\n10.0.0.12 master12\n10.0.0.21 worker21\n${HOSTS_END}\n`);
    assert.equal(applyHostsBlock(a, entries), a, 'idempotent');
    const b = applyHostsBlock(`${a}10.0.0.99 after\n`, entries.filter((e) => e.name !== 'worker21'));
    assert.equal(b, `127.0.0.1 localhost\n10.0.0.50 other-host\n${HOSTS_BEGIN}\n10.0.0.1 master1\n10.0.0.12 master12\n${HOSTS_END}\n10.0.0.99 after\n`);
    assert.deepEqual(parseHostsBlock(b), [
      { ip: '10.0.0.1', name: 'master1' },
      { ip: '10.0.0.12', name: 'master12' },
    ]);
  });

  it('drops lines of removed nodes outside the block by exact name (10.0.0.5 does not take 10.0.0.50)', () => {
    const orig = '127.0.0.1 localhost\n10.0.0.5 worker5\n10.0.0.50 worker50\n10.0.0.51 worker51 worker5x\n';
    const r = applyHostsBlock(orig, [{ ip: '10.0.0.50', name: 'worker50' }], ['worker5']);
    assert.ok(!r.includes('10.0.0.5 worker5\n'));
    assert.ok(r.includes('10.0.0.50 worker50\n10.0.0.51 worker51 worker5x\n'));
  });
});

/** Real `etcdctl 3.4` outputs (member ids above 2^53). */
const MEMBER_LIST = `{"header":{"cluster_id":17953654596774702974,"member_id":975050037397374526,"raft_term":2},"members":[{"ID":975050037397374526,"name":"master1","peerURLs":["https://10.0.0.1:2380"],"clientURLs":["https://10.0.0.1:2379"]},{"ID":11421717585761795258,"name":"master12","peerURLs":["https://10.0.0.12:2380"],"clientURLs":["https://10.0.0.12:2379"]},{"ID":17290902756751276855,"name":"master13","peerURLs":["https://10.0.0.13:2380"],"clientURLs":["https://10.0.0.13:2379"]},{"ID":12345678901234567890,"peerURLs":["https://10.0.0.14:2380"],"isLearner":true}]}`;
const STATUS = `[{"Endpoint":"https://10.0.0.1:2379","Status":{"header":{"cluster_id":17953654596774702974,"member_id":975050037397374526,"revision":1,"raft_term":2},"version":"3.4.23","dbSize":20480,"leader":11421717585761795258,"raftIndex":5008,"raftTerm":2,"raftAppliedIndex":5008,"dbSizeInUse":16384}},{"Endpoint":"https://10.0.0.12:2379","Status":{"header":{"cluster_id":17953654596774702974,"member_id":11421717585761795258,"revision":1,"raft_term":2},"version":"3.4.23","dbSize":20480,"leader":11421717585761795258,"raftIndex":5010,"raftTerm":2,"raftAppliedIndex":5010,"dbSizeInUse":16384}},{"Endpoint":"https://10.0.0.13:2379","Status":{"header":{"cluster_id":17953654596774702974,"member_id":17290902756751276855,"revision":1,"raft_term":2},"version":"3.4.23","dbSize":20480,"leader":11421717585761795258,"raftIndex":3000,"raftTerm":2,"raftAppliedIndex":3000,"dbSizeInUse":16384}}]`;
const HEALTH = `[{"endpoint":"https://10.0.0.12:2379","health":true,"took":"2.535632ms"},{"endpoint":"https://10.0.0.1:2379","health":true,"took":"2.481711ms"},{"endpoint":"https://10.0.0.13:2379","health":false,"took":"3.001017791s","error":"context deadline exceeded"}]`;

describe('k8s-kubeadm etcdctl output', () => {
  it('keeps uint64 member ids exact and prints them in hex', () => {
    assert.ok(!JSON.stringify(JSON.parse(MEMBER_LIST)).includes('11421717585761795258'), 'JSON.parse alone would round the id');
    const ms = parseMemberList(MEMBER_LIST);
    assert.deepEqual(
      ms.map((m) => [m.id, m.name, m.isLearner]),
      [
        ['975050037397374526', 'master1', false],
        ['11421717585761795258', 'master12', false],
        ['17290902756751276855', 'master13', false],
        ['12345678901234567890', '', true],
      ],
    );
    assert.equal(memberIdHex('17290902756751276855'), 'eff5a07235fb7b37');
    assert.equal(memberIdFromHex('eff5a07235fb7b37'), '17290902756751276855');
    assert.equal(quoteBigInts('{"a":"https://x:2380","n":12}'), '{"a":"https://x:2380","n":12}');
  });

  it('matches a member by name AND peer URL, exactly', () => {
    const ms = parseMemberList(MEMBER_LIST);
    assert.equal(findMember(ms, 'master1', '10.0.0.1')?.id, '975050037397374526');
    assert.equal(findMember(ms, 'master1', '10.0.0.12'), undefined, 'name without its peer URL');
    assert.equal(findMember(ms, 'master', '10.0.0.1'), undefined, 'no prefix match');
    assert.deepEqual(
      membersWithPeerIp(ms, '10.0.0.14').map((m) => m.id),
      ['12345678901234567890'],
    );
  });

  it('reads the leader, health (dead endpoint, raft lag) from status and health', () => {
    const ms = parseMemberList(MEMBER_LIST).filter((m) => !m.isLearner);
    const st = parseEndpointStatus(STATUS);
    assert.equal(leaderOf(st), '11421717585761795258');
    const h = parseEndpointHealth(HEALTH);
    assert.deepEqual(
      h.map((x) => x.health),
      [true, true, false],
    );
    const mh = memberHealth(ms, st, h, 1000);
    assert.deepEqual(
      mh.map((m) => [m.name, m.healthy]),
      [
        ['master1', true],
        ['master12', true],
        ['master13', false],
      ],
    );
    assert.match(mh[2]?.reason ?? '', /context deadline exceeded/);
    // healthy endpoint but lagging
    const h2 = parseEndpointHealth(HEALTH.replace('"health":false', '"health":true'));
    assert.match(memberHealth(ms, st, h2, 1000)[2]?.reason ?? '', /lags the leader by 2010 raft entries/);
    // text form of endpoint health
    assert.deepEqual(parseEndpointHealth('https://127.0.0.1:2379 is healthy: successfully committed proposal: took = 2.1ms\nhttps://10.0.0.13:2379 is unhealthy: failed to commit proposal: context deadline exceeded'), [
      { endpoint: 'https://127.0.0.1:2379', health: true },
      { endpoint: 'https://10.0.0.13:2379', health: false, error: 'failed to commit proposal: context deadline exceeded' },
    ]);
    assert.deepEqual(parseEndpointStatus(''), []);
  });
});

describe('k8s-kubeadm /etc/hosts block, damaged markers', () => {
  it('a BEGIN without END keeps the following lines', () => {
    const orig = `127.0.0.1 localhost\n${HOSTS_BEGIN}\n10.0.0.7 keepme\n`;
    const r = applyHostsBlock(orig, [{ ip: '10.0.0.1', name: 'master1' }]);
    assert.equal(r, `127.0.0.1 localhost\n${HOSTS_BEGIN}\n10.0.0.1 master1\n${HOSTS_END}\n10.0.0.7 keepme\n`);
  });
});
