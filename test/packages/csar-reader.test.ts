import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { zipSync } from 'fflate';
import { buildCsarFromDir, buildCsarFromFiles, normalizeEntryName, readCsar } from '../../src/packages/csar-reader.ts';
import { PackageError } from '../../src/packages/package-error.ts';
import { REPO } from './package-fixtures.ts';

const enc = (s: string): Uint8Array => Buffer.from(s, 'utf8');

async function rejectsWith(p: Promise<unknown>, re: RegExp): Promise<PackageError> {
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof PackageError, `expected a PackageError, got ${String(e)}`);
    assert.match(e.message, re);
    assert.equal(e.code, 'VNFM_ERR_PKG_INVALID');
    assert.equal(e.httpStatus, 422);
    return e;
  }
  assert.fail('expected a rejection');
}

describe('readCsar', () => {
  test('reads back what buildCsarFromFiles wrote, paths normalized, directories skipped', async () => {
    const zip = Buffer.from(
      zipSync({
        'TOSCA-Metadata/': new Uint8Array(0),
        'TOSCA-Metadata/TOSCA.meta': enc('Entry-Definitions: Definitions/a.yaml\n'),
        './Definitions/a.yaml': enc('tosca_definitions_version: tosca_simple_yaml_1_2\n'),
        'Files\\images\\x.bin': new Uint8Array([1, 2, 3]),
      }),
    );
    const files = await readCsar(zip);
    assert.deepEqual([...files.keys()].sort(), ['Definitions/a.yaml', 'Files/images/x.bin', 'TOSCA-Metadata/TOSCA.meta']);
    assert.equal(files.get('Definitions/a.yaml')?.toString(), 'tosca_definitions_version: tosca_simple_yaml_1_2\n');
    assert.deepEqual([...(files.get('Files/images/x.bin') ?? [])], [1, 2, 3]);
  });

  test('buildCsarFromDir is deterministic and round-trips a sample folder', async () => {
    const a = buildCsarFromDir(`${REPO}/samples/vm-basic`);
    const b = buildCsarFromDir(`${REPO}/samples/vm-basic`);
    assert.ok(a.equals(b), 'same folder, same bytes');
    const files = await readCsar(a);
    assert.ok(files.has('TOSCA-Metadata/TOSCA.meta'));
    assert.ok(files.has('BaseHOT/simple/nested/VDU1.yaml'));
    assert.ok(files.has('Scripts/noop_hook.sh'));
  });

  test('rejects something that is not a ZIP', async () => {
    await rejectsWith(readCsar(Buffer.from('this is not a zip file at all, just text')), /not a readable ZIP \(CSAR\) file/);
    await rejectsWith(readCsar(Buffer.alloc(0)), /empty/);
  });

  test('rejects zip-slip paths', async () => {
    const e = await rejectsWith(readCsar(buildCsarFromFiles({ '../evil.sh': 'x', 'a.yaml': 'y' })), /'\.\.' path segments are not allowed/);
    assert.match(e.message, /"\.\.\/evil\.sh"/);
    await rejectsWith(readCsar(buildCsarFromFiles({ 'Definitions/../../evil': 'x' })), /'\.\.' path segments/);
    await rejectsWith(readCsar(buildCsarFromFiles({ '..\\evil': 'x' })), /'\.\.' path segments/);
  });

  test('rejects absolute paths', async () => {
    await rejectsWith(readCsar(buildCsarFromFiles({ '/etc/cron.d/x': 'x' })), /absolute paths are not allowed/);
    await rejectsWith(readCsar(buildCsarFromFiles({ 'C:/x.yaml': 'x' })), /absolute paths are not allowed/);
  });

  test('rejects symbolic links', async () => {
    const zip = Buffer.from(zipSync({ 'Definitions/link.yaml': [enc('/etc/passwd'), { os: 3, attrs: (0o120777 << 16) >>> 0 }] }));
    await rejectsWith(readCsar(zip), /symbolic links are not allowed/);
  });

  test('rejects two entries with the same normalized path', async () => {
    await rejectsWith(readCsar(buildCsarFromFiles({ 'a/b.yaml': 'x', 'a/./b.yaml': 'y' })), /contains "a\/b\.yaml" twice/);
  });

  test('enforces the entry count and total size limits', async () => {
    const three = buildCsarFromFiles({ a: '1', b: '2', c: '3' });
    await rejectsWith(readCsar(three, { maxEntries: 2 }), /3 ZIP entries, more than the limit of 2/);
    assert.equal((await readCsar(three, { maxEntries: 3 })).size, 3);
    const big = buildCsarFromFiles({ 'Files/big.bin': Buffer.alloc(64 * 1024, 7) });
    await rejectsWith(readCsar(big, { maxTotalBytes: 1024 }), /uncompressed size exceeds the limit of 1\.0 KiB/);
    assert.equal((await readCsar(big)).get('Files/big.bin')?.length, 64 * 1024);
  });

  test('normalizeEntryName', () => {
    assert.equal(normalizeEntryName('./a//b/./c.yaml'), 'a/b/c.yaml');
    assert.equal(normalizeEntryName('a\\b.yaml'), 'a/b.yaml');
    assert.equal(normalizeEntryName('./'), '');
    assert.throws(() => normalizeEntryName('a/../../b'), PackageError);
    assert.throws(() => normalizeEntryName('a\0b'), /NUL/);
  });
});
