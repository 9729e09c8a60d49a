/**
 * Where the tests' fixtures live. Everything a test reads is inside the repository:
 * Tacker's sample packages (test/fixtures/tacker-samples, Apache-2.0, see its NOTICE), the ETSI
 * definitions (test/fixtures/etsi, see its NOTICE), and the Heat templates of the real-Heat
 * bring-up (scripts/real-heat/templates).
 */
import { join, resolve } from 'node:path';

/** Repository root. */
export const REPO_ROOT = resolve(import.meta.dirname, '..', '..');
/** test/fixtures */
export const FIXTURES_DIR = join(REPO_ROOT, 'test', 'fixtures');
/** Tacker's sample packages (data files copied from openstack/tacker). */
export const TACKER_SAMPLES_DIR = join(FIXTURES_DIR, 'tacker-samples');
/** Tacker's basic_lcms_min VM package (VDU1 in an AutoScalingGroup, VDU2). */
export const LCMS_MIN_DIR = join(TACKER_SAMPLES_DIR, 'sol_v2_common/basic_lcms_min/contents');
/** The ETSI SOL001 type files that go into a VM package's Definitions/. */
export const TACKER_VM_DEFS_DIR = join(TACKER_SAMPLES_DIR, 'sol_v2_common/common/Definitions');
/** The ETSI SOL001 type files that go into a CNF package's Definitions/. */
export const TACKER_CNF_DEFS_DIR = join(TACKER_SAMPLES_DIR, 'sol_kubernetes_v2/common/Definitions');
/** Heat templates of the real-Heat bring-up (simple.yaml, vnf.yaml, vdu.yaml). */
export const REAL_HEAT_TEMPLATES_DIR = join(REPO_ROOT, 'scripts', 'real-heat', 'templates');
/** Heat-only stand-ins for the Nova/Neutron/Cinder resource types (env.yaml + fake_*.yaml). */
export const STAND_IN_TEMPLATES_DIR = join(REAL_HEAT_TEMPLATES_DIR, 'fake-nova-neutron');
