/**
 * The repository is self-contained and its tests never change the machine: nothing in src, test,
 * scripts, bench or .ci reads a folder outside the clone, and no test installs packages (the apt
 * package manager runs in scripts/test-all.sh and scripts/real-heat/setup.sh only).
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, it } from 'node:test';
import { FIXTURES_DIR, REPO_ROOT } from './helpers/fixtures.ts';

const CODE = /\.(ts|mjs|js|sh|py)$|^run$/;

function files(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (p === FIXTURES_DIR || name === 'node_modules') continue;
    if (statSync(p).isDirectory()) out.push(...files(p));
    else if (CODE.test(name)) out.push(p);
  }
  return out;
}

const ALL = ['src', 'test', 'scripts', 'bench', '.ci'].flatMap((d) => files(join(REPO_ROOT, d)));
const rel = (p: string): string => relative(REPO_ROOT, p);

describe('repository hygiene', () => {
  it('finds the code it checks', () => {
    assert.ok(ALL.length > 100, `only ${ALL.length} files found`);
    assert.ok(ALL.some((f) => rel(f) === '.ci/run'));
  });

  it('reads nothing outside the clone (no sibling folder, no environment variable pointing at one)', () => {
    const outside = ['..', 'shared'].join('/');
    const envName = ['VNFM', 'SHARED', 'DIR'].join('_');
    const hits = ALL.filter((f) => {
      const text = readFileSync(f, 'utf8');
      return text.includes(`${outside}/`) || text.includes(`'${outside}'`) || text.includes(envName);
    }).map(rel);
    assert.deepEqual(hits, []);
  });

  it('installs nothing from a test (the package manager runs only in the bring-up scripts)', () => {
    const allowed = new Set(['scripts/test-all.sh', 'scripts/real-heat/setup.sh']);
    const word = ['apt', 'get'].join('-');
    const hits = ALL.filter((f) => !allowed.has(rel(f)) && readFileSync(f, 'utf8').includes(word)).map(rel);
    assert.deepEqual(hits, []);
  });
});
