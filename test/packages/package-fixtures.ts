/**
 * Shared fixtures of the package tests: where Tacker's sample packages and our samples live, and
 * helpers that turn a package folder into CSAR files with or without the ETSI SOL001 type files.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { TACKER_SAMPLES_DIR } from '../helpers/fixtures.ts';
import { buildCsarFromFiles, readCsar, type CsarFiles } from '../../src/packages/csar-reader.ts';

/** Repository root. */
export const REPO = resolve(import.meta.dirname, '..', '..');

/** Tacker's sample packages (copied byte for byte from openstack/tacker, see their NOTICE). */
export const TACKER_SAMPLES = TACKER_SAMPLES_DIR;

/** The three Tacker packages the tests parse, with the folder of their ETSI type files. */
export const TACKER_PACKAGES = {
  basicLcmsMin: { dir: join(TACKER_SAMPLES, 'sol_v2_common/basic_lcms_min/contents'), etsi: join(TACKER_SAMPLES, 'sol_v2_common/common/Definitions') },
  serverNotification: { dir: join(TACKER_SAMPLES, 'sol_v2_common/server_notification/contents'), etsi: join(TACKER_SAMPLES, 'sol_v2_common/common/Definitions') },
  cnfResources: {
    dir: join(TACKER_SAMPLES, 'sol_kubernetes_v2/test_instantiate_cnf_resources/contents'),
    etsi: join(TACKER_SAMPLES, 'sol_kubernetes_v2/common/Definitions'),
  },
} as const;

/** Reads a folder into package-relative path -> content. */
export function readDir(dir: string, prefix = ''): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  for (const name of readdirSync(dir).sort()) {
    const full = join(dir, name);
    const rel = prefix === '' ? name : `${prefix}/${name}`;
    if (statSync(full).isDirectory()) for (const [k, v] of readDir(full, rel)) out.set(k, v);
    else out.set(rel, readFileSync(full));
  }
  return out;
}

/** How the ETSI SOL001 type files are provided in a test package. */
export type EtsiVariant = 'absent' | 'tacker-copies' | 'repaired-copies';

/**
 * Package files of `dir`, with the ETSI type files of `etsiDir` added to `Definitions/` as Tacker
 * ships them (`tacker-copies`, whose vnfd types file only lenient YAML parsers accept), as a
 * strictly valid YAML copy (`repaired-copies`), or not at all.
 */
export function packageFiles(dir: string, etsiDir: string, variant: EtsiVariant): Map<string, Buffer> {
  const files = readDir(dir);
  if (variant === 'absent') return files;
  for (const name of ['etsi_nfv_sol001_common_types.yaml', 'etsi_nfv_sol001_vnfd_types.yaml']) {
    let text = readFileSync(join(etsiDir, name), 'utf8');
    if (variant === 'repaired-copies') text = text.replace('\npacket_incoming_vnf_ext_cp', '\n                packet_incoming_vnf_ext_cp');
    files.set(`Definitions/${name}`, Buffer.from(text));
  }
  return files;
}

/** Zips files into a CSAR and reads it back, as onboarding does. */
export async function throughCsar(files: ReadonlyMap<string, Buffer | string> | Readonly<Record<string, Buffer | string>>): Promise<CsarFiles> {
  return readCsar(buildCsarFromFiles(files));
}
