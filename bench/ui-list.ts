/**
 * The dashboard's instance list with 10,000 VNF instances, measured through the browser (Debian's
 * Chromium via playwright-core): the VNFM and its data come from bench/lists.ts (`--serve`: 10,000
 * instances inserted through the store, 1,000 of them INSTANTIATED), the dashboard is the built
 * `ui/dist` (`npm run build:ui` first).
 *
 * - first render: from navigation start to the first page of 100 rows painted (in-page clock,
 *   `performance.now()` after the next animation frame), over `--loads` fresh page loads;
 * - page change: from the click on "Next page" to the new rows painted, over `--pages` changes.
 *
 *   npx tsx bench/ui-list.ts [--instances 10000] [--loads 5] [--pages 20]
 */
import { type ChildProcess, fork } from 'node:child_process';
import { loadavg } from 'node:os';
import { chromium } from 'playwright-core';

const argv = process.argv;
const arg = (name: string, def: string) => {
  const i = argv.indexOf(`--${name}`);
  return i > 0 ? (argv[i + 1] as string) : def;
};
const N = arg('instances', '10000');
const LOADS = Number(arg('loads', '5'));
const PAGES = Number(arg('pages', '20'));

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return Math.round((s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? Number.NaN) * 10) / 10;
}

const child: ChildProcess = fork(new URL('./lists.ts', import.meta.url).pathname, ['--instances', N, '--instantiated', String(Math.round(Number(N) / 10)), '--serve'], {
  execArgv: process.execArgv,
  stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
});
const ready = await new Promise<{ url: string; loadMs: number }>((res, rej) => {
  child.once('message', (m) => res(m as { url: string; loadMs: number }));
  child.once('exit', (code) => rej(new Error(`server exited ${code}`)));
});

// In-page code as strings (a function compiled by tsx would carry its helpers, unknown in the page).
const FIRST_RENDER = `new Promise((res) => {
  const done = () => requestAnimationFrame(() => res(performance.now()));
  const ok = () => document.querySelectorAll('[data-testid="instances-table"] tbody tr').length >= 100;
  if (ok()) return done();
  const mo = new MutationObserver(() => { if (ok()) { mo.disconnect(); done(); } });
  mo.observe(document.body, { childList: true, subtree: true });
})`;
const PAGE_CHANGE = `new Promise((res) => {
  const firstName = () => document.querySelector('[data-testid="instances-table"] tbody tr td')?.textContent;
  const before = firstName();
  const btn = [...document.querySelectorAll('button')].find((b) => b.textContent === 'Next page');
  const t0 = performance.now();
  const mo = new MutationObserver(() => {
    if (firstName() !== before) { mo.disconnect(); requestAnimationFrame(() => res(performance.now() - t0)); }
  });
  mo.observe(document.body, { childList: true, subtree: true, characterData: true });
  btn.click();
})`;

const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
const firstRender: number[] = [];
const pageChange: number[] = [];
try {
  const ctx = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  const page = await ctx.newPage();
  for (let i = 0; i < LOADS; i++) {
    await page.goto(`${ready.url}/ui/instances`, { waitUntil: 'commit' });
    const ms = (await page.evaluate(FIRST_RENDER)) as number;
    firstRender.push(ms);
  }
  for (let i = 0; i < PAGES; i++) {
    const ms = (await page.evaluate(PAGE_CHANGE)) as number;
    pageChange.push(ms);
  }
} finally {
  await browser.close();
  child.send('stop');
  await new Promise((res) => child.once('exit', res));
}
console.log(
  JSON.stringify({
    bench: 'ui-list',
    instances: Number(N),
    loadMs: ready.loadMs,
    firstRenderMs: { runs: firstRender.length, p50: pct(firstRender, 50), max: pct(firstRender, 100) },
    pageChangeMs: { runs: pageChange.length, p50: pct(pageChange, 50), p99: pct(pageChange, 99), max: pct(pageChange, 100) },
    loadavg: loadavg().map((x) => Math.round(x * 100) / 100),
  }),
);
process.exit(0);
