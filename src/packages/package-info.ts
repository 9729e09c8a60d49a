/**
 * The VNFD-derived parts of a VnfPkgInfo (SOL005 / SOL003 VNF package management):
 *
 * - `softwareImages`: one VnfPackageSoftwareImageInfo per VDU or virtual storage with a software
 *   image (`sw_image_data`, and its `tosca.artifacts.nfv.SwImage` artifact when the image file is
 *   in the package), identified by the node's name in the VNFD, with the sizes converted to the
 *   API's units (minDisk GB, minRam MB, size bytes; TOSCA `scalar-unit.size` units);
 * - `additionalArtifacts`: one VnfPackageArtifactInfo per file that TOSCA.meta or the manifest
 *   declares with a digest, other than the VNFD files, the metadata files and the image files.
 *
 * Both are computed once at onboarding from the parsed package and stored with it.
 */
import type { SwImageModel, VnfPackageModel } from './vnfd-model.ts';

/** VnfPackageSoftwareImageInfo. */
export interface SoftwareImageInfo {
  id: string;
  name: string;
  provider: string;
  version: string;
  checksum: { algorithm: string; hash: string };
  isEncrypted: boolean;
  containerFormat: string;
  diskFormat: string;
  createdAt: string;
  minDisk: number;
  minRam: number;
  size: number;
  imagePath: string;
  userMetadata?: Record<string, unknown>;
}

/** VnfPackageArtifactInfo. */
export interface ArtifactInfo {
  artifactPath: string;
  checksum: { algorithm: string; hash: string };
  isEncrypted: boolean;
  metadata: Record<string, unknown>;
}

/** What a package shows besides its VNFD facts. */
export interface PackageInfo {
  softwareImages: SoftwareImageInfo[];
  additionalArtifacts: ArtifactInfo[];
}

/** TOSCA `scalar-unit.size` units, in bytes. */
const UNITS: Record<string, number> = {
  b: 1,
  kb: 1e3,
  kib: 1024,
  mb: 1e6,
  mib: 1024 ** 2,
  gb: 1e9,
  gib: 1024 ** 3,
  tb: 1e12,
  tib: 1024 ** 4,
};

/** Bytes of a TOSCA size (`10 GB`, `512 MiB`, `1024`); undefined when it does not parse. */
export function sizeInBytes(v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$/.exec(v);
  if (!m) return undefined;
  const unit = UNITS[(m[2] || 'b').toLowerCase()];
  return unit === undefined ? undefined : Number(m[1]) * unit;
}

/** A TOSCA size in `unit` (`gb`, `mb`, `b`), rounded up to a whole number; 0 when absent or unparsable. */
function sizeIn(v: string | undefined, unit: 'gb' | 'mb' | 'b'): number {
  const b = sizeInBytes(v);
  return b === undefined ? 0 : Math.ceil(b / (UNITS[unit] as number));
}

const CONTAINER_FORMATS = ['AKI', 'AMI', 'ARI', 'BARE', 'DOCKER', 'OVA', 'OVF'];
const DISK_FORMATS = ['AKI', 'AMI', 'ARI', 'ISO', 'QCOW2', 'RAW', 'VDI', 'VHD', 'VHDX', 'VMDK'];

/** The API's spelling of a format (upper case, as SOL enumerates them); as written when unknown. */
function format(v: string | undefined, known: readonly string[]): string {
  if (!v) return '';
  const up = v.toUpperCase();
  return known.includes(up) ? up : v;
}

function imageInfo(id: string, img: SwImageModel, createdAt: string): SoftwareImageInfo {
  return {
    id,
    name: img.name,
    provider: img.provider ?? '',
    version: img.version ?? '',
    checksum: img.checksum ? { algorithm: img.checksum.algorithm, hash: img.checksum.hash } : { algorithm: '', hash: '' },
    isEncrypted: false,
    containerFormat: format(img.containerFormat, CONTAINER_FORMATS),
    diskFormat: format(img.diskFormat, DISK_FORMATS),
    createdAt,
    minDisk: sizeIn(img.minDisk, 'gb'),
    minRam: sizeIn(img.minRam, 'mb'),
    size: sizeIn(img.size, 'b'),
    imagePath: img.file && !/^[a-z][a-z0-9+.-]*:/i.test(img.file) ? img.file : '',
    ...(img.userMetadata && Object.keys(img.userMetadata).length > 0 ? { userMetadata: { ...img.userMetadata } } : {}),
  };
}

/** The package's software images and additional artifacts; `createdAt` is when it was onboarded. */
export function packageInfoOf(model: VnfPackageModel, createdAt: Date): PackageInfo {
  const at = createdAt.toISOString();
  const images = new Map<string, SoftwareImageInfo>();
  for (const f of Object.values(model.flavours)) {
    for (const v of Object.values(f.vdus)) if (v.swImage && !images.has(v.vduId)) images.set(v.vduId, imageInfo(v.vduId, v.swImage, at));
    for (const s of Object.values(f.virtualStorages ?? {})) if (s.swImage && !images.has(s.id)) images.set(s.id, imageInfo(s.id, s.swImage, at));
  }
  const softwareImages = [...images.values()].sort((a, b) => a.id.localeCompare(b.id));
  const excluded = new Set<string>([model.entryDefinitions, ...model.definitionFiles, 'TOSCA-Metadata/TOSCA.meta', ...softwareImages.map((i) => i.imagePath).filter((p) => p !== '')]);
  const files = new Set(model.files);
  const additionalArtifacts: ArtifactInfo[] = [];
  for (const [path, d] of Object.entries(model.manifestDigests ?? {})) {
    if (excluded.has(path) || !files.has(path) || /\.(mf|cert)$/i.test(path)) continue;
    additionalArtifacts.push({ artifactPath: path, checksum: { algorithm: d.algorithm, hash: d.hash }, isEncrypted: false, metadata: {} });
  }
  additionalArtifacts.sort((a, b) => a.artifactPath.localeCompare(b.artifactPath));
  return { softwareImages, additionalArtifacts };
}
