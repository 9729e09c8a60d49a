/**
 * Runs the simulated Kubernetes cluster on its own:
 * `npx tsx src/sim/kubernetes/main.ts --port 6443 [--host 127.0.0.1] [--token T] [--nodes 3]
 *  [--kubelet-delay-ms 100] [--kubeconfig ./sim.kubeconfig] [--state-dir ./sim-state] [--verbose]`.
 * Prints the URL and the token so kubectl or the VNFM can be pointed at it.
 */
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { startKubernetesSim } from './kubernetes-sim.ts';

const { values } = parseArgs({
  options: {
    host: { type: 'string', default: '127.0.0.1' },
    port: { type: 'string', default: '6443' },
    token: { type: 'string' },
    nodes: { type: 'string', default: '3' },
    'kubelet-delay-ms': { type: 'string', default: '100' },
    kubeconfig: { type: 'string' },
    'state-dir': { type: 'string' },
    verbose: { type: 'boolean', default: false },
  },
});

const sim = await startKubernetesSim({
  host: values.host,
  port: Number(values.port),
  token: values.token,
  nodes: Number(values.nodes),
  kubeletDelayMs: Number(values['kubelet-delay-ms']),
  ...(values['state-dir'] ? { stateDir: values['state-dir'] } : {}),
  logger: values.verbose ? (line) => process.stdout.write(`${new Date().toISOString()} ${line}\n`) : undefined,
});

process.stdout.write(`simulated Kubernetes API listening on ${sim.url} (plain HTTP on ${sim.httpUrl})\n`);
process.stdout.write(`token: ${sim.token}\n`);
if (values.kubeconfig) {
  writeFileSync(values.kubeconfig, sim.kubeconfig(), { mode: 0o600 });
  process.stdout.write(`kubeconfig written to ${values.kubeconfig} (use: kubectl --kubeconfig ${values.kubeconfig} get nodes)\n`);
}

const stop = () => {
  void sim.close().then(() => process.exit(0));
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
