/**
 * Parses a VNF package (SOL004 CSAR contents) and its TOSCA VNFD (SOL001) into the typed
 * {@link VnfPackageModel}.
 *
 * What it understands: TOSCA.meta `Entry-Definitions` (or a single YAML at the root), `imports`
 * resolved inside the package (the ETSI SOL001 type files may be shipped, imported by URL, or
 * omitted: their types are built in), `derived_from` chains with property defaults,
 * `substitution_mappings` from the top file to one file per deployment flavour, `get_input`, the
 * ETSI node types (VNF, Vdu.Compute, Vdu.Virtual*Storage, VduCp, VnfVirtualLink), the scaling and
 * instantiation-level policies, `Vnflcm` hook scripts, per-file digests, BaseHOT templates and
 * Kubernetes manifests.
 *
 * Every problem becomes a {@link PackageError} naming the file and, when known, line and column;
 * malformed input of any shape yields such an error, never a TypeError.
 */
import { posix } from 'node:path';
import { type CsarFiles, DEFAULT_CSAR_LIMITS } from './csar-reader.ts';
import { PackageError } from './package-error.ts';
import { parseManifest } from './tosca-meta.ts';
import type { TypeDef } from './tosca-types.ts';
import type { FlavourModel, VnfPackageModel } from './vnfd-model.ts';
import { buildFlavour } from './vnfd/flavour.ts';
import { baseHots, kubernetesResources } from './vnfd/lcm.ts';
import { findFlavourFiles, singleVnfNode, type TopInfo, vnfValues } from './vnfd/substitution.ts';
import { describe, ETSI_TYPE_FILE, isObj, type Obj, own, Parser, type Scope, sorted, YAML_FILE } from './vnfd/templates.ts';

export { scaleLevelsAtInstantiationLevel, validateScale, vnfcCountAtLevel } from './vnfd-scaling.ts';

/**
 * Parses the files of a VNF package into the VNFM's package model. Throws a {@link PackageError}
 * (message `file:line:col: problem`) for anything that would make the package unusable.
 */
