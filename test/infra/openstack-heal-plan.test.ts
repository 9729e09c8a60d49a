/**
 * The OpenStack heal planner (src/infra/openstack/heal-plan.ts) without any VIM: hand-built Heat
 * listings of a stack with an AutoScalingGroup (VDU1 members, each a nested stack holding the
 * server and its volume) and a plain server (VDU2) in the top stack.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { isVnfmError } from '../../src/errors.ts';
import type { HealPlan, HealTarget } from '../../src/infra/infra-driver.ts';
import type { HeatResource, HeatStackRef } from '../../src/infra/openstack/heat-client.ts';
import { locateResources, type LocatedResource } from '../../src/infra/openstack/heat-observer.ts';
import {
  changedStacks,
  healKind,
  healReason,
  locateInOwner,
  locateTarget,
  markAction,
  metadataLocation,
  planVnfcMarks,
  targetAtMetadata,
  waitLevels,
} from '../../src/infra/openstack/heal-plan.ts';
import { healPlanOf } from '../../src/lcm/operations/heal.ts';
import { commandOf, type HealCommand } from '../../src/model/lcm-command.ts';
import type { VnfInstanceRecord, VnfcResourceInfo } from '../../src/model/vnf-instance.ts';
import type { FlavourModel } from '../../src/packages/vnfd-model.ts';

const TOP: HeatStackRef = { name: 'vnf-i1', id: 'top' };
const GROUP: HeatStackRef = { name: 'vnf-i1-VDU1_scale_group-g', id: 'grp' };
const M1: HeatStackRef = { name: 'vnf-i1-VDU1_scale_group-g-m1', id: 'st-m1' };
const M2: HeatStackRef = { name: 'vnf-i1-VDU1_scale_group-g-m2', id: 'st-m2' };

const href = (s: HeatStackRef) => `http://heat/v1/p/stacks/${s.name}/${s.id}`;

function row(name: string, type: string, physicalId: string, stack: HeatStackRef, opts: { nested?: HeatStackRef; status?: string; created?: string; parent?: string } = {}): HeatResource {
  return {
    resource_name: name,
    physical_resource_id: physicalId,
    resource_type: type,
    resource_status: opts.status ?? 'CREATE_COMPLETE',
    resource_status_reason: '',
    ...(opts.created === undefined ? {} : { creation_time: opts.created }),
    ...(opts.parent === undefined ? {} : { parent_resource: opts.parent }),
    links: [{ rel: 'stack', href: href(stack) }, ...(opts.nested === undefined ? [] : [{ rel: 'nested', href: href(opts.nested) }])],
  };
}

/** The listing: VDU1 group (2 members with a server and a volume each), VDU2 server + volume at the top. */
function listing(over: { srv1?: string; srv2?: string } = {}): LocatedResource[] {
  return locateResources(TOP, [
    row('VDU1_scale_group', 'OS::Heat::AutoScalingGroup', GROUP.id, TOP, { nested: GROUP }),
    row('VDU2', 'OS::Nova::Server', 'srv-vdu2', TOP),
    row('VirtualStorage2', 'OS::Cinder::Volume', 'vol-vdu2', TOP),
    row('m1', 'VDU1.yaml', M1.id, GROUP, { nested: M1, parent: 'VDU1_scale_group', created: '2026-01-01T00:00:00' }),
    row('m2', 'VDU1.yaml', M2.id, GROUP, { nested: M2, parent: 'VDU1_scale_group', created: '2026-01-02T00:00:00' }),
    row('VDU1', 'OS::Nova::Server', over.srv1 ?? 'srv-1', M1, { parent: 'm1' }),
    row('VirtualStorage', 'OS::Cinder::Volume', 'vol-1', M1, { parent: 'm1' }),
    row('VDU1', 'OS::Nova::Server', over.srv2 ?? 'srv-2', M2, { parent: 'm2' }),
    row('VirtualStorage', 'OS::Cinder::Volume', 'vol-2', M2, { parent: 'm2' }),
  ]);
}

