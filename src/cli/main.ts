#!/usr/bin/env node
/**
 * The `vnfm` command. `vnfm start` runs the VNFM (embedded database and, unless --no-sim, the
 * simulated cloud; with --lab, the live-VM lab too) on 127.0.0.1:9890 by default.
 */
import { Command } from 'commander';
import { ConfigError, type ConfigInput, resolveConfig } from '../config.ts';
import { startVnfm } from '../main/server.ts';
import { checkLabPrerequisites, LabStartError } from '../main/lab.ts';
import { SimStateUnusableError } from '../main/sim-cloud.ts';
import { stopWithDeadline } from '../main/shutdown.ts';
import { DataDirLockedError } from '../store/data-dir-lock.ts';

const program = new Command();
program.name('vnfm').description('ETSI NFV VNF Manager focused on healing');

program
  .command('start')
  .description('run the VNFM (and the simulated cloud unless --no-sim)')
  .option('-c, --config <file>', 'config file (JSON or YAML)')
  .option('--host <host>', 'listen address')
  .option('-p, --port <port>', 'listen port')
  .option('--public-url <url>', 'base URL clients use to reach the VNFM')
  .option('--data-dir <dir>', 'embedded database directory')
  .option('--database-url <url>', 'PostgreSQL URL (instead of the embedded database)')
  .option('--log-level <level>', 'log level (trace, debug, info, warn, error)')
  .option('--no-sim', 'do not start the simulated cloud')
  .option('--reset-sim', 'start the simulated cloud empty (delete its saved state in <data-dir>/sim)')
  .option('--lab', 'also start the live-VM lab: servers on the lab network become hosts with sshd (root; docs/lab.md)')
  .action(async (o: Record<string, string | boolean | undefined>) => {
    const flags: ConfigInput = {};
    if (o.host) flags.host = o.host as string;
    if (o.port) flags.port = Number(o.port);
    if (o.publicUrl) flags.publicUrl = o.publicUrl as string;
    if (o.dataDir) flags.dataDir = o.dataDir as string;
    if (o.databaseUrl) flags.databaseUrl = o.databaseUrl as string;
    if (o.logLevel) flags.logLevel = o.logLevel as string;
    if (o.sim === false) flags.sim = false;
    if (o.resetSim === true) flags.simReset = true;
    if (o.lab === true) flags.lab = { enabled: true };
    let config: ReturnType<typeof resolveConfig>;
    try {
      config = resolveConfig({ file: o.config as string | undefined, env: process.env, flags });
    } catch (e) {
      if (e instanceof ConfigError) {
        console.error(`configuration error: ${e.message}`);
        process.exit(2);
      }
      throw e;
    }
    if (config.lab.enabled) {
      try {
        await checkLabPrerequisites();
      } catch (e) {
        if (e instanceof LabStartError) {
          console.error(`cannot start: ${e.message}`);
          process.exit(1);
        }
        throw e;
      }
    }
    let vnfm: Awaited<ReturnType<typeof startVnfm>>;
    try {
      vnfm = await startVnfm(config);
    } catch (e) {
      if (e instanceof DataDirLockedError) {
        console.error(`cannot start: ${e.message}`);
        process.exit(3);
      }
      if (e instanceof SimStateUnusableError || e instanceof LabStartError) {
        console.error(`cannot start: ${e.message}`);
        process.exit(1);
      }
      throw e;
    }
    let stopping = false;
    const stop = async (signal: string) => {
      if (stopping) {
        // A second signal: do not wait for the grace period (ops stop at their next safe point,
        // their leases are released for the next process).
        vnfm.ctx.engine.runner.abortAll(`second ${signal} during shutdown`);
        return;
      }
      stopping = true;
      const deadlineMs = config.runner.shutdownGraceMs + config.runner.shutdownMarginMs;
      vnfm.ctx.log.info({ signal, graceMs: config.runner.shutdownGraceMs, deadlineMs }, 'stopping: no new operations are claimed; running ones get the grace period');
      await stopWithDeadline(vnfm, { deadlineMs, log: vnfm.ctx.log });
    };
    process.on('SIGINT', () => void stop('SIGINT'));
    process.on('SIGTERM', () => void stop('SIGTERM'));
  });

