#!/usr/bin/env node
// Runs every test file under test/ (or the files given as arguments) with node:test + tsx.
// Node 20 does not expand globs for `--test`, so the list is built here. The run fails when
// zero tests ran, and prints the runner's summary (tests / pass / fail).
import { spawn } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

function walk(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...walk(p));
    else if (name.endsWith('.test.ts')) out.push(p);
  }
  return out;
}

const args = process.argv.slice(2);
const files = (args.length > 0 ? args : walk('test')).map((f) => relative('.', f)).sort();
if (files.length === 0) {
  console.error('no test files found');
  process.exit(1);
}
const concurrency = process.env.VNFM_TEST_CONCURRENCY ?? '2';
const child = spawn(
  process.execPath,
  ['--import', 'tsx', '--test', `--test-concurrency=${concurrency}`, '--test-reporter=spec', ...files],
  { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, NODE_ENV: 'test' } },
);
let tail = '';
let count = 0;
child.stdout.on('data', (chunk) => {
  process.stdout.write(chunk);
  // keep a small window so a summary line split across chunks is still seen
  tail = (tail + chunk.toString()).slice(-8000);
  for (const m of tail.matchAll(/(?:ℹ|#) tests (\d+)/g)) count = Number(m[1]);
});
child.on('close', (code) => {
  if (count === 0) {
    console.error('FAIL: zero tests ran');
    process.exit(1);
  }
  process.exit(code ?? 1);
});
