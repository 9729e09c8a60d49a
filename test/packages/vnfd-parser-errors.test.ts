/**
 * Broken packages are refused with a PackageError whose message names the file (and line:col
 * where known), and no input shape makes the parser crash with anything else.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parse, stringify } from 'yaml';
import { buildCsarFromFiles, readCsar } from '../../src/packages/csar-reader.ts';
import { PackageError } from '../../src/packages/package-error.ts';
import { parseVnfPackage } from '../../src/packages/vnfd-parser.ts';
import { packageFiles, readDir, REPO, TACKER_PACKAGES } from './package-fixtures.ts';

const TOP = 'Definitions/sample_vnf_top.vnfd.yaml';
const TYPES = 'Definitions/sample_vnf_types.yaml';
const DF = 'Definitions/sample_vnf_df_simple.yaml';

/** Files of samples/vm-basic with some files replaced (`null` deletes). */
const VM_BASIC = readDir(`${REPO}/samples/vm-basic`);
function vmBasic(changes: Record<string, string | null> = {}): Map<string, Buffer> {
  const files = new Map(VM_BASIC);
  for (const [k, v] of Object.entries(changes)) {
    if (v === null) files.delete(k);
    else files.set(k, Buffer.from(v));
  }
  return files;
}

function text(path: string): string {
  const b = vmBasic().get(path);
  assert.ok(b);
  return b.toString('utf8');
}

/** Replaces exactly one occurrence of `from` in a sample file. */
function edit(path: string, from: string, to: string): Record<string, string> {
  const t = text(path);
  assert.equal(t.split(from).length, 2, `'${from}' occurs once in ${path}`);
  return { [path]: t.replace(from, to) };
}

/** 1-based line of the first occurrence of `needle` in `content`. */
function lineOf(content: string, needle: string): number {
  const i = content.indexOf(needle);
  assert.ok(i >= 0, `'${needle}' found`);
  return content.slice(0, i).split('\n').length;
}

function refuses(files: Map<string, Buffer>, re: RegExp): PackageError {
  try {
    parseVnfPackage(files);
  } catch (e) {
    assert.ok(e instanceof PackageError, `expected a PackageError, got ${e instanceof Error ? `${e.name}: ${e.message}` : String(e)}`);
    assert.match(e.message, re);
    return e;
  }
  return assert.fail(`expected the package to be refused with ${re}`);
}

describe('package structure errors', () => {
  test('a CSAR that is not a ZIP', async () => {
    await assert.rejects(readCsar(Buffer.from('PK but not really a zip')), (e: unknown) => e instanceof PackageError && /not a readable ZIP/.test(e.message));
  });

  test('a zip-slip entry never reaches the parser', async () => {
    const files = vmBasic();
    files.set('../../etc/cron.d/evil', Buffer.from('* * * * * root rm -rf /'));
    await assert.rejects(readCsar(buildCsarFromFiles(files)), (e: unknown) => e instanceof PackageError && /"\.\.\/\.\.\/etc\/cron\.d\/evil".*'\.\.' path segments/.test(e.message));
  });

  test('Entry-Definitions names a file that is not in the package', () => {
    const meta = 'TOSCA-Meta-File-Version: 1.0\nCSAR-Version: 1.1\nCreated-by: x\nEntry-Definitions: Definitions/missing.yaml\n';
    const e = refuses(vmBasic({ 'TOSCA-Metadata/TOSCA.meta': meta }), /^TOSCA-Metadata\/TOSCA\.meta:4: Entry-Definitions names Definitions\/missing\.yaml, which is not in the package$/);
    assert.equal(e.file, 'TOSCA-Metadata/TOSCA.meta');
    assert.equal(e.line, 4);
  });

  test('TOSCA.meta without Entry-Definitions, or malformed', () => {
    refuses(vmBasic({ 'TOSCA-Metadata/TOSCA.meta': 'TOSCA-Meta-File-Version: 1.0\nCSAR-Version: 1.1\n' }), /^TOSCA-Metadata\/TOSCA\.meta:1: Entry-Definitions is missing/);
    refuses(vmBasic({ 'TOSCA-Metadata/TOSCA.meta': 'TOSCA-Meta-File-Version: 1.0\nthis line has no colon\n' }), /^TOSCA-Metadata\/TOSCA\.meta:2:1: malformed line/);
  });

  test('no TOSCA.meta: a single YAML at the root is the entry; none or several is an error', () => {
    const single = `tosca_definitions_version: tosca_simple_yaml_1_2
topology_template:
  node_templates:
    VNF:
      type: tosca.nodes.nfv.VNF
      properties:
        descriptor_id: 0d4c9b0e-0000-4000-8000-000000000001
        provider: Example Co
        product_name: One File
        software_version: 2.10
        descriptor_version: 1.0
        flavour_id: default
    VDU1:
      type: tosca.nodes.nfv.Vdu.Compute
      properties:
        name: vdu1
        vdu_profile: { min_number_of_instances: 1, max_number_of_instances: 2 }
`;
    const m = parseVnfPackage(new Map([['vnfd.yaml', Buffer.from(single)]]));
    assert.equal(m.entryDefinitions, 'vnfd.yaml');
    assert.equal(m.vnfProductName, 'One File');
    assert.equal(m.vnfSoftwareVersion, '2.10', 'unquoted versions keep their spelling');
    assert.equal(m.vnfdVersion, '1.0');
    assert.deepEqual(Object.keys(m.flavours), ['default']);
    assert.equal(m.flavours.default?.vdus.VDU1?.maxInstances, 2);
    assert.equal(m.flavours.default?.vdus.VDU1?.initialDelta, 1);

    refuses(new Map([['a.yaml', Buffer.from(single)], ['b.yaml', Buffer.from(single)]]), /no TOSCA-Metadata\/TOSCA\.meta and several YAML files at its root \(a\.yaml, b\.yaml\)/);
    refuses(new Map([['README.txt', Buffer.from('hi')]]), /neither TOSCA-Metadata\/TOSCA\.meta nor a YAML file at its root/);
    const wrapped = new Map([...vmBasic()].map(([k, v]) => [`vm-basic/${k}`, v]));
    refuses(wrapped, /not at the package root but under 'vm-basic\/': zip the contents of that folder/);
    refuses(new Map(), /contains no files/);
  });
});

