/**
 * How one logs in to the lab hosts: one local user for all of them (created with `useradd -m` when
 * absent; its password set through `chpasswd`'s stdin, never on a command line), passwordless sudo
 * through `/etc/sudoers.d/hvlab` (validated with `visudo -cf` before it is installed, removed when
 * the lab stops), and the lab's generated secrets in `<labDir>/credentials.json` (mode 0600).
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { run, SYSTEM_PATH } from './sh.ts';

/** The sudoers drop-in of the lab. */
export const SUDOERS_FILE = '/etc/sudoers.d/hvlab';

/** Secrets the lab generates once and keeps in its directory. */
export interface LabSecrets {
  /** Password of the lab user (unless the configuration gives one). */
  password: string;
  /** Bearer token of the lab's Kubernetes API. */
  kubernetesToken: string;
}

/** Characters allowed in paths and names the lab writes into shell and sudoers files unquoted. */
export const SAFE_VALUE = /^[A-Za-z0-9_./:@+=-]+$/;

/**
 * Reads `<labDir>/credentials.json`, generating what is missing (written with mode 0600). The
 * configured password, when given, wins and is not written. `file` undefined keeps them in memory.
 */
export function loadSecrets(file: string | undefined, configuredPassword: string | undefined): LabSecrets {
  let saved: Partial<LabSecrets> = {};
  if (file && existsSync(file)) {
    try {
      saved = JSON.parse(readFileSync(file, 'utf8')) as Partial<LabSecrets>;
    } catch {
      saved = {};
    }
  }
  const secrets: LabSecrets = {
    password: configuredPassword ?? (typeof saved.password === 'string' && saved.password ? saved.password : randomBytes(18).toString('base64url')),
    kubernetesToken: typeof saved.kubernetesToken === 'string' && /^[0-9a-f]{32,}$/.test(saved.kubernetesToken) ? saved.kubernetesToken : randomBytes(24).toString('hex'),
  };
  if (file) {
    const keep: Partial<LabSecrets> = { kubernetesToken: secrets.kubernetesToken, ...(configuredPassword === undefined ? { password: secrets.password } : {}) };
    const tmp = `${file}.tmp`;
    writeFileSync(tmp, `${JSON.stringify(keep, null, 2)}\n`, { mode: 0o600 });
    chmodSync(tmp, 0o600);
    renameSync(tmp, file);
  }
  return secrets;
}

/** Creates the lab user when absent and sets its password (through stdin). Returns whether it was created. */
export async function ensureUser(user: string, password: string, binDir: string): Promise<boolean> {
  if (!/^[a-z_][a-z0-9_-]{0,31}$/.test(user)) throw new Error(`lab.user ${JSON.stringify(user)} is not a valid user name`);
  if (/[:\n]/.test(password)) throw new Error('lab.password must not contain ":" or a line break');
  const exists = (await run('getent', ['passwd', user], { allowFail: true })).code === 0;
  if (!exists) await run('useradd', ['-m', '-s', '/bin/bash', '-c', 'healvnfm lab hosts', user]);
  await run('chpasswd', [], { input: `${user}:${password}\n` });
  // Login shells read /etc/profile, which resets PATH: put the stand-ins first again.
  const home = (await run('getent', ['passwd', user])).stdout.split(':')[5];
  if (home && existsSync(home)) {
    const profile = join(home, '.profile');
    const begin = '# >>> healvnfm lab >>>';
    const end = '# <<< healvnfm lab <<<';
    const block = `${begin}\ncase ":$PATH:" in *":${binDir}:"*) ;; *) PATH="${binDir}:$PATH" ;; esac\n${end}\n`;
    const text = existsSync(profile) ? readFileSync(profile, 'utf8') : '';
    const stripped = text.replace(new RegExp(`${begin}[\\s\\S]*?${end}\\n?`, 'g'), '');
    if (stripped + block !== text) {
      writeFileSync(profile, stripped + block);
      const ids = (await run('id', ['-u', user])).stdout.trim();
      const gid = (await run('id', ['-g', user])).stdout.trim();
      await run('chown', [`${ids}:${gid}`, profile]);
    }
  }
  return !exists;
}

/** The sudoers drop-in: passwordless sudo for the lab user, the stand-ins first on sudo's PATH. */
export function sudoersText(user: string, binDir: string): string {
  return [
    '# healvnfm lab: the lab user may run anything as root without a password (the hosts\' stand-ins need root).',
    '# Written when the lab starts, removed when it stops.',
    `Defaults:${user} secure_path="${binDir}:${SYSTEM_PATH}"`,
    `${user} ALL=(ALL:ALL) NOPASSWD: ALL`,
    '',
  ].join('\n');
}

/** Validates the drop-in with `visudo -cf` and installs it (mode 0440). */
export async function installSudoers(user: string, binDir: string): Promise<void> {
  const tmp = `${SUDOERS_FILE}.hvlab-new`;
  writeFileSync(tmp, sudoersText(user, binDir), { mode: 0o440 });
  try {
    await run('visudo', ['-cf', tmp]);
    chmodSync(tmp, 0o440);
    renameSync(tmp, SUDOERS_FILE);
  } finally {
    rmSync(tmp, { force: true });
  }
}

/** Removes the drop-in (when the lab stops). */
export function removeSudoers(): void {
  rmSync(SUDOERS_FILE, { force: true });
}
