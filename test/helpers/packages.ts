/**
 * Onboards sample packages into a test VNFM through the HTTP API, as a user would.
 */
import assert from 'node:assert/strict';
import { cpSync, existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { buildCsarFromDir } from '../../src/packages/csar-reader.ts';

/** Repository root (tests run from it). */
export const ROOT = process.cwd();

/** Builds a CSAR from a package folder (plus ETSI type files when `commonDefs` is given). */
export function csarOf(dir: string, commonDefs?: string): Buffer {
  if (!commonDefs) return buildCsarFromDir(dir);
  const tmp = mkdtempSync(join(tmpdir(), 'vnfm-pkg-'));
  cpSync(dir, tmp, { recursive: true });
  if (existsSync(commonDefs)) cpSync(commonDefs, join(tmp, 'Definitions'), { recursive: true });
  return buildCsarFromDir(tmp);
}

/** Creates, uploads and waits for ONBOARDED; returns the package body. */
export async function onboard(app: FastifyInstance, zip: Buffer, waitIdle: () => Promise<void>): Promise<Record<string, unknown>> {
  const c = await app.inject({ method: 'POST', url: '/vnfpkgm/v1/vnf_packages', payload: {} });
  assert.equal(c.statusCode, 201, c.body);
  const id = c.json().id as string;
  const u = await app.inject({ method: 'PUT', url: `/vnfpkgm/v1/vnf_packages/${id}/package_content`, payload: zip, headers: { 'content-type': 'application/zip' } });
  assert.equal(u.statusCode, 202, u.body);
  await waitIdle();
  const g = await app.inject({ method: 'GET', url: `/vnfpkgm/v1/vnf_packages/${id}` });
  assert.equal(g.json().onboardingState, 'ONBOARDED', g.body);
  return g.json();
}
