#!/usr/bin/env node
// Runs every test file under test/ (or the files given as arguments) with node:test + tsx, after
// the dependency rule check (scripts/check-deps.mjs): a violation fails the run before any test.
// Node 20 does not expand globs for `--test`, so the list is built here. The run fails when
// zero tests ran, and prints the runner's summary (tests / pass / fail / skipped), then one line
// with the test stages that ran and those skipped with why (test/helpers/stages.ts).
// VNFM_TEST_REQUIRE=pg,real-heat,tacker-cli,kubectl,lab,browser (or all) makes a stage that cannot run fail.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';

const STAGES = ['pg', 'real-heat', 'tacker-cli', 'kubectl', 'lab', 'browser'];
const required = new Set();
for (const n of (process.env.VNFM_TEST_REQUIRE ?? '').split(',').map((s) => s.trim()).filter(Boolean)) {
  if (n === 'all') STAGES.forEach((s) => required.add(s));
  else if (STAGES.includes(n)) required.add(n);
  else {
    console.error(`VNFM_TEST_REQUIRE names an unknown stage "${n}" (known: ${STAGES.join(', ')}, all)`);
    process.exit(2);
  }
}

const deps = spawnSync(process.execPath, [join(import.meta.dirname, 'check-deps.mjs')], { stdio: 'inherit' });
if (deps.status !== 0) {
  console.error('FAIL: the dependency rule check failed (node scripts/check-deps.mjs)');
  process.exit(1);
}

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
// Files that take the machine-wide lab lock (test/helpers/lab-exclusive.ts) run one at a time; a
// lab file started while another holds the lock only waits and keeps a runner slot idle. So they
// are spread evenly through the list (the first one first: their chain is long) instead of
// sitting side by side in alphabetical order.
const isExclusive = (f) => readFileSync(f, 'utf8').includes('await labTestsExclusive(');
const exclusive = files.filter(isExclusive);
if (exclusive.length > 1) {
  const rest = files.filter((f) => !exclusive.includes(f));
  const step = rest.length / exclusive.length;
  const ordered = [];
  let next = 0;
  rest.forEach((f, i) => {
    while (next < exclusive.length && i >= Math.floor(next * step)) ordered.push(exclusive[next++]);
    ordered.push(f);
  });
  while (next < exclusive.length) ordered.push(exclusive[next++]);
  files.splice(0, files.length, ...ordered);
}
const concurrency = process.env.VNFM_TEST_CONCURRENCY ?? '2';
const stageDir = mkdtempSync(join(tmpdir(), 'vnfm-test-stages-'));
if (required.size > 0) console.log(`required test stages: ${[...required].join(', ')}`);
const timesDir = mkdtempSync(join(tmpdir(), 'vnfm-test-times-'));
const timesFile = join(timesDir, 'file-times.jsonl');
const child = spawn(
  process.execPath,
  [
    '--import',
    'tsx',
    '--test',
    `--test-concurrency=${concurrency}`,
    '--test-reporter=spec',
    '--test-reporter-destination=stdout',
    `--test-reporter=${join(import.meta.dirname, 'file-times-reporter.mjs')}`,
    `--test-reporter-destination=${timesFile}`,
    ...files,
  ],
  { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, NODE_ENV: 'test', VNFM_TEST_STAGE_DIR: stageDir } },
);

/** The slowest test files (top-level tests and suites added up), a line each. */
function slowestFiles(n) {
  let rows = [];
  try {
    rows = readFileSync(timesFile, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
  } catch {
    return '';
  } finally {
    rmSync(timesDir, { recursive: true, force: true });
  }
  rows.sort((a, b) => b.ms - a.ms);
  const total = rows.reduce((t, r) => t + r.ms, 0);
  const lines = rows.slice(0, n).map((r) => `  ${(r.ms / 1000).toFixed(1).padStart(7)} s  ${relative('.', r.file)}`);
  return `slowest test files (of ${rows.length}, ${Math.round(total / 1000)} s in all, run ${concurrency} at a time):\n${lines.join('\n')}`;
}

/** One line: which stages ran, which were skipped and why (from the files test processes wrote). */
function stageLine() {
  const ran = new Set();
  const skipped = new Map();
  for (const f of readdirSync(stageDir)) {
    for (const line of readFileSync(join(stageDir, f), 'utf8').split('\n')) {
      if (!line) continue;
      const r = JSON.parse(line);
      if (r.ran) ran.add(r.stage);
      else skipped.set(r.stage, r.reason);
    }
  }
  rmSync(stageDir, { recursive: true, force: true });
  for (const s of ran) skipped.delete(s);
  const parts = [`ran: sims${[...ran].sort().map((s) => `, ${s}`).join('')}`];
  parts.push(skipped.size === 0 ? 'skipped stages: none' : `skipped stages: ${[...skipped].map(([s, why]) => `${s} (${why})`).join('; ')}`);
  return { line: `test stages ${parts.join(' | ')}`, skipped };
}
let tail = '';
let count = 0;
child.stdout.on('data', (chunk) => {
  process.stdout.write(chunk);
  // keep a small window so a summary line split across chunks is still seen
  tail = (tail + chunk.toString()).slice(-8000);
  for (const m of tail.matchAll(/(?:ℹ|#) tests (\d+)/g)) count = Number(m[1]);
});
child.on('close', (code) => {
  const slow = slowestFiles(12);
  if (slow) console.log(slow);
  const { line, skipped } = stageLine();
  console.log(line);
  const missing = [...skipped.keys()].filter((s) => required.has(s));
  if (missing.length > 0) {
    console.error(`FAIL: required test stages did not run: ${missing.join(', ')}`);
    process.exit(1);
  }
  if (count === 0) {
    console.error('FAIL: zero tests ran');
    process.exit(1);
  }
  process.exit(code ?? 1);
});
