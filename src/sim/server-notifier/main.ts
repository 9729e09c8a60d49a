/**
 * Runs the Server Notifier sim alone, e.g.
 * `npx tsx src/sim/server-notifier/main.ts --port 5001 --openstack-url http://127.0.0.1:5000`.
 */
import { parseArgs } from 'node:util';
import { type NotificationAuth, type NotifierLogger, startServerNotifierSim } from './server-notifier-sim.ts';

const { values } = parseArgs({
  options: {
    host: { type: 'string', default: process.env.SN_SIM_HOST ?? '127.0.0.1' },
    port: { type: 'string', default: process.env.SN_SIM_PORT ?? '5001' },
    'openstack-url': { type: 'string', default: process.env.SN_SIM_OPENSTACK_URL },
    auth: { type: 'string', default: process.env.SN_SIM_AUTH },
    'no-subscribe': { type: 'boolean', default: false },
    'state-dir': { type: 'string', default: process.env.SN_SIM_STATE_DIR },
    verbose: { type: 'boolean', default: false },
  },
});

const log = (level: string) => (obj: object, msg?: string) => {
  process.stderr.write(`${JSON.stringify({ level, time: new Date().toISOString(), msg, ...obj })}\n`);
};
const logger: NotifierLogger = {
  info: log('info'),
  warn: log('warn'),
  error: log('error'),
  debug: values.verbose ? log('debug') : () => {},
};
let notificationAuth: NotificationAuth | undefined;
if (process.env.SN_SIM_NOTIFY_BEARER) notificationAuth = { type: 'bearer', token: process.env.SN_SIM_NOTIFY_BEARER };
else if (process.env.SN_SIM_NOTIFY_USER && process.env.SN_SIM_NOTIFY_PASSWORD) {
  notificationAuth = { type: 'basic', username: process.env.SN_SIM_NOTIFY_USER, password: process.env.SN_SIM_NOTIFY_PASSWORD };
}
const auth = values.auth === 'none' || values.auth === 'keystone' ? values.auth : undefined;

const sim = await startServerNotifierSim({
  host: values.host,
  port: Number(values.port),
  openstackUrl: values['openstack-url'],
  auth,
  subscribe: !values['no-subscribe'],
  adminSecret: process.env.SN_SIM_ADMIN_SECRET,
  openstackAdminSecret: process.env.OS_SIM_ADMIN_SECRET,
  notificationAuth,
  ...(values['state-dir'] ? { stateDir: values['state-dir'] } : {}),
  logger,
});
process.stdout.write(`Server Notifier sim: ${sim.url} (ServerNotifierUri)\n`);
const stop = (): void => {
  void sim.close().then(() => process.exit(0));
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
