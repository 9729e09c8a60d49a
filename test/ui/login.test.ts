/**
 * The dashboard with API authentication on (stage `browser`): the static files load without a
 * token, the login page offers the enabled modes, a wrong token is refused with the API's
 * ProblemDetails, a static API token and an OAuth 2.0 client (client credentials at the built-in
 * `/token`) both log in, the token lives in sessionStorage only, the live feed connects with it,
 * and logging out shows the login page again.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { OAuthService } from '../../src/api/auth/oauth2.ts';
import { type TestVnfm, testVnfm } from '../helpers/app.ts';
import { stage } from '../helpers/stages.ts';
import { checkA11y, launch, newPage, screenshot } from './helpers.ts';

const browserStage = await stage('browser');
const TOKEN = 'ui-login-static-token-42f1';

let vnfm: TestVnfm;
let browser: Browser;
let page: Page;
let client: { clientId: string; clientSecret: string };

describe('dashboard login (auth on: token + oauth2)', { skip: browserStage.skip, timeout: 180_000 }, () => {
  before(async () => {
    vnfm = await testVnfm({ listen: true, config: { apiAuth: ['token', 'oauth2'], apiTokens: [{ token: TOKEN, name: 'ops', role: 'operator' }] } });
    client = await new OAuthService(vnfm.store.db, vnfm.ctx.config.auth.oauth2).register({ name: 'ui-reader', role: 'reader' });
    browser = await launch();
    page = await newPage(browser);
  });
  after(async () => {
    await browser?.close();
    await vnfm?.close();
  });

  it('shows the login page; a wrong token is refused with the API\'s problem', async () => {
    await page.goto(`${vnfm.url}/ui/instances`);
    await page.getByRole('heading', { name: 'Log in to the VNF Manager' }).waitFor();
    await screenshot(page, 'login');
    await checkA11y(page, 'login');
    await page.getByLabel('Token', { exact: true }).fill('not-the-token');
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('alert').filter({ hasText: '401' }).waitFor();
    assert.equal(await page.evaluate(() => sessionStorage.getItem('vnfm.token')), null, 'a refused token is not kept');
  });

  it('logs in with a static API token; the token is in sessionStorage only; the feed connects', async () => {
    await page.getByLabel('Token', { exact: true }).fill(TOKEN);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('heading', { name: 'VNF instances' }).waitFor();
    await page.getByTestId('feed-status').filter({ hasText: 'live' }).waitFor();
    assert.equal(await page.evaluate(() => sessionStorage.getItem('vnfm.token')), TOKEN);
    assert.equal(await page.evaluate(() => localStorage.length), 0);
    // a reload keeps the login of this tab
    await page.reload();
    await page.getByRole('heading', { name: 'VNF instances' }).waitFor();
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByRole('heading', { name: 'Log in to the VNF Manager' }).waitFor();
    assert.equal(await page.evaluate(() => sessionStorage.getItem('vnfm.token')), null);
  });

  it('logs in as an OAuth 2.0 client (client credentials at /token)', async () => {
    await page.getByLabel('OAuth 2.0 client').check();
    await page.getByLabel('Client id').fill(client.clientId);
    await page.getByLabel('Client secret').fill('wrong-secret');
    await page.getByRole('button', { name: 'Log in' }).click();
    await screenshot(page, 'login-oauth2-refused');
    await page.getByRole('alert').filter({ hasText: 'invalid_client' }).waitFor();
    await page.getByLabel('Client secret').fill(client.clientSecret);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('heading', { name: 'VNF instances' }).waitFor();
    await page.getByTestId('feed-status').filter({ hasText: 'live' }).waitFor();
    const token = (await page.evaluate(() => sessionStorage.getItem('vnfm.token'))) as string;
    assert.ok(token && token !== client.clientSecret, 'the access token, not the secret, is kept');
    // the reader may read the VIMs page
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'VIMs' }).click();
    await page.getByRole('heading', { name: 'VIMs', exact: true }).waitFor();
  });
});
