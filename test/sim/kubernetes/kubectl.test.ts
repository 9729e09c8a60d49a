/**
 * The real kubectl against the simulated cluster: discovery, apply (with and without client
 * validation), get -o wide, delete with replacement, scale, rollout status, describe, StatefulSet
 * with volumeClaimTemplates and stable identities, namespaces, cordon/drain and error output.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type KubernetesSim, startKubernetesSim } from '../../../src/sim/kubernetes/index.ts';
import { stage } from '../../helpers/stages.ts';
import { type KubectlResult, kubectlFor, simFetch, waitFor } from './sim-test-helpers.ts';

const { skip } = await stage('kubectl');

const DEPLOYMENT = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web}
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: nginx
        image: nginx:1.25
        ports:
        - containerPort: 80
`;

const STATEFULSET = `
apiVersion: v1
kind: Service
metadata: {name: db}
spec:
  clusterIP: None
  selector: {app: db}
  ports: [{port: 5432, name: pg}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  replicas: 3
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers:
      - name: pg
        image: postgres:16
        volumeMounts: [{name: data, mountPath: /var/lib/postgresql/data}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Gi}}
`;

function ok(r: KubectlResult, what: string): string {
  assert.equal(r.code, 0, `${what} failed: ${r.stderr || r.stdout}`);
  return r.stdout;
}

/** Data rows of kubectl table output (header dropped), split on runs of spaces. */
function rows(out: string): string[][] {
  return out
    .trim()
    .split('\n')
    .slice(1)
    .filter((l) => l.trim())
    .map((l) => l.trim().split(/\s{2,}/));
}

