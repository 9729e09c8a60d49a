/**
 * The etcd quorum gate (Cluster API KCP rule): the table of cases (3 control-plane members
 * tolerate 0 extra failures after a removal, 5 tolerate 1, 7 tolerate 2), learners, the
 * addition gate, the per-op master target limit, and refusals naming the members at fault.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkAddition, checkRemoval, type GateMember, masterTargetsRefusal, maxMasterTargets, quorumOf } from '../../../src/mgmt/drivers/k8s-kubeadm/quorum.ts';

function cluster(n: number, unhealthy: number[] = []): GateMember[] {
  return Array.from({ length: n }, (_, i) => ({ id: String(1000 + i), name: `master${i + 1}`, isLearner: false, healthy: !unhealthy.includes(i + 1), ...(unhealthy.includes(i + 1) ? { reason: 'endpoint does not answer' } : {}) }));
}

describe('k8s-kubeadm etcd quorum gate', () => {
  it('table: removing one member of a healthy cluster of 3 / 5 / 7, with extra failures among the others', () => {
    // [members, extra unhealthy members among the survivors, allowed]
    const table: [number, number, boolean][] = [
      [3, 0, true],
      [3, 1, false],
      [5, 0, true],
      [5, 1, true],
      [5, 2, false],
      [7, 0, true],
      [7, 2, true],
      [7, 3, false],
    ];
    for (const [n, extra, allowed] of table) {
      const sick = Array.from({ length: extra }, (_, i) => n - i); // the last members are sick; master1 is removed
      const r = checkRemoval(cluster(n, sick), ['1000']);
      assert.equal(r.ok, allowed, `${n} members, ${extra} unhealthy survivors`);
      assert.equal(r.voting, n - 1);
      assert.equal(r.quorum, quorumOf(n - 1));
    }
  });

  it('removing the unhealthy member itself is allowed; a healthy one while another is down is refused naming it', () => {
    assert.equal(checkRemoval(cluster(3, [2]), ['1001']).ok, true);
    const r = checkRemoval(cluster(3, [2]), ['1000']);
    assert.equal(r.ok, false);
    if (!r.ok) {
      assert.match(r.message, /removing master1 would leave 2 voting member\(s\) of which 1 unhealthy \(master2 \(endpoint does not answer\)\); quorum needs 2 healthy: refused/);
    }
  });

  it('refuses while a learner is present', () => {
    const ms = [...cluster(3), { id: '2000', name: '', isLearner: true, healthy: false }];
    const r = checkRemoval(ms, ['1000']);
    assert.equal(r.ok, false);
    if (!r.ok) assert.match(r.message, /learner member is present \(member 7d0\)/);
    assert.equal(checkAddition(ms).ok, false);
  });

  it('addition assumes the joining member unhealthy', () => {
    // after a removal in a 3-master cluster: 2 healthy members, adding the third is fine
    assert.equal(checkAddition(cluster(2)).ok, true);
    // 2 members, one of them sick: the join could lose quorum
    const r = checkAddition(cluster(2, [2]));
    assert.equal(r.ok, false);
    if (!r.ok) assert.match(r.message, /master2/);
    // a single-member cluster may always add
    assert.equal(checkAddition(cluster(1)).ok, true);
  });

  it('per-op master targets: floor((masters-1)/2), never a single master (Tacker wording)', () => {
    assert.deepEqual([1, 2, 3, 4, 5, 7].map(maxMasterTargets), [0, 0, 1, 1, 2, 3]);
    assert.equal(masterTargetsRefusal(1, 1), 'The number of Master-Nodes is 1 or less. If you want to heal, please respawn.');
    assert.match(masterTargetsRefusal(3, 2) ?? '', /at most 1 master\(s\) replaced at a time; 2 master targets/);
    assert.match(masterTargetsRefusal(2, 1) ?? '', /cannot lose a member/);
    assert.equal(masterTargetsRefusal(3, 1), undefined);
    assert.equal(masterTargetsRefusal(5, 2), undefined);
    assert.equal(masterTargetsRefusal(1, 0), undefined);
  });
});