const key = program.command('key').description('the master key of the secrets at rest (docs/security.md, "Key rotation")');
for (const [name, prune, description] of [
  ['rotate', false, 'new master key: written first in the key file (old keys kept to open), every sealed value re-sealed with it'],
  ['prune', true, 'finish a rotation: re-seal what an old key still seals, then drop the old keys from the key file'],
] as const) {
  key
    .command(name)
    .description(description)
    .option('-c, --config <file>', 'config file (JSON or YAML)')
    .option('--data-dir <dir>', 'embedded database directory')
    .option('--database-url <url>', 'PostgreSQL URL')
    .option('--secret-key-file <file>', 'key file (default <data-dir>/secret.key)')
    .action(async (o: Record<string, string | undefined>) => {
      const flags: ConfigInput = { sim: false };
      if (o.dataDir) flags.dataDir = o.dataDir;
      if (o.databaseUrl) flags.databaseUrl = o.databaseUrl;
      if (o.secretKeyFile) flags.secretKeyFile = o.secretKeyFile;
      let config: ReturnType<typeof resolveConfig>;
      try {
        config = resolveConfig({ file: o.config, env: process.env, flags });
      } catch (e) {
        if (e instanceof ConfigError) {
          console.error(`configuration error: ${e.message}`);
          process.exit(2);
        }
        throw e;
      }
      const { rotateKey } = await import('../main/key-rotation.ts');
      try {
        const r = await rotateKey(config, { prune });
        const n = Object.values(r.report.resealed).reduce((a, b) => a + b, 0);
        console.log(`${name === 'rotate' ? 'rotated' : 'pruned'}: ${n} sealed value(s) re-sealed with key ${r.currentKeyId}${r.keyFile ? `; key file ${r.keyFile} holds ${r.keyIds.join(', ')}` : ''}`);
        for (const [k, v] of Object.entries(r.report.resealed)) console.log(`  ${k}: ${v}`);
        if (r.report.contended > 0) {
          console.error('some rows changed during every pass; run the command again');
          process.exit(1);
        }
      } catch (e) {
        if (e instanceof DataDirLockedError) {
          console.error(`cannot ${name}: ${e.message} (stop the VNFM first: the embedded database is single-process)`);
          process.exit(3);
        }
        console.error(`cannot ${name}: ${(e as Error).message}`);
        process.exit(1);
      }
    });
}

program
  .command('csar <dir> <out>')
  .description('build a VNF package (CSAR zip) from a package folder such as samples/vm-basic')
  .action(async (dir: string, out: string) => {
    const { buildCsarFromDir } = await import('../packages/csar-reader.ts');
    const { writeFileSync } = await import('node:fs');
    writeFileSync(out, buildCsarFromDir(dir));
    console.log(`wrote ${out}`);
  });

