/**
 * The operator dashboard in Debian's Chromium (stage `browser`), against one VNFM with the built-in
 * simulated cloud and API authentication off: upload the sample CNF package from the Packages page
 * (onboarding progress shown), instantiate it, heal a VNFC from the instance page and watch the
 * operation reach COMPLETED without reloading (the live feed); the confirmation dialog shows the
 * exact request, is focus-trapped and closes with Escape. Every page passes axe-core (no serious
 * or critical violation), makes no request to another origin, and is saved as a screenshot under
 * test-artifacts/ui/.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { type TestVnfm, testVnfm } from '../helpers/app.ts';
import { ROOT, csarOf } from '../helpers/packages.ts';
import { stage } from '../helpers/stages.ts';
import { checkA11y, launch, newPage, screenshot, watchOrigins } from './helpers.ts';

const browserStage = await stage('browser');
const DEF_FILES = ['Files/kubernetes/deployment.yaml'];

let vnfm: TestVnfm;
let browser: Browser;
let page: Page;
let foreign: string[];
let tmp: string;

describe('dashboard (auth off, simulated cloud)', { skip: browserStage.skip, timeout: 300_000 }, () => {
  before(async () => {
    tmp = mkdtempSync(join(tmpdir(), 'vnfm-ui-test-'));
    vnfm = await testVnfm({ listen: true, config: { sim: true, simPorts: { openstack: 0, kubernetes: 0, serverNotifier: 0 } } });
    browser = await launch();
    page = await newPage(browser);
    foreign = watchOrigins(page, vnfm.url);
  });
  after(async () => {
    await browser?.close();
    await vnfm?.close();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  it('opens at /ui with the live feed connected and no login (authentication off)', async () => {
    await page.goto(`${vnfm.url}/ui/`);
    await page.getByRole('heading', { name: 'VNF instances' }).waitFor();
    await page.getByTestId('feed-status').filter({ hasText: 'live' }).waitFor();
    await checkA11y(page, 'instances (empty)');
  });

  it('uploads the sample CNF package, instantiates it, heals a VNFC and sees COMPLETED live', async () => {
    const csar = join(tmp, 'cnf-all-kinds.zip');
    writeFileSync(csar, csarOf(join(ROOT, 'samples/cnf-all-kinds')));
    await page.getByRole('link', { name: 'Packages' }).click();
    await page.getByRole('heading', { name: 'VNF packages' }).waitFor();
    await page.getByLabel('CSAR file (zip)').setInputFiles(csar);
    await page.getByRole('button', { name: 'Upload and onboard' }).click();
    await page.locator('[data-testid="upload-status"][data-step="onboarded"]').waitFor();
    await screenshot(page, 'packages');
    await checkA11y(page, 'packages');

    await page.getByRole('button', { name: 'Instantiate…' }).first().click();
    await page.getByLabel('Instance name').fill('ui-cnf');
    const vimSelect = page.getByLabel('VIM');
    const k8sVim = await vimSelect.locator('option', { hasText: 'sim-kubernetes' }).getAttribute('value');
    await vimSelect.selectOption(k8sVim as string);
    await page.getByLabel('additionalParams (JSON)').fill(JSON.stringify({ 'lcm-kubernetes-def-files': DEF_FILES, namespace: 'default' }));
    await page.getByRole('button', { name: 'Review…' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.waitFor();
    const shown = await dialog.getByTestId('request-json').textContent();
    assert.match(shown ?? '', /"lcm-kubernetes-def-files"/);
    assert.match(shown ?? '', new RegExp(`"vimId": "${k8sVim}"`));
    await checkA11y(page, 'instantiate dialog');
    await dialog.getByRole('button', { name: 'Create and instantiate' }).click();
    // the instance page, updated live until the instantiation completes
    await page.getByRole('heading', { name: 'ui-cnf' }).waitFor();
    await page.locator('[data-testid="instance-ops"] tr[data-state="COMPLETED"]').first().waitFor({ timeout: 60_000 });
    await page.getByTestId('vnfc-table').waitFor();
    const rows = page.locator('[data-testid="vnfc-table"] tbody tr');
    assert.ok((await rows.count()) >= 1, 'VNFCs listed');
    await screenshot(page, 'instance');
    await checkA11y(page, 'instance');

    // heal the first VNFC, from the keyboard: select it, open the dialog; Escape closes it
    const first = rows.first();
    const vnfcId = (await first.getAttribute('data-vnfc')) as string;
    const oldResource = await first.locator('td').nth(4).textContent();
    await first.getByRole('checkbox').focus();
    await page.keyboard.press('Space');
    const healBtn = page.getByRole('button', { name: /Heal selected VNFCs \(1\)/ });
    await healBtn.focus();
    await page.keyboard.press('Enter');
    await dialog.waitFor();
    // focus stays inside the dialog
    for (let i = 0; i < 4; i++) {
      await page.keyboard.press('Tab');
      assert.ok(await dialog.evaluate((d) => d.contains(document.activeElement)), 'focus trapped in the dialog');
    }
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });
    assert.ok(await healBtn.evaluate((b) => b === document.activeElement), 'focus back on the button that opened the dialog');
    await healBtn.click();
    const request = JSON.parse(((await dialog.getByTestId('request-json').textContent()) ?? '').replace(/^POST \S+\s*/, ''));
    assert.deepEqual(request.vnfcInstanceId, [vnfcId]);
    await screenshot(page, 'heal-dialog');
    await dialog.getByRole('button', { name: 'Heal', exact: true }).click();
    await dialog.waitFor({ state: 'detached' });
    // no reload: the HEAL row appears and turns COMPLETED through the feed
    const heal = page.locator('[data-testid="instance-ops"] tr', { hasText: 'HEAL' });
    await heal.first().waitFor();
    await page.locator('[data-testid="instance-ops"] tr[data-state="COMPLETED"]', { hasText: 'HEAL' }).waitFor({ timeout: 60_000 });
    const navs = await page.evaluate(() => performance.getEntriesByType('navigation').length);
    assert.equal(navs, 1, 'the page was not reloaded');
    const newResource = await page.locator(`[data-testid="vnfc-table"] tr[data-vnfc="${vnfcId}"] td`).nth(4).textContent();
    assert.notEqual(newResource, oldResource, 'the healed VNFC has a new resource');
  });

  it('every page passes axe-core, is screenshotted, and nothing is loaded from another origin', async () => {
    for (const [link, heading, name] of [
      ['Instances', 'VNF instances', 'instances'],
      ['Operations', 'Operations', 'operations'],
      ['Auto-heal', 'Auto-heal', 'autoheal'],
      ['VIMs', 'VIMs', 'vims'],
      ['Subscriptions', 'Subscriptions', 'subscriptions'],
    ] as const) {
      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: link }).click();
      await page.getByRole('heading', { name: heading, exact: true }).waitFor();
      await page.waitForFunction(() => !document.querySelector('[aria-busy="true"]'));
      await screenshot(page, name);
      await checkA11y(page, name);
    }
    // an operation's page
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Operations' }).click();
    await page.locator('[data-testid="ops-table"] tbody tr').first().getByRole('link').first().click();
    await page.getByTestId('op-detail').waitFor();
    await screenshot(page, 'operation');
    await checkA11y(page, 'operation');
    assert.deepEqual(foreign, [], 'no request to another origin');
  });
});
