/**
 * Runs the simulated OpenStack alone, e.g. `npx tsx src/sim/openstack/main.ts --port 5000`.
 * Options come from flags or environment so it can serve a demo, a container or a manual test.
 */
import { parseArgs } from 'node:util';
import { startOpenStackSim } from './openstack-sim.ts';
import type { SimLogger } from './options.ts';

const { values } = parseArgs({
  options: {
    host: { type: 'string', default: process.env.OS_SIM_HOST ?? '127.0.0.1' },
    port: { type: 'string', default: process.env.OS_SIM_PORT ?? '5000' },
    hosts: { type: 'string', default: process.env.OS_SIM_HOSTS ?? '3' },
    'heat-delay-ms': { type: 'string', default: process.env.OS_SIM_HEAT_DELAY_MS ?? '50' },
    'vnfm-url': { type: 'string', default: process.env.OS_SIM_VNFM_URL ?? 'http://127.0.0.1:9890/' },
    'fault-webhook': { type: 'string', default: process.env.OS_SIM_FAULT_WEBHOOK },
    'public-url': { type: 'string', default: process.env.OS_SIM_PUBLIC_URL },
    'state-dir': { type: 'string', default: process.env.OS_SIM_STATE_DIR },
    verbose: { type: 'boolean', default: false },
  },
});

const log = (level: string) => (obj: object, msg?: string) => {
  process.stderr.write(`${JSON.stringify({ level, time: new Date().toISOString(), msg, ...obj })}\n`);
};
const quiet = () => {};
const logger: SimLogger = {
  info: log('info'),
  warn: log('warn'),
  error: log('error'),
  debug: values.verbose ? log('debug') : quiet,
};

const sim = await startOpenStackSim({
  host: values.host,
  port: Number(values.port),
  hosts: Number(values.hosts),
  heatDelayMs: Number(values['heat-delay-ms']),
  vnfmUrl: values['vnfm-url'],
  faultWebhook: values['fault-webhook'],
  publicUrl: values['public-url'],
  adminSecret: process.env.OS_SIM_ADMIN_SECRET,
  ...(values['state-dir'] ? { stateDir: values['state-dir'] } : {}),
  logger,
});
process.stdout.write(
  `OpenStack sim: auth URL ${sim.authUrl}  user ${sim.credentials.username}  project ${sim.credentials.project} (${sim.credentials.projectId})  region ${sim.credentials.region}\n`,
);
const stop = (): void => {
  void sim.close().then(() => process.exit(0));
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