describe('YAML and TOSCA errors carry file:line:col', () => {
  test('bad YAML', () => {
    const files = edit(DF, '    VDU2:\n', '    VDU2: [\n');
    const df = files[DF] as string;
    const e = refuses(vmBasic(files), /^Definitions\/sample_vnf_df_simple\.yaml:\d+:\d+: invalid YAML: /);
    assert.equal(e.file, DF);
    assert.ok(e.line !== undefined && e.line >= lineOf(df, 'VDU2: ['), 'line at or after the broken one');
    const tab = edit(DF, '        name: VDU2\n', '        name: VDU2\n\tbad: tab\n');
    const e2 = refuses(vmBasic(tab), /^Definitions\/sample_vnf_df_simple\.yaml:\d+:\d+: invalid YAML/);
    assert.equal(e2.line, lineOf(tab[DF] as string, '\tbad'));
  });

  test('duplicate keys', () => {
    const files = edit(DF, '        name: VDU2\n', '        name: VDU2\n        name: VDU2b\n');
    const e = refuses(vmBasic(files), /^Definitions\/sample_vnf_df_simple\.yaml:\d+:\d+: invalid YAML: Map keys must be unique/);
    assert.equal(e.line, lineOf(files[DF] as string, 'name: VDU2b'));
  });

  test('import not found', () => {
    const files = edit(TOP, '  - sample_vnf_types.yaml\n', '  - sample_vnf_types.yaml\n  - missing_types.yaml\n');
    refuses(vmBasic(files), new RegExp(`^Definitions/sample_vnf_top\\.vnfd\\.yaml:${lineOf(files[TOP] as string, '- missing_types')}:5: import 'missing_types\\.yaml' not found: the package has no file Definitions/missing_types\\.yaml$`));
    refuses(vmBasic(edit(TOP, '  - sample_vnf_types.yaml\n', '  - https://example.com/vnf/sample_vnf_other.yaml\n')), /import 'https:\/\/example\.com\/vnf\/sample_vnf_other\.yaml' is remote; imports are not downloaded/);
    refuses(vmBasic(edit(TOP, '  - sample_vnf_types.yaml\n', '  - ../../outside.yaml\n')), /import '\.\.\/\.\.\/outside\.yaml' points outside the package/);
  });

  test('VNF node missing', () => {
    const top = `tosca_definitions_version: tosca_simple_yaml_1_2
topology_template:
  node_templates:
    VDU1:
      type: tosca.nodes.nfv.Vdu.Compute
      properties:
        name: VDU1
        vdu_profile: { min_number_of_instances: 1, max_number_of_instances: 1 }
`;
    refuses(vmBasic({ [TOP]: top, [DF]: null }), /^Definitions\/sample_vnf_top\.vnfd\.yaml:2:1: no VNF node: .*derived from tosca\.nodes\.nfv\.VNF/);
    refuses(vmBasic({ [TOP]: 'tosca_definitions_version: tosca_simple_yaml_1_2\n', [DF]: null }), /^Definitions\/sample_vnf_top\.vnfd\.yaml:1:1: no VNF node: the file has no topology_template/);
  });

  test('no flavour: the VNF node has no flavour file and no flavour_id value', () => {
    refuses(vmBasic({ ...edit(TOP, '  - sample_vnf_df_simple.yaml\n', ''), [DF]: null, ...edit(TYPES, '        default: simple\n', '') }), /no deployment flavour found/);
  });

  test('unknown types and broken derivation', () => {
    const files = edit(DF, 'type: tosca.nodes.nfv.VduCp\n      properties:\n        layer_protocols: [ ipv4 ]\n        order: 0\n      requirements:\n        - virtual_binding: VDU1', 'type: tosca.nodes.nfv.VduCP\n      properties:\n        layer_protocols: [ ipv4 ]\n        order: 0\n      requirements:\n        - virtual_binding: VDU1');
    refuses(vmBasic(files), new RegExp(`^Definitions/sample_vnf_df_simple\\.yaml:${lineOf(files[DF] as string, 'type: tosca.nodes.nfv.VduCP')}:7: unknown node type 'tosca\\.nodes\\.nfv\\.VduCP'`));
    refuses(vmBasic(edit(TYPES, 'derived_from: tosca.nodes.nfv.VNF', 'derived_from: tosca.nodes.nfv.VNFX')), /^Definitions\/sample_vnf_types\.yaml:\d+:5: node type 'example\.co\.SampleVNF' is derived from unknown type 'tosca\.nodes\.nfv\.VNFX'/);
    const cyc = edit(TYPES, 'node_types:\n', 'node_types:\n  a.A:\n    derived_from: a.B\n  a.B:\n    derived_from: a.A\n');
    const df = text(DF).replace('type: tosca.nodes.nfv.VnfVirtualLink', 'type: a.A');
    refuses(vmBasic({ ...cyc, [DF]: df }), /derived_from cycle/);
    refuses(vmBasic(edit(DF, '        type: tosca.policies.nfv.VduInitialDelta\n        properties:\n          initial_delta:\n            number_of_instances: 1\n        targets: [ VDU2 ]', '        type: tosca.policies.nfv.VduInitalDelta\n        properties:\n          initial_delta:\n            number_of_instances: 1\n        targets: [ VDU2 ]')), /unknown policy type 'tosca\.policies\.nfv\.VduInitalDelta'/);
  });

  test('non-object YAML, empty files and missing tosca_definitions_version', () => {
    refuses(vmBasic({ [DF]: '- just\n- a list\n' }), /^Definitions\/sample_vnf_df_simple\.yaml:1:1: a TOSCA definitions file must be a YAML map, but this one is a list/);
    refuses(vmBasic({ [DF]: '' }), /^Definitions\/sample_vnf_df_simple\.yaml:1:1: a TOSCA definitions file must be a YAML map, but this one is nothing/);
    refuses(vmBasic({ [DF]: '42\n' }), /must be a YAML map, but this one is 42/);
    refuses(vmBasic({ [TYPES]: 'node_types: {}\n' }), /^Definitions\/sample_vnf_types\.yaml:1:1: tosca_definitions_version is missing/);
  });

  test('semantic errors in the flavour', () => {
    const cases: [Record<string, string | null>, RegExp][] = [
      [edit(DF, '          max_number_of_instances: 3\n', '          max_number_of_instances: three\n'), /sample_vnf_df_simple\.yaml:\d+:11: VDU1: properties\.vdu_profile\.max_number_of_instances must be an integer >= 0, got "three"/],
      [edit(DF, '          max_number_of_instances: 3\n', '          max_number_of_instances: 0\n'), /VDU1: properties\.vdu_profile: max_number_of_instances \(0\) is less than min_number_of_instances \(1\)/],
      [edit(DF, '        vdu_profile:\n          min_number_of_instances: 1\n          max_number_of_instances: 1\n', ''), /VDU2: properties\.vdu_profile is required/],
      [edit(DF, '        name: VDU2\n', ''), /VDU2: properties\.name is required/],
      [edit(DF, '        - virtual_binding: VDU2\n', '        - virtual_binding: VDU9\n'), /VDU2_CP1: requirement virtual_binding names 'VDU9', which is not a VDU of this flavour/],
      [edit(DF, '        - virtual_storage: VirtualStorage2\n', '        - virtual_storage: VDU1\n'), /VDU2: requirement virtual_storage names 'VDU1', which is not a virtual storage node/],
      [edit(DF, '        - virtual_binding: VDU2\n        - virtual_link: internalVL1\n', '        - virtual_binding: VDU2\n        - virtual_link: VDU1\n'), /virtual_link names 'VDU1', which is not a virtual link/],
      [edit(DF, '        - virtual_binding: VDU2\n', ''), /VDU2_CP1: a VduCp needs a virtual_binding requirement/],
      [edit(DF, '          aspect: VDU1_scale\n', '          aspect: VDU9_scale\n'), /policy VDU1_scaling_aspect_deltas: aspect 'VDU9_scale' is not defined by a ScalingAspects policy/],
      [edit(DF, '          default_level: instantiation_level_1\n', '          default_level: level_9\n'), /default_level 'level_9' is not one of the instantiation levels \(instantiation_level_1, instantiation_level_2\)/],
      [edit(DF, '              step_deltas:\n                - delta_1\n', '              step_deltas:\n                - delta_2\n'), /delta 'delta_2' of aspect 'VDU1_scale' \(in its step_deltas\) is not defined for VDU VDU1/],
      [edit(DF, '                VDU1_scale:\n                  scale_level: 2\n', '                VDU1_scale:\n                  scale_level: 3\n'), /instantiation level 'instantiation_level_2': scale level 3 of aspect 'VDU1_scale' is above its max_scale_level 2/],
      [edit(DF, '                VDU1_scale:\n                  scale_level: 2\n', '                VDU9_scale:\n                  scale_level: 2\n'), /scale_info names aspect 'VDU9_scale', which is not defined/],
      [edit(DF, '        targets: [ VDU2 ]\n\n    - VDU1_scaling', '        targets: [ internalVL1 ]\n\n    - VDU1_scaling'), /policy VDU2_initial_delta: target 'internalVL1' is not a VDU of this flavour/],
      [edit(DF, '            implementation: noop-hook\n          heal_end:', '            implementation: no-such-artifact\n          heal_end:'), /hook instantiate_end refers to artifact 'no-such-artifact', which the VNF node does not declare/],
      [edit(DF, 'file: ../Scripts/noop_hook.sh', 'file: ../../outside.sh'), /hook heal_end: artifact file '\.\.\/\.\.\/outside\.sh' points outside the package/],
      [edit(DF, 'flavour_id: simple\n\n  node_templates', 'flavour_id: [ simple, other ]\n\n  node_templates'), /substitution_mappings\.properties\.flavour_id is required/],
      [edit(DF, '        flavour_description:', '        descriptor_id: 00000000-0000-0000-0000-000000000000\n        flavour_description:'), /VNF: properties\.descriptor_id is '00000000-0000-0000-0000-000000000000' here but '5a0c8a32-3b1e-4f2a-9d63-7c1f2e4b8a01' in the VNF node of the entry definitions/],
      [edit(DF, '        name: VDU2\n', '        name: { get_input: nope }\n'), /VDU2: properties\.name: get_input refers to input 'nope', which topology_template\.inputs does not declare/],
      [edit(DF, '  node_templates:\n', '  node_templates:\n    Bad: 5\n'), /node template 'Bad' must be a map, got 5/],
      [edit(DF, '  node_templates:\n', '  node_templates:\n    Bad:\n      properties: {}\n'), /node template 'Bad' has no type/],
      [edit(DF, '  policies:\n', '  policies: 5\n  unused:\n'), /policies must be a list, got 5/],
    ];
    for (const [changes, re] of cases) refuses(vmBasic(changes), re);
  });

  test('get_input resolves from the entry VNF node, and an unresolved flavour-level input stays empty', () => {
    const files = vmBasic(edit(DF, '        name: VDU2\n', '        name: { get_input: product_name }\n'));
    assert.equal(parseVnfPackage(files).flavours.simple?.vdus.VDU2?.name, 'Sample VNF');
  });

  test('a file changed after its digest was declared', () => {
    const files = packageFiles(TACKER_PACKAGES.cnfResources.dir, TACKER_PACKAGES.cnfResources.etsi, 'absent');
    files.set('Files/kubernetes/pod.yaml', Buffer.from(`${files.get('Files/kubernetes/pod.yaml')?.toString() ?? ''}\n# changed\n`));
    const e = refuses(files, /^TOSCA-Metadata\/TOSCA\.meta:96: Files\/kubernetes\/pod\.yaml: SHA-256 digest does not match the declared one/);
    assert.equal(e.line, 96);
    files.delete('Files/kubernetes/pod.yaml');
    refuses(files, /^TOSCA-Metadata\/TOSCA\.meta:96: a digest is declared for Files\/kubernetes\/pod\.yaml, which is not in the package/);
  });

  test('a BaseHOT folder without a usable top template', () => {
    refuses(vmBasic({ 'BaseHOT/simple/sample.yaml': 'description: not heat\n' }), /BaseHOT\/simple\/ has no top Heat template/);
    refuses(vmBasic({ 'BaseHOT/simple/other.yaml': 'heat_template_version: 2013-05-23\nresources: {}\n' }), /BaseHOT\/simple\/ has several top Heat templates/);
    refuses(vmBasic({ 'BaseHOT/simple/nested/VDU1.yaml': 'resources: [\n' }), /^BaseHOT\/simple\/nested\/VDU1\.yaml:\d+:\d+: invalid YAML/);
  });
});