program
  .command('onboard <dir>')
  .description('build a CSAR from a package folder and onboard it on a running VNFM; prints the vnfdId')
  .option('--url <url>', 'VNFM base URL', 'http://127.0.0.1:9890')
  .action(async (dir: string, o: { url: string }) => {
    const { buildCsarFromDir } = await import('../packages/csar-reader.ts');
    const created = await fetch(`${o.url}/vnfpkgm/v1/vnf_packages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    if (created.status !== 201) throw new Error(`create package: ${created.status} ${await created.text()}`);
    const { id } = (await created.json()) as { id: string };
    const up = await fetch(`${o.url}/vnfpkgm/v1/vnf_packages/${id}/package_content`, { method: 'PUT', headers: { 'content-type': 'application/zip' }, body: new Uint8Array(buildCsarFromDir(dir)) });
    if (up.status !== 202) throw new Error(`upload: ${up.status} ${await up.text()}`);
    for (let i = 0; i < 100; i++) {
      const p = (await (await fetch(`${o.url}/vnfpkgm/v1/vnf_packages/${id}`)).json()) as { onboardingState: string; vnfdId?: string; onboardingFailureDetails?: { detail: string } };
      if (p.onboardingState === 'ONBOARDED') {
        console.log(`package ${id} onboarded, vnfdId ${p.vnfdId}`);
        return;
      }
      if (p.onboardingState === 'ERROR') {
        console.error(`onboarding failed: ${p.onboardingFailureDetails?.detail}`);
        process.exit(1);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    console.error('onboarding did not finish in 10 s');
    process.exit(1);
  });

/** The config of a command that works on the VNFM's data (the same layering as `vnfm start`). */
function dataConfig(o: { config?: string; dataDir?: string; databaseUrl?: string }): ReturnType<typeof resolveConfig> {
  try {
    return resolveConfig({ file: o.config, env: process.env, flags: { ...(o.dataDir ? { dataDir: o.dataDir } : {}), ...(o.databaseUrl ? { databaseUrl: o.databaseUrl } : {}) } });
  } catch (e) {
    if (e instanceof ConfigError) {
      console.error(`configuration error: ${e.message}`);
      process.exit(2);
    }
    throw e;
  }
}

/**
 * Runs `fn` on the OAuth 2.0 clients: through a running VNFM's API (`--url`, an admin token in
 * VNFM_ADMIN_TOKEN, never on the command line), or on the database directly (the first admin
 * client; with the embedded database only while the VNFM is stopped).
 */
async function withClients<T>(o: { url?: string; config?: string; dataDir?: string; databaseUrl?: string }, viaApi: (url: string, token: string) => Promise<T>, direct: (svc: import('../api/auth/oauth2.ts').OAuthService) => Promise<T>): Promise<T> {
  if (o.url) {
    const token = process.env.VNFM_ADMIN_TOKEN;
    if (!token) {
      console.error('set VNFM_ADMIN_TOKEN to an admin token of the VNFM (it is not taken from the command line)');
      process.exit(2);
    }
    return viaApi(o.url.replace(/\/+$/, ''), token);
  }
  const config = dataConfig(o);
  const { openStore } = await import('../store/db.ts');
  const { OAuthService } = await import('../api/auth/oauth2.ts');
  let store: Awaited<ReturnType<typeof openStore>>;
  try {
    store = await openStore({ databaseUrl: config.databaseUrl, dataDir: config.dataDir });
  } catch (e) {
    if (e instanceof DataDirLockedError) {
      console.error(`cannot open the data directory: ${e.message}; with the VNFM running, use --url and an admin token`);
      process.exit(3);
    }
    throw e;
  }
  try {
    return await direct(new OAuthService(store.db, config.auth.oauth2));
  } finally {
    await store.close();
  }
}

async function apiCall(url: string, token: string, method: string, path: string, body?: unknown): Promise<unknown> {
  const r = await fetch(`${url}${path}`, { method, headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) }, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
  const text = await r.text();
  if (r.status >= 400) {
    console.error(`${method} ${path}: HTTP ${r.status} ${text}`);
    process.exit(1);
  }
  return text ? JSON.parse(text) : undefined;
}

const oauthClient = program.command('oauth2-client').description('OAuth 2.0 clients of the built-in token endpoint (apiAuth oauth2; docs/security.md)');
const dataOptions = (c: Command) =>
  c
    .option('--url <url>', 'a running VNFM (then VNFM_ADMIN_TOKEN holds an admin token)')
    .option('-c, --config <file>', 'config file (without --url: the database is opened directly)')
    .option('--data-dir <dir>', 'embedded database directory (the VNFM must be stopped)')
    .option('--database-url <url>', 'PostgreSQL URL');
dataOptions(oauthClient.command('create').description('register a client; prints its id and secret (shown only this once)'))
  .requiredOption('--name <name>', 'name of the client (an NFVO, an operator tool)')
  .requiredOption('--role <role>', 'reader, operator or admin')
  .option('--project <project>', 'project (tenant) of the client; none: an admin sees all, others only resources without a project')
  .option('--certificate-bound', 'tokens only over mTLS, bound to the client certificate (RFC 8705)')
  .action(async (o: { name: string; role: string; project?: string; certificateBound?: boolean; url?: string; config?: string; dataDir?: string; databaseUrl?: string }) => {
    if (!['reader', 'operator', 'admin'].includes(o.role)) {
      console.error('--role must be reader, operator or admin');
      process.exit(2);
    }
    const input = { name: o.name, role: o.role as 'reader', ...(o.project ? { project: o.project } : {}), ...(o.certificateBound ? { certificateBound: true } : {}) };
    const c = await withClients(o, (url, token) => apiCall(url, token, 'POST', '/vnfm/v1/oauth2/clients', input), (svc) => svc.register(input));
    console.log(JSON.stringify(c, null, 2));
  });
dataOptions(oauthClient.command('list').description('list the clients (never their secrets)')).action(async (o: { url?: string; config?: string; dataDir?: string; databaseUrl?: string }) => {
  console.log(JSON.stringify(await withClients(o, (url, token) => apiCall(url, token, 'GET', '/vnfm/v1/oauth2/clients'), (svc) => svc.list()), null, 2));
});
dataOptions(oauthClient.command('delete <clientId>').description('delete a client and its tokens')).action(async (id: string, o: { url?: string; config?: string; dataDir?: string; databaseUrl?: string }) => {
  await withClients(o, (url, token) => apiCall(url, token, 'DELETE', `/vnfm/v1/oauth2/clients/${encodeURIComponent(id)}`), (svc) => svc.delete(id));
  console.log(`client ${id} deleted`);
});

await program.parseAsync(process.argv);
