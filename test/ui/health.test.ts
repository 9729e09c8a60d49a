/**
 * The VNFM's VNFC health model in the dashboard, live, in Debian's Chromium (stage `browser`):
 * one VNFM with the built-in simulated cloud, the health watch on, the sample VM VNF with auto-heal
 * off and no Server Notifier. A server failed in the simulator shows faulty on the instance page and
 * in the instance list without a reload (nothing heals it), and healthy again when the simulator
 * recovers it.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { type TestVnfm, testVnfm } from '../helpers/app.ts';
import { ROOT, csarOf, onboard } from '../helpers/packages.ts';
import { stage } from '../helpers/stages.ts';
import { until } from '../helpers/wait.ts';
import { apiGet, checkA11y, launch, newPage, screenshot, simAdminPost, V2_JSON } from './helpers.ts';

const browserStage = await stage('browser');
const V2 = V2_JSON;
const GUARD_MS = 60_000;

let vnfm: TestVnfm;
let browser: Browser;
let page: Page;
let osUrl: string;
let instanceId: string;

// biome-ignore lint/suspicious/noExplicitAny: API JSON
const get = (path: string): Promise<any> => apiGet(vnfm.url, path);
const simAdmin = (path: string): Promise<void> => simAdminPost(osUrl, path);

describe('dashboard: VNFC health from the VNFM\'s own watch, live', { skip: browserStage.skip, timeout: 300_000 }, () => {
  before(async () => {
    vnfm = await testVnfm({
      listen: true,
      config: { sim: true, simPorts: { openstack: 0, kubernetes: 0, serverNotifier: 0 }, vnfcHealth: { enabled: true, periodMs: 200, unhealthyForMs: { vm: 1000, pod: 1000 } } } as never,
    });
    osUrl = (vnfm.ctx as unknown as { simCloud: { openstackUrl: string } }).simCloud.openstackUrl;
    const pkg = await onboard(vnfm.app, csarOf(join(ROOT, 'samples/vm-basic')), () => vnfm.ctx.packages.idle());
    const c = await fetch(`${vnfm.url}/vnflcm/v2/vnf_instances`, { method: 'POST', headers: V2, body: JSON.stringify({ vnfdId: pkg.vnfdId, vnfInstanceName: 'ui-health' }) });
    assert.equal(c.status, 201);
    instanceId = ((await c.json()) as { id: string }).id;
    const r = await fetch(`${vnfm.url}/vnflcm/v2/vnf_instances/${instanceId}/instantiate`, { method: 'POST', headers: V2, body: JSON.stringify({ flavourId: 'simple', vnfConfigurableProperties: { isAutohealEnabled: false } }) });
    assert.equal(r.status, 202, await r.text());
    const op = String(r.headers.get('location')).split('/').pop();
    await until('instantiate COMPLETED', async () => (await get(`/vnflcm/v2/vnf_lcm_op_occs/${op}`)).operationState === 'COMPLETED', GUARD_MS);
    await until('every VNFC healthy', async () => (await get(`/vnfm/v1/vnf_instances/${instanceId}/health`)).condition === 'healthy', GUARD_MS);
    browser = await launch();
    page = await newPage(browser);
  });
  after(async () => {
    await browser?.close();
    await vnfm?.close();
  });

  it('a failed server shows faulty on the instance page and in the list, live, and healthy once recovered', async () => {
    const inst = await get(`/vnflcm/v2/vnf_instances/${instanceId}`);
    const vnfc = inst.instantiatedVnfInfo.vnfcInfo[0] as { id: string; vnfcResourceInfoId: string };
    const server = (inst.instantiatedVnfInfo.vnfcResourceInfo as { id: string; computeResource: { resourceId: string } }[]).find((x) => x.id === vnfc.vnfcResourceInfoId)?.computeResource.resourceId;
    await page.goto(`${vnfm.url}/ui/instances/${instanceId}`);
    await page.getByRole('heading', { name: 'ui-health' }).waitFor();
    await page.getByTestId('feed-status').filter({ hasText: 'live' }).waitFor();
    const cell = page.locator(`[data-testid="vnfc-table"] tr[data-vnfc="${vnfc.id}"] td[data-health]`);
    await cell.and(page.locator('[data-health="healthy"]')).waitFor({ timeout: GUARD_MS });
    await simAdmin(`servers/${server}/fail`);
    await cell.and(page.locator('[data-health="faulty"]')).waitFor({ timeout: GUARD_MS });
    assert.match((await cell.getAttribute('title')) ?? '', /ERROR.*vim-watch/);
    await screenshot(page, 'instance-vnfc-faulty');
    await checkA11y(page, 'instance page with a faulty VNFC');

    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Instances' }).click();
    const row = page.locator('[data-testid="instances-table"] tr', { hasText: 'ui-health' });
    await row.locator('[data-health="faulty"]', { hasText: '1 faulty' }).waitFor({ timeout: GUARD_MS });
    await simAdmin(`servers/${server}/recover`);
    await row.locator('[data-health="faulty"]').waitFor({ state: 'detached', timeout: GUARD_MS });
    assert.equal(await page.evaluate(() => performance.getEntriesByType('navigation').length), 1, 'no reload');
    await screenshot(page, 'instances-health');
    assert.equal((await get(`/vnflcm/v2/vnf_lcm_op_occs?filter=(eq,vnfInstanceId,${instanceId});(eq,operation,HEAL)`)).length, 0, 'auto-heal off: nothing healed');
  });
});
