/**
 * Browser helpers of the dashboard tests: Debian's Chromium through playwright-core, axe-core
 * injected into a page (no serious or critical violations allowed), screenshots saved under
 * test-artifacts/ui/ (gitignored).
 */
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { REPO_ROOT } from '../helpers/fixtures.ts';

export const ARTIFACTS = join(REPO_ROOT, 'test-artifacts', 'ui');
const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** Starts headless Chromium (no sandbox: the tests may run as root). */
export async function launch(): Promise<Browser> {
  return chromium.launch({ executablePath: '/usr/bin/chromium', headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
}

/** A page whose browser context bypasses the page's CSP only so the test can inject axe-core. */
export async function newPage(browser: Browser): Promise<Page> {
  const ctx = await browser.newContext({ bypassCSP: true, viewport: { width: 1400, height: 900 } });
  const page = await ctx.newPage();
  page.setDefaultTimeout(30_000);
  return page;
}

/** Runs axe-core on the page: fails on a serious or critical violation, naming it and its elements. */
export async function checkA11y(page: Page, what: string): Promise<void> {
  await page.evaluate(AXE);
  const violations = (await page.evaluate(async () => {
    // biome-ignore lint/suspicious/noExplicitAny: axe is a global injected above
    const r = await (globalThis as any).axe.run(document, { resultTypes: ['violations'] });
    return r.violations.map((v: { id: string; impact: string; help: string; nodes: { target: string[] }[] }) => ({ id: v.id, impact: v.impact, help: v.help, targets: v.nodes.map((n) => n.target.join(' ')).slice(0, 5) }));
  })) as { id: string; impact: string; help: string; targets: string[] }[];
  const bad = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  assert.deepEqual(bad, [], `${what}: accessibility violations ${JSON.stringify(bad, null, 2)}`);
}

/** Saves a full-page screenshot as test-artifacts/ui/<name>.png. */
export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
}

/** Collects requests the page makes to other origins (there must be none). */
export function watchOrigins(page: Page, origin: string): string[] {
  const foreign: string[] = [];
  page.on('request', (r) => {
    const u = r.url();
    if (!u.startsWith(origin) && !u.startsWith('data:') && !u.startsWith('about:')) foreign.push(u);
  });
  return foreign;
}

/** Headers of the built-in simulated OpenStack's control API (`/_sim`) in the dashboard tests. */
export const SIM_ADMIN = { 'x-sim-admin-secret': 'sim-admin-secret', 'content-type': 'application/json' };
/** Headers of a v2 LCM request with a JSON body. */
export const V2_JSON = { version: '2.0.0', 'content-type': 'application/json' };

/** GET of a VNFM API path (v2 version header); asserts 200 and returns the JSON. */
// biome-ignore lint/suspicious/noExplicitAny: API JSON
export async function apiGet(vnfmUrl: string, path: string): Promise<any> {
  const r = await fetch(`${vnfmUrl}${path}`, { headers: { version: '2.0.0' } });
  assert.equal(r.status, 200, path);
  return r.json();
}

/** POST to the simulated OpenStack's control API (`/_sim/<path>`); asserts success. */
export async function simAdminPost(openstackUrl: string, path: string, body: unknown = {}): Promise<void> {
  const r = await fetch(`${openstackUrl}/_sim/${path}`, { method: 'POST', headers: SIM_ADMIN, body: JSON.stringify(body) });
  assert.ok(r.status < 300, `/_sim/${path}: ${r.status} ${await r.text()}`);
}