describe('robustness', () => {
  /** Every leaf and container of `doc`, as a path. */
  function paths(v: unknown, prefix: (string | number)[] = [], out: (string | number)[][] = []): (string | number)[][] {
    if (prefix.length > 0) out.push(prefix);
    if (Array.isArray(v)) {
      v.forEach((x, i) => {
        paths(x, [...prefix, i], out);
      });
    }
    else if (v !== null && typeof v === 'object') for (const [k, x] of Object.entries(v)) paths(x, [...prefix, k], out);
    return out;
  }

  function setAt(doc: unknown, path: (string | number)[], value: unknown): unknown {
    const copy = structuredClone(doc) as Record<string | number, unknown>;
    let cur: Record<string | number, unknown> = copy;
    for (const seg of path.slice(0, -1)) cur = cur[seg] as Record<string | number, unknown>;
    cur[path[path.length - 1] as string | number] = value;
    return copy;
  }

  test('replacing any value of the VNFD by a value of another shape gives a model or a PackageError, never a crash', () => {
    const weird: unknown[] = [null, [], {}, 'x'];
    let refused = 0;
    let accepted = 0;
    for (const file of [DF, TOP, TYPES]) {
      const doc = parse(text(file)) as unknown;
      paths(doc).forEach((path, i) => {
        // two of the shapes per path, rotating, keeps the run short while covering every path
        for (const value of [weird[i % weird.length], weird[(i + 2) % weird.length]]) {
          const files = vmBasic({ [file]: stringify(setAt(doc, path, value)) });
          try {
            const m = parseVnfPackage(files);
            assert.deepEqual(JSON.parse(JSON.stringify(m)), m);
            accepted += 1;
          } catch (e) {
            if (!(e instanceof PackageError)) {
              assert.fail(`${file} ${JSON.stringify(path)} = ${JSON.stringify(value)}: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
            }
            assert.match(e.message, /^(Definitions|TOSCA-Metadata|BaseHOT)\/|^the /);
            refused += 1;
          }
        }
      });
    }
    assert.ok(refused > 100 && accepted > 100, `both outcomes exercised (refused ${refused}, accepted ${accepted})`);
  });
});

describe('hostile YAML', () => {
  test('a __proto__ key stays data and an alias bomb is refused', () => {
    const df = text(DF).replace('  node_templates:\n', '  node_templates:\n    __proto__:\n      polluted: true\n');
    refuses(vmBasic({ [DF]: df }), /node template '__proto__' has no type/);
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
    const bomb = ['tosca_definitions_version: tosca_simple_yaml_1_2', 'a: &a [x, x, x, x, x, x, x, x, x, x]'];
    for (let i = 0; i < 8; i += 1) bomb.push(`${String.fromCharCode(98 + i)}: &${String.fromCharCode(98 + i)} [${Array(10).fill(`*${String.fromCharCode(97 + i)}`).join(', ')}]`);
    refuses(vmBasic({ [TYPES]: `${bomb.join('\n')}\n` }), /Definitions\/sample_vnf_types\.yaml.*(too large once aliases are expanded|invalid YAML)/);
  });
});
