/**
 * Per-entry size limits of the CSAR reader (packages.maxFileBytes / maxVnfdBytes), checked from
 * the sizes the ZIP declares and again from the bytes inflated, so an entry is never inflated
 * whole into memory first; and the parser's bound on the text files it reads.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { resolveConfig } from '../../src/config.ts';
import { buildCsarFromFiles, DEFAULT_CSAR_LIMITS, readCsar } from '../../src/packages/csar-reader.ts';
import { DEFAULT_PACKAGE_LIMITS } from '../../src/packages/package-service.ts';
import { PackageError } from '../../src/packages/package-error.ts';
import { parseVnfPackage } from '../../src/packages/vnfd-parser.ts';

const META = 'TOSCA-Meta-File-Version: 1.0\nCSAR-Version: 1.1\nCreated-by: t\nEntry-Definitions: Definitions/vnfd.yaml\n';
const MiB = 1024 * 1024;

/** Rewrites the uncompressed size of every entry (local header and central directory) to `size`: a ZIP that lies. */
function lieAboutSizes(zip: Buffer, size: number): Buffer {
  const out = Buffer.from(zip);
  for (let i = 0; i + 4 <= out.length; i++) {
    const sig = out.readUInt32LE(i);
    if (sig === 0x04034b50) out.writeUInt32LE(size, i + 22);
    else if (sig === 0x02014b50) out.writeUInt32LE(size, i + 24);
  }
  return out;
}

async function rejectsWith(p: Promise<unknown>, re: RegExp): Promise<PackageError> {
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof PackageError, String(e));
    assert.match(e.message, re);
    return e;
  }
  assert.fail('expected a PackageError');
}

describe('CSAR per-entry limits', () => {
  it('an artifact over maxFileBytes is refused from its declared size, naming the file and the setting', async () => {
    const zip = buildCsarFromFiles({ 'TOSCA-Metadata/TOSCA.meta': META, 'Files/images/disk.img': Buffer.alloc(3 * MiB) });
    const e = await rejectsWith(readCsar(zip, { maxFileBytes: 2 * MiB }), /^Files\/images\/disk\.img: the file is larger than the limit of 2\.0 MiB \(packages\.maxFileBytes\): the ZIP declares 3\.0 MiB uncompressed$/);
    assert.equal(e.file, 'Files/images/disk.img');
    // The same artifact within the default (16 MiB) is fine.
    assert.equal((await readCsar(zip)).get('Files/images/disk.img')?.length, 3 * MiB);
  });

  it('a VNFD file over maxVnfdBytes is refused (Definitions/, TOSCA-Metadata/, root files)', async () => {
    for (const path of ['Definitions/vnfd.yaml', 'TOSCA-Metadata/TOSCA.meta', 'vnfd.yaml']) {
      const zip = buildCsarFromFiles({ [path]: Buffer.alloc(5 * MiB, 0x61) });
      await rejectsWith(readCsar(zip), new RegExp(`^${path.replace(/\./g, '\\.')}: the VNFD/metadata file is larger than the limit of 4\\.0 MiB \\(packages\\.maxVnfdBytes\\)`));
    }
  });

  it('an entry that inflates beyond what the ZIP declares stops early (never inflated whole)', async () => {
    const zip = lieAboutSizes(buildCsarFromFiles({ 'Definitions/vnfd.yaml': Buffer.alloc(64 * MiB, 0x61) }), 1000);
    const before = process.memoryUsage().arrayBuffers;
    await rejectsWith(readCsar(zip), /Definitions\/vnfd\.yaml|inflates to more|declared|corrupt|too many bytes/i);
    assert.ok(process.memoryUsage().arrayBuffers - before < 32 * MiB, 'far less than the 64 MiB entry was held');
  });

  it('the parser bounds every text file it reads by maxVnfdBytes', () => {
    const files = new Map([
      ['TOSCA-Metadata/TOSCA.meta', Buffer.from(META)],
      ['Definitions/vnfd.yaml', Buffer.from(`tosca_definitions_version: tosca_simple_yaml_1_2\ndescription: "${'x'.repeat(2048)}"\n`)],
    ]);
    assert.throws(() => parseVnfPackage(files, { maxVnfdBytes: 1024 }), /^PackageError: Definitions\/vnfd\.yaml: the VNFD\/metadata file is larger than the limit of 1\.0 KiB \(packages\.maxVnfdBytes\): 2\.1 KiB$/);
  });
});

describe('packages.* settings', () => {
  it('defaults match the reader and service defaults; env variables and validation work', () => {
    const d = resolveConfig().packages;
    assert.deepEqual(d, DEFAULT_PACKAGE_LIMITS);
    assert.equal(d.maxFileBytes, DEFAULT_CSAR_LIMITS.maxFileBytes);
    assert.equal(d.maxVnfdBytes, DEFAULT_CSAR_LIMITS.maxVnfdBytes);
    assert.equal(d.maxTotalBytes, DEFAULT_CSAR_LIMITS.maxTotalBytes);
    assert.equal(d.maxEntries, DEFAULT_CSAR_LIMITS.maxEntries);
    const c = resolveConfig({ env: { VNFM_PACKAGES_MAX_FILE_BYTES: '1000', VNFM_PACKAGES_MAX_CONCURRENT_ONBOARDINGS: '4', VNFM_PACKAGES_ONBOARD_TIMEOUT_MS: '5000', VNFM_PACKAGES_MAX_OLD_GENERATION_SIZE_MB: '128', VNFM_PACKAGES_MAX_VNFD_BYTES: '500' } });
    assert.deepEqual(c.packages, { ...DEFAULT_PACKAGE_LIMITS, maxFileBytes: 1000, maxVnfdBytes: 500, maxConcurrentOnboardings: 4, onboardTimeoutMs: 5000, maxOldGenerationSizeMb: 128 });
    assert.throws(() => resolveConfig({ flags: { packages: { maxConcurrentOnboardings: 0 } } }), /packages\.maxConcurrentOnboardings must be an integer >= 1/);
    assert.throws(() => resolveConfig({ flags: { packages: { maxOldGenerationSizeMb: 8 } } }), /packages\.maxOldGenerationSizeMb must be >= 16/);
  });
});
