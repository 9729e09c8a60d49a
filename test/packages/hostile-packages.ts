/**
 * Hostile VNF packages, built in memory (tests and bench/onboarding.ts):
 *
 * - {@link scalarBombCsar}: a VNFD holding one huge YAML scalar; 150 MiB of it compresses to a
 *   ~150 KB CSAR (the probe that once killed the VNFM with a heap OOM);
 * - {@link manyVdusCsar}: a valid VNFD with thousands of VDUs (10,000 ~ 120 KB zipped), slow to
 *   parse;
 * - {@link manyEntriesCsar}: a valid package of 10,000 ZIP entries (~1.1 MB);
 * - {@link aliasBombCsar}: a "billion laughs" VNFD of YAML anchors and aliases (~10 KB).
 */
import { buildCsarFromFiles } from '../../src/packages/csar-reader.ts';

const META = 'TOSCA-Meta-File-Version: 1.0\nCSAR-Version: 1.1\nCreated-by: hostile test\nEntry-Definitions: Definitions/vnfd.yaml\n';

/** A CSAR whose Definitions/vnfd.yaml has one scalar of `mib` MiB. */
export function scalarBombCsar(mib: number): Buffer {
  const head = 'tosca_definitions_version: tosca_simple_yaml_1_2\ndescription: "';
  const body = Buffer.alloc(head.length + mib * 1024 * 1024 + 2, 'x');
  body.write(head, 0, 'utf8');
  body.write('"\n', body.length - 2, 'utf8');
  return buildCsarFromFiles({ 'TOSCA-Metadata/TOSCA.meta': META, 'Definitions/vnfd.yaml': body });
}

/** A valid one-file VNFD with `n` VDUs; its vnfdId is derived from `n` and `tag`. */
export function manyVdusCsar(n: number, tag = 'a'): { csar: Buffer; vnfdId: string } {
  const vnfdId = `0d4c9b0e-0000-4000-8000-${tag.padStart(4, '0').slice(-4)}${String(n).padStart(8, '0')}`;
  const lines = [
    'tosca_definitions_version: tosca_simple_yaml_1_2',
    `description: ${n} VDUs`,
    'topology_template:',
    '  node_templates:',
    '    VNF:',
    '      type: tosca.nodes.nfv.VNF',
    '      properties:',
    `        descriptor_id: ${vnfdId}`,
    '        provider: Example Co',
    '        product_name: Many VDUs',
    "        software_version: '1.0'",
    "        descriptor_version: '1.0'",
    '        flavour_id: default',
  ];
  for (let i = 1; i <= n; i++) {
    lines.push(`    VDU${i}:`, '      type: tosca.nodes.nfv.Vdu.Compute', '      properties:', `        name: vdu${i}`, '        vdu_profile: { min_number_of_instances: 1, max_number_of_instances: 2 }');
  }
  return { csar: buildCsarFromFiles({ 'TOSCA-Metadata/TOSCA.meta': META, 'Definitions/vnfd.yaml': `${lines.join('\n')}\n` }), vnfdId };
}

/** The VNF node of the small valid VNFDs below. */
function vnfNode(vnfdId: string, extra: string[] = []): string[] {
  return [
    'topology_template:',
    '  node_templates:',
    '    VNF:',
    '      type: tosca.nodes.nfv.VNF',
    '      properties:',
    `        descriptor_id: ${vnfdId}`,
    '        provider: Example Co',
    '        product_name: Hostile',
    "        software_version: '1.0'",
    "        descriptor_version: '1.0'",
    '        flavour_id: default',
    ...extra,
  ];
}

/**
 * A valid package of exactly `n` ZIP entries: the VNFD, TOSCA.meta and `n - 2` tiny files under
 * `Files/` (10,000 entries ~ 1.1 MB zipped: the size is in the central directory and headers).
 */
export function manyEntriesCsar(n: number, tag = 'e'): { csar: Buffer; vnfdId: string } {
  const vnfdId = `0d4c9b0e-0000-4000-8001-${tag.padStart(4, '0').slice(-4)}${String(n).padStart(8, '0')}`;
  const files: Record<string, string> = {
    'TOSCA-Metadata/TOSCA.meta': META,
    'Definitions/vnfd.yaml': `${['tosca_definitions_version: tosca_simple_yaml_1_2', `description: ${n} entries`, ...vnfNode(vnfdId)].join('\n')}\n`,
  };
  for (let i = 0; i < n - 2; i++) files[`Files/f${i}.txt`] = `${i}`;
  return { csar: buildCsarFromFiles(files), vnfdId };
}

/**
 * A "billion laughs" VNFD: `levels` anchors, each a list of `width` aliases to the previous one,
 * the last used as a property (40 x 40: ~10 KB of YAML standing for 40^40 nodes).
 */
export function aliasBombCsar(levels = 40, width = 40): Buffer {
  const lines = ['tosca_definitions_version: tosca_simple_yaml_1_2', 'description: alias bomb', 'metadata:', '  a0: &a0 "lol"'];
  for (let i = 1; i <= levels; i++) lines.push(`  a${i}: &a${i} [${Array(width).fill(`*a${i - 1}`).join(', ')}]`);
  lines.push(...vnfNode('0d4c9b0e-0000-4000-8002-000000000001', [`        laughs: *a${levels}`]));
  return buildCsarFromFiles({ 'TOSCA-Metadata/TOSCA.meta': META, 'Definitions/vnfd.yaml': `${lines.join('\n')}\n` });
}
