/**
 * Chaos run from the command line (see docs/reliability.md):
 *
 *   npx tsx bench/chaos/run.ts [--minutes 10] [--replicas 3] [--db pg|pglite] [--seed S] [--pg-url URL]
 *       [--cpu-hogs N] [--lease-ms 5000]
 *
 * Prints the figures and the invariants table; exits 1 on any violation.
 */
import { parseArgs } from 'node:util';
import { abortAll, formatReport, runChaos } from './harness.ts';

const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '10' },
    replicas: { type: 'string', default: '3' },
    db: { type: 'string', default: 'pg' },
    seed: { type: 'string' },
    'pg-url': { type: 'string' },
    vms: { type: 'string', default: '3' },
    cnfs: { type: 'string', default: '2' },
    json: { type: 'string' },
    'cpu-hogs': { type: 'string', default: '0' },
    'lease-ms': { type: 'string', default: '5000' },
  },
});
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.on(sig, () => {
    abortAll();
    process.exit(130);
  });
}
if (values.db !== 'pg' && values.db !== 'pglite') throw new Error('--db must be pg or pglite');
const report = await runChaos({
  durationMs: Math.round(Number(values.minutes) * 60_000),
  replicas: Number(values.replicas),
  db: values.db,
  ...(values.seed !== undefined ? { seed: Number(values.seed) } : {}),
  ...(values['pg-url'] ? { pgUrl: values['pg-url'] } : {}),
  vmInstances: Number(values.vms),
  cnfInstances: Number(values.cnfs),
  cpuHogs: Number(values['cpu-hogs']),
  leaseMs: Number(values['lease-ms']),
});
console.log(formatReport(report));
if (values.json) (await import('node:fs')).writeFileSync(values.json, JSON.stringify(report, null, 2));
process.exit(report.violations > 0 ? 1 : 0);
