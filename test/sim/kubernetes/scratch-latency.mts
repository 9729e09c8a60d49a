import { request } from 'node:http';
import { startKubernetesSim } from '../../../src/sim/kubernetes/index.ts';
const sim = await startKubernetesSim({});
const h = { authorization: `Bearer ${sim.token}`, 'content-type': 'application/json' };
const base = sim.httpUrl;
const N = Number(process.argv[2] ?? 200);
await fetch(`${base}/apis/apps/v1/namespaces/default/deployments`, { method: 'POST', headers: h, body: JSON.stringify({ metadata: { name: 'w' }, spec: { replicas: N, selector: { matchLabels: { app: 'w' } }, template: { metadata: { labels: { app: 'w' } }, spec: { containers: [{ name: 'c', image: 'i:1' }] } } } }) });
const readyAt = new Map<string, number>();
const req = request(`${base}/api/v1/namespaces/default/pods?watch=1&labelSelector=app%3Dw`, { headers: h }, (res) => {
  let buf = '';
  res.on('data', (c) => {
    buf += c;
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      const ev = JSON.parse(buf.slice(0, i));
      buf = buf.slice(i + 1);
      const p = ev.object;
      if (p.status?.conditions?.some((c: any) => c.type === 'Ready' && c.status === 'True') && !readyAt.has(p.metadata.name)) readyAt.set(p.metadata.name, Date.now());
    }
  });
});
req.end();
let t = Date.now();
while (readyAt.size < N) await new Promise((r) => setTimeout(r, 5));
console.log(`${N} pods ready in ${Date.now() - t} ms`);
const samples: number[] = [];
for (let i = 0; i < 10; i++) {
  const before = new Set(readyAt.keys());
  const victim = [...before][i] as string;
  t = Date.now();
  await fetch(`${base}/api/v1/namespaces/default/pods/${victim}`, { method: 'DELETE', headers: h });
  while (readyAt.size === before.size) await new Promise((r) => setImmediate(r));
  const fresh = [...readyAt.entries()].find(([n]) => !before.has(n)) as [string, number];
  samples.push(fresh[1] - t);
  await new Promise((r) => setTimeout(r, 150));
}
console.log('replacement ready ms', samples.join(' '));
req.destroy();
await sim.close();