const FLAVOUR = {
  flavourId: 'simple',
  vdus: { VDU1: { virtualStorageIds: ['VirtualStorage'], cpIds: [] }, VDU2: { virtualStorageIds: ['VirtualStorage2'], cpIds: [] } },
} as unknown as FlavourModel;

/** A VNFC as the last observation stored it (metadata: where Heat had its server). */
function vnfc(id: string, vduId: string, server: string, at: { stack: HeatStackRef; parent: string; path: string } | undefined, storage: string[] = []): VnfcResourceInfo {
  return {
    id,
    vduId,
    computeResource: { resourceId: server, vimLevelResourceType: 'OS::Nova::Server' },
    ...(storage.length > 0 ? { storageResourceIds: storage } : {}),
    ...(at === undefined ? {} : { metadata: { stack_id: `${at.stack.name}/${at.stack.id}`, resource_name: vduId, parent_stack: at.parent, heat_resource_path: at.path } }),
  };
}

const R1 = vnfc('rc-1', 'VDU1', 'srv-1', { stack: M1, parent: 'VDU1_scale_group/m1', path: 'VDU1_scale_group/m1/VDU1' }, ['st-1']);
const R2 = vnfc('rc-2', 'VDU1', 'srv-2', { stack: M2, parent: 'VDU1_scale_group/m2', path: 'VDU1_scale_group/m2/VDU1' }, ['st-2']);
const R3 = vnfc('rc-3', 'VDU2', 'srv-vdu2', { stack: TOP, parent: '', path: 'VDU2' }, ['st-3']);

function instance(resources: VnfcResourceInfo[] = [R1, R2, R3]): VnfInstanceRecord {
  return {
    id: 'i1',
    instantiationState: 'INSTANTIATED',
    instantiatedVnfInfo: {
      flavourId: 'simple',
      vnfState: 'STARTED',
      vnfcResourceInfo: resources,
      vnfcInfo: resources.map((r) => ({ id: `info-${r.id}`, vduId: r.vduId, vnfcResourceInfoId: r.id, vnfcState: 'STARTED' })),
      virtualStorageResourceInfo: [
        { id: 'st-1', virtualStorageDescId: 'VirtualStorage', storageResource: { resourceId: 'vol-1', vimLevelResourceType: 'OS::Cinder::Volume' } },
        { id: 'st-2', virtualStorageDescId: 'VirtualStorage', storageResource: { resourceId: 'vol-2', vimLevelResourceType: 'OS::Cinder::Volume' } },
        { id: 'st-3', virtualStorageDescId: 'VirtualStorage2', storageResource: { resourceId: 'vol-vdu2', vimLevelResourceType: 'OS::Cinder::Volume' } },
      ],
    },
  } as unknown as VnfInstanceRecord;
}

function target(r: VnfcResourceInfo): HealTarget {
  return { vnfcInfo: { id: `info-${r.id}`, vduId: r.vduId, vnfcResourceInfoId: r.id, vnfcState: 'STARTED' }, vnfcResourceInfo: r };
}

function plan(targets: HealTarget[], includeStorage = false): HealPlan {
  return { targets, entire: false, includeStorage, additionalParams: {} };
}

/** The heal plan the engine makes of a v2 request with these parameters. */
function planOfRequest(params: Record<string, unknown>, inst = instance()): HealPlan {
  const command = commandOf({ operation: 'HEAL', command: null, operationParams: params, apiVersion: 'v2' }) as HealCommand;
  return healPlanOf(command, inst);
}

/** What the planner marks, as `<stack id>/<resource name>#<physical id>` (errors as `error:<code>`). */
function marks(p: HealPlan, located = listing(), updateIssued = false): string[] {
  const out: string[] = [];
  for (const step of planVnfcMarks({ plan: p, located, flavour: FLAVOUR, instance: instance(), progress: { updateIssued } })) {
    if ('error' in step) out.push(`error:${(step.error as { code?: string }).code ?? String(step.error)}`);
    else if ('replaced' in step) out.push(`replaced:${step.target.vnfcInfo.id}`);
    else for (const l of [step.server, ...step.volumes]) out.push(`${l.stack.id}/${l.row.resource_name}#${l.row.physical_resource_id}`);
  }
  return out;
}

