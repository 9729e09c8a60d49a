/**
 * The LB reconciler's pure parts: desired frontends from Services and Nodes, deterministic
 * rendering of an owner's section, parsing owned sections, conflicts, membership-only diffs.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  apiServerFrontend,
  composeLbConfig,
  conflicts,
  defaultBase,
  type LbNode,
  lbOwner,
  type LbOwnerConfig,
  membershipOnly,
  nodePortFrontends,
  parseLbConfig,
  parseOwnerSection,
  renderOwnerSection,
  withNodeMembers,
  sha256,
  shapeOf,
} from '../../../src/mgmt/lb/index.ts';

const ID_A = '3f2a9c1e-0000-4000-8000-000000000001';
const ID_B = '7b6d5e4f-0000-4000-8000-000000000002';
const nodes: LbNode[] = [
  { name: 'worker-b', address: '10.87.0.12', ready: true, schedulable: true },
  { name: 'worker-a', address: '10.87.0.11', ready: true, schedulable: true },
  { name: 'worker-c', address: '10.87.0.13', ready: false, schedulable: true },
  { name: 'worker-d', address: '10.87.0.14', ready: true, schedulable: false },
];
const services = [
  { namespace: 'default', name: 'web', type: 'NodePort', ports: [{ name: 'http', port: 80, nodePort: 30080 }, { port: 53, nodePort: 30053, protocol: 'UDP' }] },
  { namespace: 'default', name: 'api', type: 'LoadBalancer', ports: [{ port: 8080, nodePort: 30001 }] },
  { namespace: 'default', name: 'internal', type: 'ClusterIP', ports: [{ port: 9000 }] },
  { namespace: 'default', name: 'pending', type: 'NodePort', ports: [{ port: 81 }] },
];

describe('nodePortFrontends', () => {
  it('one frontend per TCP node port of NodePort/LoadBalancer Services, Ready schedulable nodes as servers on that port', () => {
    const { frontends, unpublished } = nodePortFrontends({ instanceId: ID_A, services, nodes });
    assert.deepEqual(frontends.map((f) => [f.name, f.bind]), [
      ['np_3f2a9c1e_default_web_30080', 30080],
      ['np_3f2a9c1e_default_api_30001', 30001],
    ]);
    assert.deepEqual(frontends[0]?.servers, [
      { name: 'worker-b', address: '10.87.0.12', port: 30080 },
      { name: 'worker-a', address: '10.87.0.11', port: 30080 },
    ]);
    assert.deepEqual(unpublished.map((u) => [u.service, u.port, u.protocol]), [
      ['default/web', 53, 'UDP'],
      ['default/pending', 81, 'TCP'],
    ]);
  });
  it('names frontends per CNF instance, so two CNFs with the same Service never share a name', () => {
    const a = nodePortFrontends({ instanceId: ID_A, services, nodes }).frontends.map((f) => f.name);
    const b = nodePortFrontends({ instanceId: ID_B, services, nodes }).frontends.map((f) => f.name);
    assert.equal(a.filter((n) => b.includes(n)).length, 0);
  });
});

describe('renderOwnerSection', () => {
  const config = (): LbOwnerConfig => ({ owner: lbOwner('cnf', ID_A), frontends: nodePortFrontends({ instanceId: ID_A, services, nodes }).frontends });
  it('is deterministic: input order does not change the bytes', () => {
    const c1 = config();
    const c2 = config();
    c2.frontends.reverse();
    for (const f of c2.frontends) f.servers.reverse();
    assert.equal(renderOwnerSection(c1), renderOwnerSection(c2));
    assert.equal(sha256(renderOwnerSection(c1)), sha256(renderOwnerSection(c2)));
  });
  it('renders a marked section with a frontend and a backend per port, servers with their port and checks', () => {
    const text = renderOwnerSection(config());
    const lines = text.split('\n');
    assert.equal(lines[0], `# BEGIN healvnfm cnf-${ID_A}`);
    assert.equal(lines[lines.length - 1], `# END healvnfm cnf-${ID_A}`);
    assert.match(text, /^frontend np_3f2a9c1e_default_web_30080\n {4}mode tcp\n {4}bind \*:30080\n {4}option tcplog\n {4}default_backend np_3f2a9c1e_default_web_30080$/m);
    assert.match(text, /^ {4}server worker-a 10\.87\.0\.11:30080 check inter 2s fall 2 rise 1$/m);
    assert.ok(text.indexOf('server worker-a') < text.indexOf('server worker-b'), 'servers sorted by name');
    assert.ok(!text.includes('worker-c') && !text.includes('worker-d'), 'NotReady and cordoned nodes are not servers');
  });
  it('refuses bad names, duplicate names and duplicate ports', () => {
    assert.throws(() => renderOwnerSection({ owner: 'cnf x', frontends: [] }), /owner/);
    assert.throws(() => renderOwnerSection({ owner: 'o', frontends: [{ name: 'a b', bind: 1, servers: [] }] }), /name/);
    assert.throws(() => renderOwnerSection({ owner: 'o', frontends: [{ name: 'a', bind: 1, servers: [] }, { name: 'a', bind: 2, servers: [] }] }), /twice/);
    assert.throws(() => renderOwnerSection({ owner: 'o', frontends: [{ name: 'a', bind: 1, servers: [] }, { name: 'b', bind: 1, servers: [] }] }), /both bind port 1/);
    assert.throws(() => renderOwnerSection({ owner: 'o', frontends: [{ name: 'a', bind: 70000, servers: [] }] }), /not 1-65535/);
    assert.throws(() => renderOwnerSection({ owner: 'o', frontends: [{ name: 'a', bind: 1, servers: [{ name: 's', address: 'x;rm', port: 1 }] }] }), /not an IP/);
  });
  it('renders the cluster API frontend: 8383 to every master on 6443', () => {
    const f = apiServerFrontend({ masters: [{ name: 'master11', address: '10.87.0.11' }] });
    const text = renderOwnerSection({ owner: lbOwner('cluster', ID_B), frontends: [f] });
    assert.match(text, /bind \*:8383/);
    assert.match(text, /server master11 10\.87\.0\.11:6443 check/);
  });
});

describe('parseLbConfig / composeLbConfig', () => {
  const a = renderOwnerSection({ owner: 'cnf-a', frontends: [{ name: 'fa', bind: 30000, servers: [] }] });
  const b = renderOwnerSection({ owner: 'cnf-b', frontends: [{ name: 'fb', bind: 30001, servers: [] }] });
  const base = defaultBase({ runtimeSocket: '/etc/haproxy/admin.sock' });
  it('keeps the base and other owners byte for byte, sorts sections by owner', () => {
    const text = composeLbConfig(base, new Map([['cnf-b', b], ['cnf-a', a]]));
    assert.ok(text.indexOf('cnf-a') < text.indexOf('cnf-b'));
    const p = parseLbConfig(text);
    assert.equal(p.base, base);
    assert.equal(p.owners.get('cnf-a'), a);
    assert.equal(p.owners.get('cnf-b'), b);
    // removing the first owner leaves the second exactly as it was (Tacker's delete corrupted it)
    const without = composeLbConfig(p.base, new Map([['cnf-b', b]]));
    assert.equal(parseLbConfig(without).owners.get('cnf-b'), b);
    assert.deepEqual([...shapeOf(without).frontends.keys()], ['fb']);
    assert.equal(composeLbConfig(parseLbConfig(text).base, parseLbConfig(text).owners), text, 'parse + compose is the identity');
  });
  it('refuses unbalanced or nested markers', () => {
    assert.throws(() => parseLbConfig('# BEGIN healvnfm x\nfrontend f\n'), /no end marker/);
    assert.throws(() => parseLbConfig('# END healvnfm x\n'), /without its beginning/);
    assert.throws(() => parseLbConfig('# BEGIN healvnfm x\n# BEGIN healvnfm y\n# END healvnfm y\n# END healvnfm x\n'), /inside/);
  });
  it('reports names and ports another owner or the base already uses', () => {
    const p = parseLbConfig(composeLbConfig(`${base}\n\nlisten stats\n    bind *:1080\n`, new Map([['cnf-a', a]])));
    assert.deepEqual(conflicts(p, { owner: 'cnf-b', frontends: [{ name: 'fb', bind: 30001, servers: [] }] }), []);
    assert.match(conflicts(p, { owner: 'cnf-b', frontends: [{ name: 'fa', bind: 30005, servers: [] }] }).join(), /fa is already defined by owner cnf-a/);
    assert.match(conflicts(p, { owner: 'cnf-b', frontends: [{ name: 'x', bind: 30000, servers: [] }] }).join(), /port 30000 .* owner cnf-a/);
    assert.match(conflicts(p, { owner: 'cnf-b', frontends: [{ name: 'x', bind: 1080, servers: [] }] }).join(), /port 1080 .* base/);
    assert.deepEqual(conflicts(p, { owner: 'cnf-a', frontends: [{ name: 'fa', bind: 30000, servers: [] }] }), [], 'an owner does not conflict with itself');
  });
});

describe('membershipOnly', () => {
  const cfg = (servers: { name: string; address: string }[], bind = 30080): LbOwnerConfig => ({
    owner: 'cnf-a',
    frontends: [{ name: 'np', bind, servers: servers.map((s) => ({ ...s, port: bind })) }],
  });
  const live = renderOwnerSection(cfg([{ name: 'w1', address: '10.0.0.1' }, { name: 'w2', address: '10.0.0.2' }]));
  it('lists added, removed and moved servers when only members change', () => {
    assert.deepEqual(membershipOnly(live, cfg([{ name: 'w1', address: '10.0.0.1' }, { name: 'w2', address: '10.0.0.2' }])), []);
    assert.deepEqual(membershipOnly(live, cfg([{ name: 'w1', address: '10.0.0.1' }, { name: 'w3', address: '10.0.0.3' }])), [
      { backend: 'np', add: [{ name: 'w3', address: '10.0.0.3', port: 30080 }], remove: ['w2'] },
    ]);
    assert.deepEqual(membershipOnly(live, cfg([{ name: 'w1', address: '10.0.0.9' }, { name: 'w2', address: '10.0.0.2' }])), [
      { backend: 'np', add: [{ name: 'w1', address: '10.0.0.9', port: 30080 }], remove: ['w1'] },
    ]);
  });
  it('is undefined when a port or a frontend changes (a reload is needed)', () => {
    assert.equal(membershipOnly(live, cfg([{ name: 'w1', address: '10.0.0.1' }], 30081)), undefined);
    assert.equal(membershipOnly(live, { owner: 'cnf-a', frontends: [] }), undefined);
  });
});

describe('parseOwnerSection / withNodeMembers', () => {
  const c: LbOwnerConfig = {
    owner: lbOwner('cluster', ID_B),
    frontends: [
      apiServerFrontend({ masters: [{ name: 'master11', address: '10.87.0.11' }] }),
      ...nodePortFrontends({ instanceId: ID_A, services, nodes }).frontends,
      { name: 'v6', bind: 30999, servers: [{ name: 'n6', address: 'fd00::1', port: 30999 }], check: 'check inter 5s' },
    ],
  };
  it('reads a rendered section back into the same config (render -> parse -> render is the identity)', () => {
    const text = renderOwnerSection(c);
    const back = parseOwnerSection(text);
    assert.ok(back);
    assert.equal(renderOwnerSection(back), text);
    assert.equal(back.owner, c.owner);
  });
  it('refuses a section edited by hand', () => {
    const text = renderOwnerSection(c).replace('    option tcplog', '    option tcplog\n    timeout client 5s');
    assert.equal(parseOwnerSection(text), undefined);
  });
  it('gives node-port backends the current Ready nodes, leaves the API server backend alone', () => {
    const now = withNodeMembers(c, [{ name: 'worker-x', address: '10.87.0.40', ready: true, schedulable: true }, { name: 'worker-y', address: '10.87.0.41', ready: false, schedulable: true }]);
    const api = now.frontends.find((f) => f.name === 'kubernetes-apiserver');
    assert.deepEqual(api?.servers, [{ name: 'master11', address: '10.87.0.11', port: 6443 }]);
    const web = now.frontends.find((f) => f.bind === 30080);
    assert.deepEqual(web?.servers, [{ name: 'worker-x', address: '10.87.0.40', port: 30080 }]);
    assert.equal(membershipOnly(renderOwnerSection(c), now), undefined, 'a frontend with its own check arguments needs a reload');
    const plain = { ...c, frontends: c.frontends.filter((f) => f.name !== 'v6') };
    const changes = membershipOnly(renderOwnerSection(plain), withNodeMembers(plain, [{ name: 'worker-x', address: '10.87.0.40', ready: true, schedulable: true }]));
    assert.deepEqual(changes?.find((x) => x.backend === web?.name)?.remove.sort(), ['worker-a', 'worker-b']);
    assert.equal(changes?.some((x) => x.backend === 'kubernetes-apiserver'), false);
  });
});