export function parseVnfPackage(files: CsarFiles, opts: { maxVnfdBytes?: number } = {}): VnfPackageModel {
  if (!(files instanceof Map) || files.size === 0) throw new PackageError('the package contains no files');
  const p: Parser = new Parser(files, opts.maxVnfdBytes ?? DEFAULT_CSAR_LIMITS.maxVnfdBytes);
  const { entry, manifest } = p.entryDefinitions();
  if (manifest) p.metaDigests.push(...parseManifest(p.readText(manifest), manifest));
  const manifestDigests = p.verifyDigests();

  p.loadDefinitions(entry);
  // Flavour files in the entry's folder that nothing imports (Tacker reads every file there).
  const entryDir = posix.dirname(entry);
  for (const f of sorted(files.keys())) {
    if (p.docs.has(f) || !YAML_FILE.test(f) || posix.dirname(f) !== entryDir) continue;
    if (ETSI_TYPE_FILE.test(posix.basename(f))) continue;
    const doc = p.src.parse(f, p.readText(f));
    if (isObj(doc) && isObj(own(doc, 'topology_template')) && own(own(doc, 'topology_template'), 'substitution_mappings') !== undefined) p.loadDefinitions(f);
  }

  const entryDoc = p.docs.get(entry) as Obj;
  const flavourSources = findFlavourFiles(p);
  const entryIsFlavour = flavourSources.some((f) => f.file === entry);
  const topNode = singleVnfNode(p, entry);
  const entryScope: Scope = { file: entry, inputs: p.inputsOf(entry), values: {} };

  let topChain: TypeDef[];
  if (topNode) {
    topChain = topNode.chain;
  } else if (flavourSources.length > 0) {
    const first = flavourSources.find((f) => f.file === entry) ?? flavourSources[0];
    const nt = first?.nodeType ?? '';
    topChain = p.types.chain('node', nt, undefined);
  } else {
    const hasTopology = own(entryDoc, 'topology_template') !== undefined && own(entryDoc, 'topology_template') !== null;
    throw new PackageError(
      hasTopology
        ? 'no VNF node: topology_template.node_templates has no node whose type is derived from tosca.nodes.nfv.VNF, and no file has substitution_mappings for one'
        : 'no VNF node: the file has no topology_template, and no file has substitution_mappings for a VNF node type',
      p.at(entryDoc, hasTopology ? 'topology_template' : undefined, entry),
    );
  }
  const topValues = topNode ? vnfValues(p, topNode, entryScope) : vnfValues(p, { chain: topChain }, entryScope);
  const top: TopInfo = { node: topNode, chain: topChain, values: topValues };

  if (flavourSources.length === 0 && topNode) {
    // single-file VNFD: the entry describes the only flavour
    const fid = topValues.flavour_id;
    if (typeof fid !== 'string' || fid === '') {
      p.fail(
        `no deployment flavour found: no file has topology_template.substitution_mappings for ${topNode.type}, and VNF node '${topNode.name}' has no flavour_id value`,
        own(own(p.topology(entry), 'node_templates'), topNode.name),
        undefined,
        entry,
      );
    }
    flavourSources.push({ flavourId: fid, file: entry, nodeType: topNode.type });
  } else if (!entryIsFlavour && topNode && p.nodeTemplates(entry).some((n) => n.kind === 'vdu')) {
    p.warnings.push(`${entry}: VDUs in the entry definitions are ignored because the flavours are described in other files`);
  }

  const flavours: Record<string, FlavourModel> = {};
  for (const fs of flavourSources) flavours[fs.flavourId] = buildFlavour(p, fs, top);

  const identity = (prop: string, label: string): string => {
    const v = topValues[prop];
    if (v === undefined || v === null || v === '') {
      const where = topNode ? p.at(own(own(p.topology(entry), 'node_templates'), topNode.name), undefined, entry) : { file: entry };
      throw new PackageError(`the VNF node has no ${prop} (${label}); set it in the node's properties or as a default in its type ${topChain[0]?.name ?? ''}`, where);
    }
    if (typeof v === 'object') {
      throw new PackageError(`the VNF node's ${prop} must be a string, got ${describe(v)}`, topNode ? p.at(own(topNode.def, 'properties'), prop, entry) : { file: entry });
    }
    return String(v);
  };
  const vnfmInfoRaw = topValues.vnfm_info;
  const vnfmInfo = Array.isArray(vnfmInfoRaw) ? vnfmInfoRaw.filter((x): x is string => typeof x === 'string') : typeof vnfmInfoRaw === 'string' ? [vnfmInfoRaw] : [];

  const fileList = sorted(files.keys());
  const kubernetesFiles = fileList.filter((f) => f.startsWith('Files/kubernetes/') && YAML_FILE.test(f));
  const description = own(entryDoc, 'description');
  const model: { -readonly [K in keyof VnfPackageModel]: VnfPackageModel[K] } = {
    vnfdId: identity('descriptor_id', 'vnfdId'),
    vnfProvider: identity('provider', 'vnfProvider'),
    vnfProductName: identity('product_name', 'vnfProductName'),
    vnfSoftwareVersion: identity('software_version', 'vnfSoftwareVersion'),
    vnfdVersion: identity('descriptor_version', 'vnfdVersion'),
    vnfmInfo,
    description: typeof description === 'string' ? description : '',
    vnfNodeType: topNode?.type ?? topChain[0]?.name ?? '',
    flavours,
    entryDefinitions: entry,
    definitionFiles: [...p.docs.keys()],
    files: fileList,
    baseHotDirs: baseHots(p, Object.keys(flavours)),
    kubernetesFiles,
    kubernetesResources: kubernetesResources(p, kubernetesFiles),
    warnings: p.warnings,
  };
  if (manifestDigests) model.manifestDigests = manifestDigests;
  return model;
}