describe('simulated Kubernetes with the real kubectl', { skip }, () => {
  let sim: KubernetesSim;
  let k: ReturnType<typeof kubectlFor>;

  before(async () => {
    sim = await startKubernetesSim({ kubeletDelayMs: 30 });
    k = kubectlFor(sim);
  });

  after(async () => {
    k?.cleanup();
    await sim?.close();
  });

  it('lists the worker nodes as Ready', async () => {
    const out = ok(await k.run(['get', 'nodes', '-o', 'wide']), 'get nodes');
    const r = rows(out);
    assert.deepEqual(
      r.map((x) => [x[0], x[1]]),
      [
        ['worker-1', 'Ready'],
        ['worker-2', 'Ready'],
        ['worker-3', 'Ready'],
      ],
    );
    assert.match(out, /INTERNAL-IP/);
    assert.match(out, /192\.168\.0\.11/);
  });

  it('applies a Deployment with default validation, then again with --validate=false', async () => {
    assert.match(ok(await k.run(['apply', '-f', '-'], DEPLOYMENT), 'apply'), /deployment\.apps\/web created/);
    assert.match(ok(await k.run(['apply', '--validate=false', '-f', '-'], DEPLOYMENT), 'apply again'), /deployment\.apps\/web unchanged/);
    assert.match(ok(await k.run(['rollout', 'status', 'deployment/web', '--timeout=20s']), 'rollout status'), /successfully rolled out/);
    const rs = rows(ok(await k.run(['get', 'rs', '-l', 'app=web']), 'get rs'));
    assert.equal(rs.length, 1);
    assert.match(rs[0]?.[0] ?? '', /^web-[bcdfghjklmnpqrstvwxz2456789]+$/);
  });

  it('shows pods with IP and node in -o wide, named <rs>-<5 chars>', async () => {
    const out = ok(await k.run(['get', 'pods', '-l', 'app=web', '-o', 'wide']), 'get pods');
    assert.match(out.split('\n')[0] ?? '', /NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\s+IP\s+NODE/);
    const r = rows(out);
    assert.equal(r.length, 2);
    for (const p of r) {
      assert.match(p[0] ?? '', /^web-[a-z0-9]+-[a-z0-9]{5}$/);
      assert.equal(p[1], '1/1');
      assert.equal(p[2], 'Running');
      assert.match(p[5] ?? '', /^10\.244\.\d+\.\d+$/);
      assert.match(p[6] ?? '', /^worker-\d$/);
    }
    assert.notEqual(r[0]?.[6], r[1]?.[6], 'replicas are spread over nodes');
  });

  it('replaces a deleted Deployment pod', async () => {
    const before = rows(ok(await k.run(['get', 'pods', '-l', 'app=web']), 'get pods')).map((r) => r[0] as string);
    const victim = before[0] as string;
    assert.match(ok(await k.run(['delete', 'pod', victim]), 'delete pod'), new RegExp(`pod "${victim}" deleted`));
    const now = await waitFor('replacement pod Running', async () => {
      const r = rows(ok(await k.run(['get', 'pods', '-l', 'app=web']), 'get pods'));
      return r.length === 2 && r.every((p) => p[2] === 'Running') && !r.some((p) => p[0] === victim) ? r : undefined;
    });
    assert.ok(now.some((p) => !before.includes(p[0] as string)), 'a new pod name appeared');
  });

  it('scales with kubectl scale and waits with rollout status', async () => {
    assert.match(ok(await k.run(['scale', 'deployment', 'web', '--replicas=3']), 'scale'), /deployment\.apps\/web scaled/);
    ok(await k.run(['rollout', 'status', 'deployment/web', '--timeout=20s']), 'rollout status');
    const r = rows(ok(await k.run(['get', 'pods', '-l', 'app=web', '-o', 'wide']), 'get pods'));
    assert.equal(r.length, 3);
    assert.equal(new Set(r.map((p) => p[6])).size, 3, 'one replica per node');
    const d = JSON.parse(ok(await k.run(['get', 'deployment', 'web', '-o', 'json']), 'get deploy json'));
    assert.equal(d.spec.replicas, 3);
    assert.equal(d.status.readyReplicas, 3);
    assert.equal(d.status.updatedReplicas, 3);
    assert.equal(d.status.availableReplicas, 3);
    assert.equal(d.status.observedGeneration, d.metadata.generation);
    assert.deepEqual(
      d.status.conditions.map((c: { type: string; status: string }) => `${c.type}=${c.status}`),
      ['Available=True', 'Progressing=True'],
    );
  });

  it('rolls out a new image and keeps revision history', async () => {
    ok(await k.run(['set', 'image', 'deployment/web', 'nginx=nginx:1.27']), 'set image');
    ok(await k.run(['rollout', 'status', 'deployment/web', '--timeout=20s']), 'rollout status');
    const images = rows(ok(await k.run(['get', 'pods', '-l', 'app=web', '-o', 'custom-columns=NAME:.metadata.name,IMAGE:.spec.containers[0].image']), 'get pods')).map((r) => r[1]);
    assert.deepEqual(images, ['nginx:1.27', 'nginx:1.27', 'nginx:1.27']);
    assert.match(ok(await k.run(['rollout', 'history', 'deployment/web']), 'history'), /1\s+<none>\s*\n2\s+<none>/);
  });

  it('describes a pod with its controller, conditions and events', async () => {
    const name = rows(ok(await k.run(['get', 'pods', '-l', 'app=web']), 'get pods'))[0]?.[0] as string;
    const out = ok(await k.run(['describe', 'pod', name]), 'describe');
    assert.match(out, /Status:\s+Running/);
    assert.match(out, /Node:\s+worker-\d\/192\.168\.0\.\d+/);
    assert.match(out, /Controlled By:\s+ReplicaSet\/web-/);
    assert.match(out, /Ready\s+True/);
    assert.match(out, /Events:/);
    assert.match(out, /Scheduled\s+.*default-scheduler\s+Successfully assigned default\/.* to worker-\d/);
    assert.match(out, /Started\s+.*kubelet\s+Started container nginx/);
  });

  it('runs a StatefulSet with volumeClaimTemplates and keeps pod names and PVCs', async () => {
    ok(await k.run(['apply', '-f', '-'], STATEFULSET), 'apply sts');
    ok(await k.run(['rollout', 'status', 'statefulset/db', '--timeout=20s']), 'rollout status sts');
    const out = ok(await k.run(['get', 'sts,pvc']), 'get sts,pvc');
    assert.match(out, /statefulset\.apps\/db\s+3\/3/);
    for (const i of [0, 1, 2]) assert.match(out, new RegExp(`persistentvolumeclaim/data-db-${i}\\s+Bound\\s+pvc-[0-9a-f-]+\\s+1Gi\\s+RWO\\s+standard`));
    const pods = rows(ok(await k.run(['get', 'pods', '-l', 'app=db']), 'get pods')).map((r) => r[0]);
    assert.deepEqual(pods, ['db-0', 'db-1', 'db-2']);

    const pvcUid = ok(await k.run(['get', 'pvc', 'data-db-1', '-o', 'jsonpath={.metadata.uid}']), 'pvc uid');
    const podUid = ok(await k.run(['get', 'pod', 'db-1', '-o', 'jsonpath={.metadata.uid}']), 'pod uid');
    ok(await k.run(['delete', 'pod', 'db-1']), 'delete db-1');
    const newUid = await waitFor('db-1 back and Running', async () => {
      const r = await k.run(['get', 'pod', 'db-1', '-o', 'jsonpath={.metadata.uid} {.status.phase}']);
      const [uid, phase] = r.stdout.split(' ');
      return r.code === 0 && uid && uid !== podUid && phase === 'Running' ? uid : undefined;
    });
    assert.notEqual(newUid, podUid);
    assert.equal(ok(await k.run(['get', 'pvc', 'data-db-1', '-o', 'jsonpath={.metadata.uid}']), 'pvc uid again'), pvcUid);
    assert.equal(ok(await k.run(['get', 'pod', 'db-1', '-o', "jsonpath={.spec.volumes[?(@.name=='data')].persistentVolumeClaim.claimName}"]), 'claim'), 'data-db-1');

    ok(await k.run(['delete', 'statefulset', 'db']), 'delete sts');
    await waitFor('StatefulSet pods gone', async () => rows((await k.run(['get', 'pods', '-l', 'app=db'])).stdout).length === 0);
    const pvcs = rows(ok(await k.run(['get', 'pvc']), 'get pvc')).map((r) => r[0]);
    assert.deepEqual(pvcs, ['data-db-0', 'data-db-1', 'data-db-2'], 'PVCs survive StatefulSet deletion');
    assert.equal(ok(await k.run(['get', 'pvc', 'data-db-1', '-o', 'jsonpath={.metadata.uid}']), 'pvc uid after sts delete'), pvcUid);
  });

  it('creates and deletes a namespace with content', async () => {
    ok(await k.run(['apply', '-f', '-'], 'apiVersion: v1\nkind: Namespace\nmetadata: {name: team-a}\n'), 'apply ns');
    ok(await k.run(['-n', 'team-a', 'apply', '-f', '-'], DEPLOYMENT), 'apply deploy in ns');
    ok(await k.run(['-n', 'team-a', 'rollout', 'status', 'deployment/web', '--timeout=20s']), 'rollout');
    assert.match(ok(await k.run(['delete', 'namespace', 'team-a']), 'delete ns'), /namespace "team-a" deleted/);
    const r = await k.run(['get', 'namespace', 'team-a']);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /NotFound.*namespaces "team-a" not found/);
    const left = await simFetch(sim, 'GET', '/api/v1/namespaces/team-a/pods');
    assert.equal(left.body.items.length, 0);
  });

  it('cordons and drains a node (evictions), DaemonSet-free', async () => {
    ok(await k.run(['drain', 'worker-1', '--ignore-daemonsets', '--timeout=20s']), 'drain');
    const nodes = rows(ok(await k.run(['get', 'nodes']), 'get nodes'));
    assert.equal(nodes.find((n) => n[0] === 'worker-1')?.[1], 'Ready,SchedulingDisabled');
    ok(await k.run(['rollout', 'status', 'deployment/web', '--timeout=20s']), 'rollout after drain');
    const pods = rows(ok(await k.run(['get', 'pods', '-o', 'wide']), 'get pods'));
    assert.ok(pods.length >= 3);
    assert.ok(pods.every((p) => p[6] !== 'worker-1'), 'nothing left on the drained node');
    ok(await k.run(['uncordon', 'worker-1']), 'uncordon');
  });

  it('supports the kubectl create generators (protobuf bodies), expose and run', async () => {
    assert.match(ok(await k.run(['create', 'namespace', 'gen']), 'create ns'), /namespace\/gen created/);
    assert.match(ok(await k.run(['-n', 'gen', 'create', 'deployment', 'api', '--image=api:1', '--replicas=2', '--port=8080']), 'create deployment'), /deployment\.apps\/api created/);
    ok(await k.run(['-n', 'gen', 'create', 'configmap', 'cfg', '--from-literal=mode=fast']), 'create configmap');
    ok(await k.run(['-n', 'gen', 'create', 'secret', 'generic', 'creds', '--from-literal=user=admin']), 'create secret');
    ok(await k.run(['-n', 'gen', 'create', 'service', 'nodeport', 'api-np', '--tcp=80:8080']), 'create service');
    ok(await k.run(['-n', 'gen', 'expose', 'deployment', 'api', '--port=80', '--target-port=8080', '--name=api']), 'expose');
    ok(await k.run(['-n', 'gen', 'run', 'probe', '--image=busybox:1.36', '--labels=role=probe']), 'run');
    ok(await k.run(['-n', 'gen', 'rollout', 'status', 'deployment/api', '--timeout=20s']), 'rollout');
    const d = JSON.parse(ok(await k.run(['-n', 'gen', 'get', 'deployment', 'api', '-o', 'json']), 'get'));
    assert.equal(d.spec.replicas, 2);
    assert.equal(d.spec.template.spec.containers[0].image, 'api:1');
    assert.equal(d.spec.template.spec.containers[0].ports[0].containerPort, 8080);
    assert.equal(ok(await k.run(['-n', 'gen', 'get', 'configmap', 'cfg', '-o', 'jsonpath={.data.mode}']), 'cm'), 'fast');
    assert.equal(ok(await k.run(['-n', 'gen', 'get', 'secret', 'creds', '-o', 'jsonpath={.data.user}']), 'secret'), Buffer.from('admin').toString('base64'));
    const np = JSON.parse(ok(await k.run(['-n', 'gen', 'get', 'service', 'api-np', '-o', 'json']), 'svc'));
    assert.ok(np.spec.ports[0].nodePort >= 30000 && np.spec.ports[0].nodePort <= 32767);
    const ep = await waitFor('endpoints of the exposed deployment', async () => {
      const r = await k.run(['-n', 'gen', 'get', 'endpoints', 'api', '-o', 'jsonpath={.subsets[0].addresses[*].ip}']);
      return r.stdout.split(' ').filter(Boolean).length === 2 ? r.stdout : undefined;
    });
    assert.match(ep, /10\.244\./);
    await waitFor('probe pod Running', async () => (await k.run(['-n', 'gen', 'get', 'pod', 'probe', '-o', 'jsonpath={.status.phase}'])).stdout === 'Running');
    ok(await k.run(['delete', 'namespace', 'gen']), 'delete ns');
  });

  it('reports API errors the way kubectl expects', async () => {
    const nf = await k.run(['get', 'pod', 'nope']);
    assert.equal(nf.code, 1);
    assert.match(nf.stderr, /Error from server \(NotFound\): pods "nope" not found/);
    const inv = await k.run(['apply', '-f', '-'], 'apiVersion: v1\nkind: Pod\nmetadata: {name: bad}\nspec: {containers: []}\n');
    assert.notEqual(inv.code, 0);
    assert.match(inv.stderr, /Pod "bad" is invalid: spec\.containers: Required value/);
  });
});
