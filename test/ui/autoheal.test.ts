/**
 * The dashboard's auto-heal and operation-task views in Debian's Chromium (stage `browser`),
 * against one VNFM with the built-in simulated cloud (OpenStack + Server Notifier): the sample VM
 * VNF with auto-heal on; a server failed in the simulator becomes an automatic heal that appears
 * on the Operations page live and completes; with the storm guard tightened from the instance
 * page (max unhealthy 0) the next fault is suppressed, shown with its reason, and released from
 * the Auto-heal page; a heal made to fail (the simulated Heat answers 400 once) waits in
 * FAILED_TEMP with its ProblemDetails, and Retry from the Operations page completes it.
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
const simAdmin = (path: string, body: unknown = {}): Promise<void> => simAdminPost(osUrl, path, body);
async function vnfcs(): Promise<{ id: string; resId: string; serverId: string }[]> {
  const i = await get(`/vnflcm/v2/vnf_instances/${instanceId}`);
  const res = new Map((i.instantiatedVnfInfo.vnfcResourceInfo as { id: string; computeResource: { resourceId: string } }[]).map((r) => [r.id, r.computeResource.resourceId]));
  return (i.instantiatedVnfInfo.vnfcInfo as { id: string; vnfcResourceInfoId: string }[]).map((c) => ({ id: c.id, resId: c.vnfcResourceInfoId, serverId: res.get(c.vnfcResourceInfoId) as string }));
}
// biome-ignore lint/suspicious/noExplicitAny: API JSON
async function heals(): Promise<any[]> {
  return (await get(`/vnflcm/v2/vnf_lcm_op_occs?filter=(eq,vnfInstanceId,${instanceId});(eq,operation,HEAL)`)) as unknown[] as never;
}

describe('dashboard: auto-heal, suppressed batches, retry', { skip: browserStage.skip, timeout: 300_000 }, () => {
  before(async () => {
    vnfm = await testVnfm({
      listen: true,
      config: { sim: true, simPorts: { openstack: 0, kubernetes: 0, serverNotifier: 0 }, faultNotification: { windowMs: 300 }, autoheal: { sweepMs: 100 } },
    });
    const sim = (vnfm.ctx as unknown as { simCloud: { openstackUrl: string; serverNotifierUrl: string } }).simCloud;
    osUrl = sim.openstackUrl;
    const pkg = await onboard(vnfm.app, csarOf(join(ROOT, 'samples/vm-basic')), () => vnfm.ctx.packages.idle());
    const c = await fetch(`${vnfm.url}/vnflcm/v2/vnf_instances`, { method: 'POST', headers: V2, body: JSON.stringify({ vnfdId: pkg.vnfdId, vnfInstanceName: 'ui-vm' }) });
    assert.equal(c.status, 201);
    instanceId = ((await c.json()) as { id: string }).id;
    const body = { flavourId: 'simple', vnfConfigurableProperties: { isAutohealEnabled: true }, additionalParams: { ServerNotifierUri: sim.serverNotifierUrl, ServerNotifierFaultID: ['1234'] } };
    const r = await fetch(`${vnfm.url}/vnflcm/v2/vnf_instances/${instanceId}/instantiate`, { method: 'POST', headers: V2, body: JSON.stringify(body) });
    assert.equal(r.status, 202, await r.text());
    const op = String(r.headers.get('location')).split('/').pop();
    await until('instantiate COMPLETED', async () => (await get(`/vnflcm/v2/vnf_lcm_op_occs/${op}`)).operationState === 'COMPLETED', GUARD_MS);
    browser = await launch();
    page = await newPage(browser);
  });
  after(async () => {
    await browser?.close();
    await vnfm?.close();
  });

  it('a server failed in the simulator: the automatic heal appears on the Operations page live and completes', async () => {
    await page.goto(`${vnfm.url}/ui/operations`);
    await page.getByRole('heading', { name: 'Operations', exact: true }).waitFor();
    await page.getByTestId('feed-status').filter({ hasText: 'live' }).waitFor();
    const [target] = await vnfcs();
    await simAdmin(`servers/${target?.serverId}/fail`);
    const row = page.locator('[data-testid="ops-table"] tr', { hasText: 'HEAL' }).filter({ hasText: 'auto-heal' });
    await row.first().waitFor({ timeout: GUARD_MS });
    await page.locator('[data-testid="ops-table"] tr[data-state="COMPLETED"]', { hasText: 'HEAL' }).filter({ hasText: 'auto-heal' }).waitFor({ timeout: GUARD_MS });
    await page.getByTestId('timeline').filter({ hasText: 'HEAL COMPLETED (automatic)' }).waitFor();
    assert.equal(await page.evaluate(() => performance.getEntriesByType('navigation').length), 1, 'no reload');
    await screenshot(page, 'operations-autoheal');
    const [h] = await heals();
    assert.equal(h.isAutomaticInvocation, true);
  });

  it('storm guard set from the instance page suppresses the next fault; the batch is released from the Auto-heal page', async () => {
    await page.goto(`${vnfm.url}/ui/instances/${instanceId}`);
    await page.getByRole('heading', { name: 'ui-vm' }).waitFor();
    await page.getByLabel('Max unhealthy (count or %)').fill('0');
    await page.getByRole('button', { name: 'Save…' }).click();
    const dialog = page.getByRole('dialog');
    assert.match((await dialog.getByTestId('request-json').textContent()) ?? '', /"autohealMaxUnhealthy": 0/);
    await dialog.getByRole('button', { name: 'Save', exact: true }).click();
    await dialog.waitFor({ state: 'detached' });
    await until('setting saved', async () => (await get(`/vnflcm/v2/vnf_instances/${instanceId}`)).vnfConfigurableProperties?.autohealMaxUnhealthy === 0, GUARD_MS);
    const before = (await heals()).length;
    const [, second] = await vnfcs();
    await simAdmin(`servers/${second?.serverId}/fail`);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Auto-heal' }).click();
    const card = page.getByTestId('suppressed').locator('li').first();
    await card.waitFor({ timeout: GUARD_MS });
    assert.match((await card.textContent()) ?? '', /max_unhealthy/);
    await screenshot(page, 'autoheal-suppressed');
    await checkA11y(page, 'auto-heal with a suppressed batch');
    assert.equal((await heals()).length, before, 'nothing healed while suppressed');
    await card.getByRole('button', { name: /Release batch/ }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Release', exact: true }).click();
    await page.getByTestId('suppressed').waitFor({ state: 'detached', timeout: GUARD_MS });
    // the released batch healed the VNFC: its heal op occ COMPLETED
    const released = await until(
      'the released batch done',
      async () => ((await get(`/vnfm/v1/heal_batches?vnfInstanceId=${instanceId}`)) as { status: string; released: boolean; vnfLcmOpOccId?: string; healedVnfcInstanceIds?: string[] }[]).find((b) => b.released && b.status === 'done'),
      GUARD_MS,
    );
    assert.deepEqual(released.healedVnfcInstanceIds, [second?.id]);
    assert.equal((await get(`/vnflcm/v2/vnf_lcm_op_occs/${released.vnfLcmOpOccId}`)).operationState, 'COMPLETED');
  });

  it('a heal in FAILED_TEMP shows its problem; Retry from the Operations page completes it', async () => {
    // restore the guard so the retry is not about it, then make the next Heat call fail once
    const p = await fetch(`${vnfm.url}/vnflcm/v2/vnf_instances/${instanceId}`, { method: 'PATCH', headers: { version: '2.0.0', 'content-type': 'application/merge-patch+json' }, body: JSON.stringify({ vnfConfigurableProperties: { autohealMaxUnhealthy: null, isAutohealEnabled: false } }) });
    assert.ok(p.status < 300, await p.text());
    await until('no running op', async () => (await get(`/vnflcm/v2/vnf_lcm_op_occs?filter=(eq,vnfInstanceId,${instanceId})`)).every((o: { operationState: string }) => ['COMPLETED', 'FAILED', 'ROLLED_BACK', 'FAILED_TEMP'].includes(o.operationState)), GUARD_MS);
    await simAdmin('api/break', { count: 1, status: 400, services: ['orchestration'] });
    const [v] = await vnfcs();
    const r = await fetch(`${vnfm.url}/vnflcm/v2/vnf_instances/${instanceId}/heal`, { method: 'POST', headers: V2, body: JSON.stringify({ vnfcInstanceId: [v?.id] }) });
    assert.equal(r.status, 202, await r.text());
    const opId = String(r.headers.get('location')).split('/').pop() as string;
    await page.goto(`${vnfm.url}/ui/operations?op=${opId}`);
    await page.locator('[data-testid="op-detail"][data-state="FAILED_TEMP"]').waitFor({ timeout: GUARD_MS });
    await page.getByTestId('op-detail').getByRole('alert').waitFor();
    await screenshot(page, 'operation-failed-temp');
    await checkA11y(page, 'operation in FAILED_TEMP');
    await page.getByRole('button', { name: 'Retry…' }).click();
    const dialog = page.getByRole('dialog');
    assert.equal(((await dialog.getByTestId('request-json').textContent()) ?? '').trim(), `POST /vnflcm/v2/vnf_lcm_op_occs/${opId}/retry`);
    await dialog.getByRole('button', { name: 'Retry', exact: true }).click();
    await page.locator('[data-testid="op-detail"][data-state="COMPLETED"]').waitFor({ timeout: GUARD_MS });
    assert.equal((await get(`/vnflcm/v2/vnf_lcm_op_occs/${opId}`)).operationState, 'COMPLETED');
  });
});
