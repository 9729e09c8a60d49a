#!/usr/bin/env node
// Runs every test file under test/ (or the files given as arguments) with node:test + tsx, after
// the dependency rule check (scripts/check-deps.mjs): a violation fails the run before any test.
// Node 20 does not expand globs for `--test`, so the list is built here. The run fails when
// zero tests ran, and prints the runner's summary (tests / pass / fail / skipped) of each lane (the
// lab files in a lane of their own, see below) and both lanes' totals, the slowest files, then one
// line with the test stages that ran and those skipped with why (test/helpers/stages.ts).
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
// Files that take the machine-wide lab lock (test/helpers/lab-exclusive.ts) run one at a time.
// They run in a lane of their own (one file at a time) beside the other files (VNFM_TEST_CONCURRENCY
// at a time): a lab file never holds a slot of the main lane while it waits for the lock, and the
// run takes about the longer of the two lanes. The lab lane's report is printed as a block when
// that lane ends (after the main lane's, if the main lane is still running).
const isExclusive = (f) => readFileSync(f, 'utf8').includes('await labTestsExclusive(');
const labFiles = files.filter(isExclusive);
const mainFiles = files.filter((f) => !labFiles.includes(f));
const concurrency = process.env.VNFM_TEST_CONCURRENCY ?? '2';
const stageDir = mkdtempSync(join(tmpdir(), 'vnfm-test-stages-'));
if (required.size > 0) console.log(`required test stages: ${[...required].join(', ')}`);
const timesDir = mkdtempSync(join(tmpdir(), 'vnfm-test-times-'));

/** Runs one lane: node:test over `laneFiles`, `n` files at a time. */
function lane(name, laneFiles, n, stream) {
  const timesFile = join(timesDir, `${name}.jsonl`);
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      '--test',
      `--test-concurrency=${n}`,
      '--test-reporter=spec',
      '--test-reporter-destination=stdout',
      `--test-reporter=${join(import.meta.dirname, 'file-times-reporter.mjs')}`,
      `--test-reporter-destination=${timesFile}`,
      ...laneFiles,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, NODE_ENV: 'test', VNFM_TEST_STAGE_DIR: stageDir } },
  );
  const out = [];
  // a window on the end of the report: the summary, even when split across chunks
  let tail = '';
  child.stdout.on('data', (chunk) => {
    if (stream) process.stdout.write(chunk);
    else out.push(chunk);
    tail = (tail + chunk.toString()).slice(-8000);
  });
  return new Promise((resolve) => {
    child.on('close', (code) => resolve({ name, code, text: Buffer.concat(out).toString(), counts: counters(tail), files: laneFiles.length }));
  });
}

/** The counters of node:test's summary, in its order. */
const COUNTERS = ['tests', 'suites', 'pass', 'fail', 'cancelled', 'skipped', 'todo'];
const COUNTER_LINE = new RegExp(`^(?:ℹ|#) (${COUNTERS.join('|')}) (\\d+)$`, 'gm');

/** The summary counters of a node:test report (the last value of each). */
function counters(text) {
  const c = {};
  for (const m of text.matchAll(COUNTER_LINE)) c[m[1]] = Number(m[2]);
  return c;
}

/** The slowest test files (top-level tests and suites added up), a line each. */
function slowestFiles(n) {
  const rows = [];
  try {
    for (const f of readdirSync(timesDir)) rows.push(...readFileSync(join(timesDir, f), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)));
  } catch {
    return '';
  } finally {
    rmSync(timesDir, { recursive: true, force: true });
  }
  if (rows.length === 0) return '';
  rows.sort((a, b) => b.ms - a.ms);
  const total = rows.reduce((t, r) => t + r.ms, 0);
  const lines = rows.slice(0, n).map((r) => `  ${(r.ms / 1000).toFixed(1).padStart(7)} s  ${relative('.', r.file)}`);
  return `slowest test files (of ${rows.length}, ${Math.round(total / 1000)} s in all):\n${lines.join('\n')}`;
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

const t0 = Date.now();
const lanes = [];
// the main lane streams its report; the lab lane's is printed when it ends
if (mainFiles.length > 0) lanes.push(lane('main', mainFiles, concurrency, true));
if (labFiles.length > 0) {
  const main = lanes[0];
  lanes.push(
    lane('lab', labFiles, 1, mainFiles.length === 0).then(async (r) => {
      if (main) await main;
      if (mainFiles.length > 0) {
        process.stdout.write(`\n--- the lab lane (${r.files} files, one at a time) ---\n`);
        process.stdout.write(r.text);
      }
      return r;
    }),
  );
}
const results = await Promise.all(lanes);
const total = {};
for (const r of results) for (const [k, v] of Object.entries(r.counts)) total[k] = (total[k] ?? 0) + v;
if (results.length > 1) {
  console.log(`\nboth lanes (${Math.round((Date.now() - t0) / 1000)} s): ${COUNTERS.map((k) => `${k} ${total[k] ?? 0}`).join(', ')}`);
  for (const r of results) if (r.counts.fail > 0 || r.code !== 0) console.log(`the ${r.name} lane failed (exit ${r.code}): its failing tests are listed at the end of its report above`);
}
const slow = slowestFiles(12);
if (slow) console.log(slow);
const { line, skipped } = stageLine();
console.log(line);
const missing = [...skipped.keys()].filter((s) => required.has(s));
if (missing.length > 0) {
  console.error(`FAIL: required test stages did not run: ${missing.join(', ')}`);
  process.exit(1);
}
if (!total.tests) {
  console.error('FAIL: zero tests ran');
  process.exit(1);
}
process.exit(results.every((r) => r.code === 0) ? 0 : 1);