describe('OpenStack heal planner', () => {
  test('heal kind: the whole VNF with all=true, every VNFC (one update) with all=false, nothing without VNFCs', () => {
    assert.equal(healKind(planOfRequest({ additionalParams: { all: true } })), 'entire');
    const allVnfcs = planOfRequest({ additionalParams: { all: false } });
    assert.equal(healKind(allVnfcs), 'vnfcs');
    assert.deepEqual(allVnfcs.targets.map((t) => t.vnfcResourceInfo.id), ['rc-1', 'rc-2', 'rc-3']);
    assert.equal(healKind(planOfRequest({}, instance([]))), 'none');
    assert.equal(healReason({ cause: 'alarm' }), 'heal by the VNFM: alarm');
    assert.equal(healReason({}), 'heal by the VNFM');
  });

  test('whole VNF with all=false marks every server, in VNFC order, each in the stack that owns it', () => {
    assert.deepEqual(marks(planOfRequest({ additionalParams: { all: false } })), ['st-m1/VDU1#srv-1', 'st-m2/VDU1#srv-2', 'top/VDU2#srv-vdu2']);
  });

  test('unknown VNFC ids are refused before any plan (422 naming them)', () => {
    assert.throws(
      () => planOfRequest({ vnfcInstanceId: ['info-rc-1', 'nope'] }),
      (e: unknown) => isVnfmError(e, 'VNFM_ERR_INST_INVALID') && /nope/.test(e.message),
    );
  });

  test('single VNFC: the server in its group member stack, nothing else', () => {
    assert.deepEqual(marks(plan([target(R2)])), ['st-m2/VDU1#srv-2']);
    assert.deepEqual(marks(planOfRequest({ vnfcInstanceId: ['info-rc-3'] })), ['top/VDU2#srv-vdu2']);
  });

  test('includeStorage adds the volumes of the server stack and those named by the VNFC', () => {
    assert.deepEqual(marks(plan([target(R1)], true)), ['st-m1/VDU1#srv-1', 'st-m1/VirtualStorage#vol-1']);
    assert.deepEqual(marks(plan([target(R3)], true)), ['top/VDU2#srv-vdu2', 'top/VirtualStorage2#vol-vdu2']);
  });

  test('several VNFCs: request order kept, each target its own member', () => {
    assert.deepEqual(marks(plan([target(R3), target(R2), target(R1)])), ['top/VDU2#srv-vdu2', 'st-m2/VDU1#srv-2', 'st-m1/VDU1#srv-1']);
  });

  test('cluster members: a stale location is found again by server id, else by the stored location or path', () => {
    // The members swapped servers since the last observation: the id wins over the metadata.
    const swapped = listing({ srv1: 'srv-2', srv2: 'srv-1' });
    assert.deepEqual(marks(plan([target(R1)]), swapped), ['st-m2/VDU1#srv-1']);
    // The server was replaced (new id): its stored location (member stack + name) still holds the VNFC.
    const replaced = listing({ srv1: 'srv-1b' });
    assert.deepEqual(marks(plan([target(R1)]), replaced), ['st-m1/VDU1#srv-1b']);
    // No stored stack: the resource path finds it.
    const byPath = { ...R1, metadata: { heat_resource_path: 'VDU1_scale_group/m1/VDU1' } };
    assert.equal(locateTarget(replaced, target(byPath)).row.physical_resource_id, 'srv-1b');
  });

  test('a VNFC not in the stack fails the heal there; the targets before it are still planned', () => {
    const ghost = vnfc('rc-9', 'VDU1', 'srv-9', undefined);
    assert.deepEqual(marks(plan([target(R3), target(ghost), target(R1)])), ['top/VDU2#srv-vdu2', 'error:VNFM_ERR_VIM_FAILED']);
    assert.throws(() => locateTarget(listing(), target(ghost)), (e: unknown) => isVnfmError(e, 'VNFM_ERR_VIM_FAILED') && /rc-9|info-rc-9/.test(e.message));
  });

  test('retry after the update was issued: replaced targets are skipped, the others marked again', () => {
    const after = listing({ srv1: 'srv-1-new' });
    assert.deepEqual(marks(plan([target(R1), target(R2)]), after, true), ['replaced:info-rc-1', 'st-m2/VDU1#srv-2']);
    const steps = planVnfcMarks({ plan: plan([target(R2)]), located: after, flavour: FLAVOUR, instance: instance(), progress: { updateIssued: true } });
    assert.equal('retry' in steps[0]! && steps[0].retry, true);
  });

  test('marks: once per operation, again only when Heat dropped it', () => {
    const srv = listing().find((l) => l.row.physical_resource_id === 'srv-1') as LocatedResource;
    assert.deepEqual(markAction({ marked: [] }, srv), { action: 'mark' });
    // Marked, and Heat shows it CHECK_FAILED: left for the update.
    const failed = { ...srv, row: { ...srv.row, resource_status: 'CHECK_FAILED' } };
    assert.deepEqual(markAction({ marked: ['st-m1/VDU1#srv-1'] }, failed), { action: 'skip' });
    // Marked, same id, COMPLETE again: Heat dropped the mark.
    assert.deepEqual(markAction({ marked: ['st-m1/VDU1#srv-1'] }, srv), { action: 'remark', entry: 'st-m1/VDU1#srv-1', status: 'CREATE_COMPLETE' });
    // Marked, and already replaced (new id): nothing more to do.
    assert.deepEqual(markAction({ marked: ['st-m1/VDU1#srv-old'] }, srv), { action: 'skip' });
  });

  test('metadata locations: the owner stack is listed alone when every target is still where it says', () => {
    const loc = metadataLocation(target(R1));
    assert.deepEqual(loc, { owner: M1, name: 'VDU1', parent: 'VDU1_scale_group/m1' });
    assert.equal(metadataLocation(target(vnfc('x', 'VDU1', 'srv-x', undefined))), undefined);
    const ownRows = listing().filter((l) => l.stack.id === M1.id).map((l) => l.row);
    const rows = locateInOwner(M1, 'VDU1_scale_group/m1', ownRows, () => M1);
    assert.deepEqual(rows.map((l) => l.path), ['VDU1_scale_group/m1/VDU1', 'VDU1_scale_group/m1/VirtualStorage']);
    assert.equal(targetAtMetadata(rows, loc!, target(R1), true, instance()), true);
    // The row holds another server now: the whole stack must be listed.
    const moved = locateInOwner(M1, 'VDU1_scale_group/m1', listing({ srv1: 'srv-1b' }).filter((l) => l.stack.id === M1.id).map((l) => l.row), () => M1);
    assert.equal(targetAtMetadata(moved, loc!, target(R1), false, instance()), false);
    // With includeStorage, a volume of the VNFC outside the listing makes it incomplete.
    const noVol = rows.filter((l) => l.row.resource_name !== 'VirtualStorage');
    assert.equal(targetAtMetadata(noVol, loc!, target(R1), true, instance()), false);
    assert.equal(targetAtMetadata(noVol, loc!, target(R1), false, instance()), true);
  });

  test('changed stacks and the levels a heal update climbs (member stack, group stack, not the top)', () => {
    const refs = new Map([TOP, GROUP, M1, M2].map((s) => [s.id, s]));
    assert.deepEqual(changedStacks(['st-m1/VDU1#srv-1', 'st-m1/VirtualStorage#vol-1', 'top/VDU2#srv-vdu2'], refs), [M1, TOP]);
    assert.equal(changedStacks(['gone/VDU1#x'], refs), undefined);
    const parentOf = new Map([
      [GROUP.id, TOP],
      [M1.id, GROUP],
      [M2.id, GROUP],
    ]);
    assert.deepEqual(waitLevels([M1, M2], parentOf, TOP.id), { levels: [[M1, M2], [GROUP]], chainComplete: true });
    assert.deepEqual(waitLevels([M1], new Map(), TOP.id), { levels: [[M1]], chainComplete: false });
    assert.deepEqual(waitLevels([], parentOf, TOP.id), { levels: [], chainComplete: false });
  });
});
