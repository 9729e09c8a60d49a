/**
 * Malformed-request fuzzing of every API route (`/vnfpkgm/v1`, `/vnfpkgm/v2`, `/v1.0/vims`,
 * `/vnflcm/v1`, `/vnflcm/v2` incl. LCM operations, op occ tasks and subscriptions): a seeded
 * generator builds several hundred requests that must all be refused (malformed JSON, wrong types,
 * unknown enum values, missing required attributes, wrong content types, oversized bodies, unknown
 * ids, arrays / nulls / scalars instead of objects, huge strings, NUL characters, unicode, deep
 * nesting, bad SOL013 queries, wrong Version headers). Every answer must be a 4xx ProblemDetails,
 * and the database must be unchanged after each of them.
 *
 * Reproduce a run with `VNFM_FUZZ_SEED=<seed>`; the seed and the failing request are in the message.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { buildCsarFromFiles } from '../../src/packages/csar-reader.ts';
import { type TestVnfm, testVnfm } from '../helpers/app.ts';
import { FAKE_VIM, FakeDriver } from '../helpers/fake-driver.ts';
import { ROOT, csarOf, onboard } from '../helpers/packages.ts';
import { rngOf } from '../helpers/prng.ts';

const SEED = Number(process.env.VNFM_FUZZ_SEED ?? 20250611);
const RANDOM_REQUESTS = 420;
const MAX_BODY = 64 * 1024;
const MAX_PACKAGE = 256 * 1024;

const rng = rngOf(SEED);
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rng() * xs.length)] as T;
const chance = (p: number) => rng() < p;

// ------------------------------------------------------------------ value generators

const UNICODE = ['名前', 'Ωμέγα', '🙂🚀', 'مرحبا', 'e\u0301', '\u202eevil', 'ﬀ', '\ud800', '\uffff'];

function randomText(max = 24): string {
  const n = 1 + Math.floor(rng() * max);
  let s = '';
  for (let i = 0; i < n; i++) s += chance(0.2) ? pick(UNICODE) : String.fromCharCode(0x21 + Math.floor(rng() * 94));
  return s;
}

type Kind =
  | { t: 'string'; min?: number; max: number; nullable?: boolean }
  | { t: 'int'; min?: number; nullable?: boolean }
  | { t: 'bool' }
  | { t: 'object'; nullable?: boolean }
  | { t: 'array'; items: 'string' | 'object' }
  | { t: 'enum'; values: readonly string[]; nullable?: boolean }
  /** Schema-valid shapes the service must still refuse (semantic errors), plus type errors. */
  | { t: 'custom'; bad: readonly unknown[] };

/** A value that the declared kind does not accept. */
function badValue(k: Kind): unknown {
  const notNull = (xs: unknown[], nullable?: boolean) => (nullable ? xs : [...xs, null]);
  switch (k.t) {
    case 'string':
      return pick(
        notNull(
          [
            42,
            -1.5,
            true,
            [],
            [randomText()],
            { v: randomText() },
            'x'.repeat(k.max + 1 + Math.floor(rng() * 5000)),
            `${pick(UNICODE)}${'界'.repeat(k.max + 1)}`,
            `bad\u0000nul${randomText(4)}`,
            ...(k.min ? [''] : []),
          ],
          k.nullable,
        ),
      );
    case 'int':
      return pick(notNull(['1', 1.5, true, [], {}, Number.MAX_SAFE_INTEGER * 4 + 0.5, ...(k.min !== undefined ? [k.min - 1, k.min - 1000] : [])], k.nullable));
    case 'bool':
      return pick(['true', 'yes', 1, 0, null, [], {}]);
    case 'object':
      return pick(notNull([randomText(), 42, true, [], [{}], 'x'.repeat(70_000).slice(0, 3000)], k.nullable));
    case 'array':
      return pick([randomText(), 42, {}, null, true, k.items === 'string' ? [42] : [42], k.items === 'string' ? [{}] : ['str'], k.items === 'string' ? [null] : [null]]);
    case 'enum':
      return pick(notNull([`${pick(k.values)}_NOT`, (k.values[0] as string).toLowerCase(), ' ', 42, [k.values[0]], { v: k.values[0] }, pick(UNICODE)], k.nullable));
    case 'custom':
      return pick(k.bad);
  }
}

/** A deeply nested JSON text (built as text: the serializer itself would overflow). */
function deepJson(depth: number): string {
  return chance(0.5) ? `${'['.repeat(depth)}1${']'.repeat(depth)}` : `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
}

// ------------------------------------------------------------------ the API surface

interface Target {
  label: string;
  id: () => string;
  /** True when even a schema-valid request must be refused on it (unknown id, wrong state). */
  refusesAnything: boolean;
}

interface BodySpec {
  base: () => Record<string, unknown>;
  fields: Record<string, Kind>;
  required: string[];
  /** additionalProperties false at the top level: an unknown attribute is an error. */
  strict?: boolean;
  /** Wraps the body (Tacker's `{ "vim": {...} }`). */
  wrap?: string;
  /** JSON media types the route accepts. */
  jsonTypes?: string[];
}

interface Endpoint {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Fastify route pattern, e.g. /vnflcm/v2/vnf_instances/:id. */
  route: string;
  targets?: Target[];
  body?: BodySpec;
  /** A list endpoint (bad SOL013 queries apply). */
  list?: boolean;
  /** Query schema of a non-SOL list. */
  badQueries?: string[];
  /** The package upload (binary body). */
  upload?: boolean;
  /** Accept headers that must be refused on this route. */
  badAccept?: string[];
}

const ids = {
  pkgOnboarded: '',
  pkgCreated: '',
  vnfdId: '',
  instNot: '',
  instInst: '',
  opCompleted: '',
  vimId: '',
  subV1: '',
  subV2: '',
};

function unknownIds(): Target[] {
  return [
    { label: 'unknown uuid', id: () => randomUUID(), refusesAnything: true },
    { label: 'unicode id', id: () => encodeURIComponent(`${pick(UNICODE)}-${randomText(8)}`.replace(/[\ud800-\udfff]/g, '?')), refusesAnything: true },
    { label: 'too long id', id: () => 'z'.repeat(256 + Math.floor(rng() * 700)), refusesAnything: true },
    { label: 'nul id', id: () => `a%00${Math.floor(rng() * 1000)}`, refusesAnything: true },
    { label: 'bad escape', id: () => pick(['%ED%A0%80', '%E0%A4%A', '%C0%AF', '%FF']), refusesAnything: true },
    { label: 'dots', id: () => pick(['..', '%2E%2E', '.%2F..', '%2F']), refusesAnything: true },
  ];
}

const LIST_BAD_QUERIES = [
  'filter=(eq,id',
  'filter=(eq,id,a))',
  'filter=(like,id,a)',
  'filter=eq,id,a',
  'filter=(eq,,a)',
  'filter=(eq,id)',
  'filter=(gt,id,a,b)',
  "filter=(eq,id,a'b)",
  'filter=(eq,i~zd,a)',
  'filter=(eq,id;a)',
  'fields=',
  'fields=noSuchAttributeAtAll',
  'fields=id,,id',
  'fields=%20id',
  'exclude_fields=noSuchAttributeAtAll',
  'all_fields&fields=id',
  'all_fields&exclude_default',
  'fields=id&exclude_fields=_links',
  'exclude_fields=id&exclude_default',
  'nextpage_opaque_marker=not-base64!!',
  'nextpage_opaque_marker=eyJvIjotMX0',
  'nextpage_opaque_marker=W10',
  `nextpage_opaque_marker=${'A'.repeat(5000)}`,
  'filter=(eq,id,%00)',
];

const vci = (v: 'v1' | 'v2', entry: Record<string, unknown>) => (v === 'v2' ? { vim1: entry } : [{ id: 'vim1', ...entry }]);

function lcmEndpoints(v: 'v1' | 'v2'): Endpoint[] {
  const p = `/vnflcm/${v}`;
  const inst = (id: () => string, label: string, refusesAnything: boolean): Target => ({ label, id, refusesAnything });
  const notInst = inst(() => ids.instNot, 'NOT_INSTANTIATED instance', false);
  const instd = inst(() => ids.instInst, 'INSTANTIATED instance', false);
  const vciKind: Kind =
    v === 'v2'
      ? { t: 'custom', bad: ['x', [], 42, null, { vim1: 42 }, { vim1: 'x' }, { vim1: { vimId: 'not-registered' } }, { vim1: {} }, { vim1: { vimId: 42 } }, { vim1: { interfaceInfo: { endpoint: 'x' }, accessInfo: { a: 1 } } }, { vim1: { vimId: null } }] }
      : { t: 'custom', bad: ['x', {}, 42, null, [42], ['x'], [{ vimId: 'not-registered' }], [{}], [{ vimId: 42 }], [{ interfaceInfo: 'x' }]] };
  const common: Endpoint[] = [
    { method: 'GET', route: `${p}/api_versions`, badAccept: [] },
    {
      method: 'POST',
      route: `${p}/vnf_instances`,
      body: {
        base: () => ({ vnfdId: ids.vnfdId, vnfInstanceName: randomText(), vnfInstanceDescription: randomText(), metadata: { k: randomText() } }),
        fields: {
          vnfdId: { t: 'custom', bad: [42, null, '', [], {}, true, 'x'.repeat(256), randomUUID(), 'no-such-vnfd', `${pick(UNICODE)}`, 'a\u0000b'] },
          vnfInstanceName: { t: 'string', max: 255 },
          vnfInstanceDescription: { t: 'string', max: 1024 },
          metadata: { t: 'object' },
          ...(v === 'v2' ? { vimConnectionInfo: vciKind } : {}),
        },
        required: ['vnfdId'],
      },
    },
    { method: 'GET', route: `${p}/vnf_instances`, list: true },
    { method: 'GET', route: `${p}/vnf_instances/:id`, targets: unknownIds() },
    {
      method: 'PATCH',
      route: `${p}/vnf_instances/:id`,
      targets: [notInst, instd, ...unknownIds()],
      body: {
        base: () => ({ vnfInstanceName: randomText() }),
        fields: {
          vnfInstanceName: { t: 'string', max: 255, nullable: true },
          vnfInstanceDescription: { t: 'string', max: 1024, nullable: true },
          vnfdId: { t: 'custom', bad: [null, 42, '', [], 'x'.repeat(256), randomUUID()] },
          vnfConfigurableProperties: { t: 'object', nullable: true },
          metadata: { t: 'object', nullable: true },
          extensions: { t: 'object', nullable: true },
          vimConnectionInfo: vciKind,
          vnfcInfoModifications: { t: 'array', items: 'object' },
          ...(v === 'v1' ? { vnfPkgId: { t: 'custom', bad: [42, null, '', randomUUID(), 'x'.repeat(300)] } as Kind, vimConnectionInfoDeleteIds: { t: 'array', items: 'string' } as Kind } : {}),
        },
        required: [],
        jsonTypes: ['application/json', 'application/merge-patch+json'],
      },
    },
    { method: 'DELETE', route: `${p}/vnf_instances/:id`, targets: [{ ...instd, refusesAnything: true }, ...unknownIds()] },
    {
      method: 'POST',
      route: `${p}/vnf_instances/:id/instantiate`,
      targets: [notInst, { ...instd, refusesAnything: true }, ...unknownIds()],
      body: {
        base: () => ({ flavourId: 'simple', vimConnectionInfo: vci(v, FAKE_VIM) }),
        fields: {
          flavourId: { t: 'custom', bad: [42, null, '', [], {}, 'x'.repeat(256), 'no-such-flavour', pick(UNICODE)] },
          instantiationLevelId: { t: 'custom', bad: [42, null, '', [], 'no-such-level', 'x'.repeat(300)] },
          extVirtualLinks: { t: 'array', items: 'object' },
          extManagedVirtualLinks: { t: 'array', items: 'object' },
          localizationLanguage: { t: 'custom', bad: [42, null, [], {}] },
          additionalParams: { t: 'object' },
          extensions: { t: 'object' },
          vnfConfigurableProperties: { t: 'object' },
          vimConnectionInfo: vciKind,
        },
        required: ['flavourId'],
      },
    },
    {
      method: 'POST',
      route: `${p}/vnf_instances/:id/terminate`,
      targets: [instd, { ...notInst, refusesAnything: true }, ...unknownIds()],
      body: {
        base: () => ({ terminationType: 'GRACEFUL', gracefulTerminationTimeout: 10 }),
        fields: { terminationType: { t: 'enum', values: ['FORCEFUL', 'GRACEFUL'] }, gracefulTerminationTimeout: { t: 'int', min: 0 }, additionalParams: { t: 'object' } },
        required: [],
      },
    },
    {
      method: 'POST',
      route: `${p}/vnf_instances/:id/scale`,
      targets: [instd, { ...notInst, refusesAnything: true }, ...unknownIds()],
      body: {
        base: () => ({ type: 'SCALE_OUT', aspectId: 'VDU1_scale', numberOfSteps: 1 }),
        fields: {
          type: { t: 'enum', values: ['SCALE_OUT', 'SCALE_IN'] },
          aspectId: { t: 'custom', bad: [42, null, '', [], 'no-such-aspect', 'x'.repeat(256), pick(UNICODE)] },
          numberOfSteps: { t: 'custom', bad: [0, -1, 1.5, '1', null, [], 1_000_000] },
          additionalParams: { t: 'object' },
        },
        required: ['type', 'aspectId'],
      },
    },
    {
      method: 'POST',
      route: `${p}/vnf_instances/:id/heal`,
      targets: [instd, { ...notInst, refusesAnything: true }, ...unknownIds()],
      body: {
        // the base names a VNFC that does not exist, so no mutation can become a real heal
        base: () => ({ vnfcInstanceId: [`missing-${randomText(6)}`], cause: randomText() }),
        fields: {
          vnfcInstanceId: { t: 'custom', bad: ['x', [42], {}, null, [''], [null], ['x'.repeat(300)], [`nope-${randomUUID()}`]] },
          cause: { t: 'string', max: 255 },
          additionalParams: { t: 'custom', bad: ['x', [], 42, null, { all: 'yes' }, { all: 1 }, { all: null }] },
          healScript: { t: 'string', max: 255 },
        },
        required: [],
      },
    },
    ...(v === 'v2' ? [{ method: 'POST', route: `${p}/vnf_instances/:id/sync`, targets: [{ ...notInst, refusesAnything: true }, ...unknownIds()] } as Endpoint] : []),
    { method: 'GET', route: `${p}/vnf_lcm_op_occs`, list: true },
    { method: 'GET', route: `${p}/vnf_lcm_op_occs/:id`, targets: unknownIds() },
    ...(['retry', 'rollback', 'fail'] as const).map(
      (task): Endpoint => ({ method: 'POST', route: `${p}/vnf_lcm_op_occs/:id/${task}`, targets: [{ label: 'COMPLETED op occ', id: () => ids.opCompleted, refusesAnything: true }, ...unknownIds()] }),
    ),
    {
      method: 'POST',
      route: `${p}/subscriptions`,
      body: {
        // the callback is unreachable, so even a valid subscription is refused (callback test)
        base: () => ({ callbackUri: 'http://127.0.0.1:9/callback', filter: { notificationTypes: ['VnfIdentifierCreationNotification'] }, ...(v === 'v2' ? { verbosity: 'SHORT' } : {}) }),
        fields: {
          callbackUri: { t: 'custom', bad: [42, null, '', 'not a uri', 'ftp://example.com/x', 'http://', [], {}, `http://${'a'.repeat(5000)}.example`] },
          filter: { t: 'custom', bad: ['x', [], 42, { notificationTypes: ['NoSuchNotification'] }, { operationTypes: ['EXPLODE'] }, { operationStates: ['MAYBE'] }, { unknownCriterion: true }, { vnfInstanceSubscriptionFilter: { vnfdIds: 'x' } }] },
          authentication: { t: 'custom', bad: ['x', [], { authType: [] }, { authType: 'BASIC' }, { authType: ['BASIC'] }, { authType: ['TLS_CERT'] }, { authType: ['BASIC'], paramsBasic: { userName: 42 } }] },
          ...(v === 'v2' ? { verbosity: { t: 'enum', values: ['FULL', 'SHORT'] } as Kind } : {}),
        },
        required: ['callbackUri'],
      },
    },
    { method: 'GET', route: `${p}/subscriptions`, list: true },
    { method: 'GET', route: `${p}/subscriptions/:id`, targets: [{ label: 'other version subscription', id: () => (v === 'v1' ? ids.subV2 : ids.subV1), refusesAnything: true }, ...unknownIds()] },
    { method: 'DELETE', route: `${p}/subscriptions/:id`, targets: [{ label: 'other version subscription', id: () => (v === 'v1' ? ids.subV2 : ids.subV1), refusesAnything: true }, ...unknownIds()] },
  ];
  if (v === 'v1') {
    common.push({
      method: 'POST',
      route: `${p}/vnf_lcm_op_occs/:id/cancel`,
      targets: [{ label: 'COMPLETED op occ', id: () => ids.opCompleted, refusesAnything: true }, ...unknownIds()],
      body: { base: () => ({ cancelMode: 'GRACEFUL' }), fields: { cancelMode: { t: 'enum', values: ['GRACEFUL', 'FORCEFUL'] } }, required: [] },
    });
  }
  return common;
}

function pkgEndpoints(): Endpoint[] {
  const p = '/vnfpkgm/v1';
  const onboarded: Target = { label: 'ONBOARDED package', id: () => ids.pkgOnboarded, refusesAnything: false };
  const created: Target = { label: 'CREATED package', id: () => ids.pkgCreated, refusesAnything: false };
  const byVnfd = (): Target[] => [{ label: 'unknown vnfdId', id: () => randomUUID(), refusesAnything: true }, { label: 'package id as vnfdId', id: () => ids.pkgOnboarded, refusesAnything: true }, ...unknownIds()];
  return [
    {
      method: 'POST',
      route: `${p}/vnf_packages`,
      body: { base: () => ({ userDefinedData: { k: randomText() } }), fields: { userDefinedData: { t: 'object' } }, required: [], strict: true },
    },
    { method: 'GET', route: `${p}/vnf_packages`, list: true },
    { method: 'GET', route: `${p}/vnf_packages/:id`, targets: unknownIds() },
    {
      method: 'PATCH',
      route: `${p}/vnf_packages/:id`,
      targets: [onboarded, created, ...unknownIds()],
      body: {
        base: () => ({ operationalState: 'DISABLED' }),
        fields: { operationalState: { t: 'enum', values: ['ENABLED', 'DISABLED'] }, userDefinedData: { t: 'object' } },
        required: ['operationalState'],
        strict: true,
        jsonTypes: ['application/json', 'application/merge-patch+json'],
      },
    },
    { method: 'DELETE', route: `${p}/vnf_packages/:id`, targets: [{ ...onboarded, refusesAnything: true }, ...unknownIds()] },
    { method: 'PUT', route: `${p}/vnf_packages/:id/package_content`, upload: true, targets: [{ ...onboarded, refusesAnything: true }, created, ...unknownIds()] },
    { method: 'GET', route: `${p}/vnf_packages/:id/package_content`, targets: [{ ...created, refusesAnything: true }, ...unknownIds()] },
    { method: 'GET', route: `${p}/vnf_packages/:id/vnfd`, targets: [{ ...created, refusesAnything: true }, ...unknownIds()], badAccept: ['text/plain'] },
    { method: 'GET', route: `${p}/onboarded_vnf_packages/:id`, targets: byVnfd() },
    { method: 'GET', route: `${p}/onboarded_vnf_packages/:id/vnfd`, targets: byVnfd() },
    { method: 'GET', route: `${p}/onboarded_vnf_packages/:id/package_content`, targets: byVnfd() },
    { method: 'GET', route: '/vnfpkgm/v2/onboarded_vnf_packages/:id', targets: byVnfd() },
    { method: 'GET', route: '/vnfpkgm/v2/onboarded_vnf_packages/:id/vnfd', targets: byVnfd() },
    { method: 'GET', route: '/vnfpkgm/v2/onboarded_vnf_packages/:id/package_content', targets: byVnfd() },
  ];
}

function vimEndpoints(): Endpoint[] {
  const fields: Record<string, Kind> = {
    name: { t: 'string', min: 1, max: 255 },
    type: { t: 'custom', bad: ['vmware', 'OpenStack', '', 42, null, [], 'kubernetes '] },
    description: { t: 'string', max: 1024 },
    is_default: { t: 'bool' },
    auth_url: { t: 'custom', bad: ['', 'not a url', 'ftp://x/y', 'http//missing-colon', 42, null, [], 'x'.repeat(3000)] },
    auth_cred: { t: 'custom', bad: ['x', [], 42, null, {}, { username: 'u' }, { password: 'p' }] },
    vim_project: { t: 'custom', bad: ['x', [], 42, null, {}, { name: '' }] },
    extra: { t: 'custom', bad: ['x', [], 42, null] },
  };
  // python-tackerclient spells the collection `/v1.0/vims.json`
  const collections = ['/v1.0/vims', '/v1.0/vims.json'].flatMap((route): Endpoint[] => [
    {
      method: 'POST',
      route,
      body: {
        base: () => ({ name: `fz-${randomUUID()}`, type: 'openstack', auth_url: 'http://127.0.0.1:5000/v3', auth_cred: { username: 'u', password: 'fuzz-pw' }, vim_project: { name: 'p' } }),
        fields,
        required: ['name', 'type', 'auth_url', 'auth_cred'],
        wrap: 'vim',
      },
    },
    { method: 'GET', route, badQueries: [] },
  ]);
  return [
    ...collections,
    { method: 'GET', route: '/v1.0/vims/:id', targets: unknownIds() },
    {
      method: 'PUT',
      route: '/v1.0/vims/:id',
      targets: [{ label: 'registered VIM', id: () => ids.vimId, refusesAnything: false }, ...unknownIds()],
      body: {
        base: () => ({ description: randomText() }),
        fields: { ...fields, type: { t: 'custom', bad: ['kubernetes', 'vmware', 42, null, ''] }, auth_cred: { t: 'custom', bad: ['x', [], 42, null] }, vim_project: { t: 'custom', bad: ['x', [], 42, null] } },
        required: [],
        wrap: 'vim',
      },
    },
    { method: 'DELETE', route: '/v1.0/vims/:id', targets: unknownIds() },
  ];
}

const ENDPOINTS: Endpoint[] = [...pkgEndpoints(), ...vimEndpoints(), ...lcmEndpoints('v1'), ...lcmEndpoints('v2'), { method: 'GET', route: '/vnflcm/api_versions' }, { method: 'GET', route: '/vnfm/v1/notifications', badQueries: ['status=BOGUS', 'limit=abc', 'limit=0', 'limit=99999999', 'unknown=1', 'subscriptionId='] }];

// ------------------------------------------------------------------ request generation

interface FuzzRequest {
  what: string;
  method: Endpoint['method'];
  url: string;
  headers: Record<string, string>;
  payload?: string | Buffer;
}

function isV2(route: string): boolean {
  return route.startsWith('/vnflcm/v2/');
}

const MALFORMED_JSON = ['{', '{"a":', '[1,2', 'nul', '{"vnfdId": "x",}', "{'single': 'quotes'}", '{"a":1}{"b":2}', '\u0000', '{"a": NaN}', '{"a": 0x10}', '\ufeff{"a":1', '{"a":"unterminated}', '"\\ud800"x', '01', '{"__proto__": {"x": 1}, "a": '];
const WRONG_TYPES = ['application/xml', 'text/html', 'application/x-www-form-urlencoded', 'image/png', 'application/yaml', 'multipart/mixed; boundary=x', 'application/jsonx'];

function urlOf(ep: Endpoint, target: Target | undefined, query?: string): string {
  const path = target ? ep.route.replace(':id', target.id()) : ep.route;
  return query ? `${path}?${query}` : path;
}

/** Builds one request that must be refused. */
function generate(ep: Endpoint): FuzzRequest {
  const headers: Record<string, string> = {};
  let versionBroken = false;
  if (isV2(ep.route) && !ep.route.endsWith('/api_versions')) {
    const h = pick(['2.0.0', '2.0.0', '2.0.0', '2.0.0', '2.0.0', 'missing', '3.0.0', '1.3.0', 'two', '2.0', '']);
    if (h !== 'missing') headers.version = h;
    versionBroken = h !== '2.0.0';
  }
  if (ep.route.startsWith('/vnflcm/v1/') && chance(0.3)) headers.version = '1.3.0';
  const targets = ep.targets ?? [];
  // targets on which only a broken request is guaranteed to be refused
  const target = targets.length ? pick(targets) : undefined;
  const anything = versionBroken || (target?.refusesAnything ?? false);
  const tag = `${ep.method} ${ep.route}${target ? ` [${target.label}]` : ''}${versionBroken ? ` [Version ${headers.version ?? 'missing'}]` : ''}`;

  if (ep.upload) {
    const kind = pick(anything ? ['zip', 'json', 'type', 'empty', 'multipart', 'huge'] : ['json', 'type', 'empty', 'multipart', 'huge', 'text']);
    const url = urlOf(ep, target);
    switch (kind) {
      case 'zip':
        return { what: `${tag} zip`, method: 'PUT', url, headers: { ...headers, 'content-type': 'application/zip' }, payload: buildCsarFromFiles(new Map([['x.yaml', Buffer.from('a: 1')]])) };
      case 'json':
        return { what: `${tag} json body`, method: 'PUT', url, headers: { ...headers, 'content-type': 'application/json' }, payload: JSON.stringify({ content: randomText() }) };
      case 'text':
        return { what: `${tag} text body`, method: 'PUT', url, headers: { ...headers, 'content-type': 'text/plain' }, payload: randomText() };
      case 'type':
        return { what: `${tag} wrong type`, method: 'PUT', url, headers: { ...headers, 'content-type': pick(WRONG_TYPES.filter((t) => !t.startsWith('multipart'))) }, payload: 'PK\u0003\u0004garbage' };
      case 'empty':
        return { what: `${tag} empty zip`, method: 'PUT', url, headers: { ...headers, 'content-type': 'application/zip' }, payload: Buffer.alloc(0) };
      case 'multipart':
        return {
          what: `${tag} broken multipart`,
          method: 'PUT',
          url,
          headers: { ...headers, 'content-type': pick(['multipart/form-data', 'multipart/form-data; boundary=XyZ']) },
          payload: pick(['--XyZ\r\nContent-Disposition: form-data; name="file"\r\n\r\nPK', 'no boundary at all', '--XyZ\r\n\r\n']),
        };
      default:
        return { what: `${tag} oversized`, method: 'PUT', url, headers: { ...headers, 'content-type': 'application/zip' }, payload: Buffer.alloc(MAX_PACKAGE + 1 + Math.floor(rng() * 1000), 7) };
    }
  }

  if (!ep.body) {
    // GET / DELETE / body-less POST
    const query = ep.list ? pick(LIST_BAD_QUERIES) : ep.badQueries?.length ? pick(ep.badQueries) : undefined;
    if (query !== undefined) return { what: `${tag} ?${query}`, method: ep.method, url: urlOf(ep, target, anything && chance(0.5) ? undefined : query), headers };
    if (ep.badAccept?.length && ep.route.endsWith('/vnfd') && chance(0.3)) {
      // the onboarded package has several VNFD files: text/plain cannot be served
      return { what: `${tag} Accept text/plain`, method: ep.method, url: ep.route.replace(':id', ids.pkgOnboarded), headers: { ...headers, accept: 'text/plain' } };
    }
    if (!target) {
      // nothing about this GET can be wrong (api_versions, the legacy VIM list): only the method
      return { what: `${tag} wrong method`, method: pick(['POST', 'PATCH', 'PUT', 'DELETE'] as const), url: ep.route, headers: { ...headers, 'content-type': 'application/json' }, payload: '{}' };
    }
    const r: FuzzRequest = { what: tag, method: ep.method, url: urlOf(ep, target), headers };
    if (ep.method === 'POST' && chance(0.5)) {
      const variant = pick(['junk', 'malformed', 'type', 'null']);
      if (variant === 'junk') Object.assign(r, { payload: JSON.stringify({ [randomText(8)]: randomText() }), headers: { ...headers, 'content-type': 'application/json' }, what: `${tag} junk body` });
      if (variant === 'malformed') Object.assign(r, { payload: pick(MALFORMED_JSON), headers: { ...headers, 'content-type': 'application/json' }, what: `${tag} malformed JSON` });
      if (variant === 'type') Object.assign(r, { payload: '<x/>', headers: { ...headers, 'content-type': pick(WRONG_TYPES) }, what: `${tag} wrong content type` });
      if (variant === 'null') Object.assign(r, { payload: 'null', headers: { ...headers, 'content-type': 'application/json' }, what: `${tag} null body` });
    }
    return r;
  }

  // routes with a JSON body
  const spec = ep.body;
  const url = urlOf(ep, target);
  const jsonType = pick(spec.jsonTypes ?? ['application/json', 'application/json; charset=utf-8']);
  const wrap = (b: unknown) => (spec.wrap ? { [spec.wrap]: b } : b);
  const send = (what: string, payload: string, contentType = jsonType): FuzzRequest => ({ what: `${tag} ${what}`, method: ep.method, url, headers: { ...headers, 'content-type': contentType }, payload });
  const categories = ['field', 'field', 'field', 'field', 'malformed', 'type', 'oversized', 'nonObject', 'empty', 'deep', 'nul'];
  if (spec.required.length) categories.push('missing', 'missing');
  if (spec.strict) categories.push('extra');
  if (spec.wrap) categories.push('unwrapped');
  if (anything) categories.push('valid', 'valid');
  const cat = pick(categories);
  const base = spec.base();
  switch (cat) {
    case 'field': {
      const f = pick(Object.keys(spec.fields));
      const bad = badValue(spec.fields[f] as Kind);
      return send(`${f}=${JSON.stringify(bad)?.slice(0, 60)}`, JSON.stringify(wrap({ ...base, [f]: bad })));
    }
    case 'missing': {
      const f = pick(spec.required);
      const b = { ...base };
      delete b[f];
      return send(`missing ${f}`, JSON.stringify(wrap(b)));
    }
    case 'extra':
      return send('unknown attribute', JSON.stringify(wrap({ ...base, [`x${randomText(6)}`]: randomText() })));
    case 'unwrapped':
      return send('not wrapped', JSON.stringify(chance(0.5) ? base : { [spec.wrap as string]: base, extraTopLevel: 1 }));
    case 'malformed':
      return send('malformed JSON', pick(MALFORMED_JSON));
    case 'type':
      return send('wrong content type', pick([JSON.stringify(wrap(base)), '<xml/>', 'a=b&c=d']), pick(WRONG_TYPES));
    case 'oversized': {
      const pad = 'p'.repeat(MAX_BODY + 10 + Math.floor(rng() * 4096));
      return send('oversized', JSON.stringify(wrap({ ...base, padding: pad })));
    }
    case 'nonObject':
      return send('not an object', pick(['[]', '[{}]', JSON.stringify([wrap(base)]), 'null', '42', '"string"', 'true', JSON.stringify(randomText())]));
    case 'empty':
      return send('empty body', '');
    case 'deep': {
      const f = pick(Object.keys(spec.fields));
      const text = JSON.stringify(wrap({ ...base, [f]: '__DEEP__' })).replace('"__DEEP__"', deepJson(120 + Math.floor(rng() * 2000)));
      return send(`deeply nested ${f}`, text);
    }
    case 'nul': {
      // text PostgreSQL cannot store: U+0000 or an unpaired surrogate, in a value or an attribute name
      const f = pick(Object.keys(spec.fields));
      const bad = pick(['a\u0000b', 'x\ud800y', '\udfff']);
      return send(`unstorable text in ${f}`, JSON.stringify(wrap({ ...base, [f]: chance(0.5) ? bad : { [`k${bad}`]: 'v' } })));
    }
    default:
      return send('schema-valid body on a refusing target', JSON.stringify(wrap(base)));
  }
}

// ------------------------------------------------------------------ the run

let vnfm: TestVnfm;
let fake: FakeDriver;

async function fingerprint(): Promise<string> {
  const db = vnfm.store.db;
  const parts = await Promise.all([
    db.selectFrom('vnf_package').select(['id', 'onboarding_state', 'operational_state', 'usage_state', 'user_defined_data', 'checksum']).orderBy('id').execute(),
    db.selectFrom('vnf_instance').select(['id', 'rev', 'instantiation_state', 'vnf_instance_name', 'vim_connection_info', 'metadata']).orderBy('id').execute(),
    db.selectFrom('vim').select(['id', 'name', 'is_default', 'description', 'secret']).orderBy('id').execute(),
    db.selectFrom('op_occ').select(['id', 'operation_state', 'pending']).orderBy('id').execute(),
    db.selectFrom('subscription').select(['id']).orderBy('id').execute(),
    db.selectFrom('outbox').select((e) => e.fn.countAll().as('n')).execute(),
  ]);
  return JSON.stringify(parts);
}

/** Every (method, route) the app serves under the package, VIM and LCM APIs (plus the outbox view), from Fastify's route tree. */
function servedRoutes(): string[] {
  const out: string[] = [];
  const stack: string[] = [];
  for (const line of vnfm.app.printRoutes({ commonPrefix: false }).split('\n')) {
    const m = /^([│ ]*)(?:├── |└── )(.+?) \(([^)]+)\)$/.exec(line);
    if (!m) continue;
    const depth = (m[1] as string).length / 4;
    stack.length = depth;
    const path = `${depth > 0 ? stack[depth - 1] : ''}${m[2] as string}`;
    stack[depth] = path;
    for (const method of (m[3] as string).split(', ')) if (method !== 'HEAD') out.push(`${method} ${path}`);
  }
  return out.filter((r) => /^\S+ \/(vnfpkgm|vnflcm|v1\.0)\//.test(r) || r === 'GET /vnfm/v1/notifications');
}

before(async () => {
  fake = new FakeDriver();
  vnfm = await testVnfm({
    plugins: [(ctx) => ctx.engine?.drivers.register(fake)],
    config: { maxBodyBytes: MAX_BODY, maxPackageBytes: MAX_PACKAGE, runner: { pollMs: 50, leaseMs: 2000, concurrency: 4, workerId: 'fuzz' } },
  });
  const pkg = await onboard(vnfm.app, csarOf(join(ROOT, 'samples/vm-basic')), () => vnfm.ctx.packages.idle());
  ids.pkgOnboarded = pkg.id as string;
  ids.vnfdId = pkg.vnfdId as string;
  const c = await vnfm.app.inject({ method: 'POST', url: '/vnfpkgm/v1/vnf_packages', payload: {} });
  ids.pkgCreated = c.json().id;
  const H = { version: '2.0.0' };
  ids.instNot = (await vnfm.app.inject({ method: 'POST', url: '/vnflcm/v2/vnf_instances', headers: H, payload: { vnfdId: ids.vnfdId } })).json().id;
  ids.instInst = (await vnfm.app.inject({ method: 'POST', url: '/vnflcm/v2/vnf_instances', headers: H, payload: { vnfdId: ids.vnfdId } })).json().id;
  const inst = await vnfm.app.inject({ method: 'POST', url: `/vnflcm/v2/vnf_instances/${ids.instInst}/instantiate`, headers: H, payload: { flavourId: 'simple', vimConnectionInfo: { vim1: FAKE_VIM } } });
  assert.equal(inst.statusCode, 202, inst.body);
  ids.opCompleted = String(inst.headers.location).split('/').pop() as string;
  await vnfm.ctx.engine?.runner.idle();
  const vim = await vnfm.app.inject({
    method: 'POST',
    url: '/v1.0/vims',
    payload: { vim: { name: 'fuzz-vim', type: 'openstack', auth_url: 'http://127.0.0.1:5000/v3', auth_cred: { username: 'u', password: 'fuzz-vim-pw' }, vim_project: { name: 'p' } } },
  });
  ids.vimId = vim.json().vim.id;
  for (const [id, v] of [['sub-fuzz-v1', 'v1'], ['sub-fuzz-v2', 'v2']] as const) {
    await vnfm.store.db.insertInto('subscription').values({ id, api_version: v, callback_uri: 'http://127.0.0.1:9/cb', filter: JSON.stringify(null), verbosity: 'FULL', auth_types: '[]', auth_secret: null, dedupe_key: id }).execute();
  }
  ids.subV1 = 'sub-fuzz-v1';
  ids.subV2 = 'sub-fuzz-v2';
  const state = await vnfm.app.inject({ method: 'GET', url: `/vnflcm/v2/vnf_instances/${ids.instInst}`, headers: H });
  assert.equal(state.json().instantiationState, 'INSTANTIATED');
});
after(async () => {
  await vnfm?.close();
});

describe(`malformed requests (seed ${SEED})`, () => {
  it('the fuzzed endpoints cover every route of the package, VIM and LCM APIs', () => {
    const served = servedRoutes();
    const fuzzed = new Set(ENDPOINTS.map((e) => `${e.method} ${e.route}`));
    const missing = served.filter((r) => !fuzzed.has(r));
    assert.deepEqual(missing, [], 'routes without fuzzing');
    assert.ok(served.length >= 50, `served routes: ${served.length}`);
  });

  it(`${RANDOM_REQUESTS}+ generated requests are all 4xx ProblemDetails and change nothing`, async () => {
    const requests: FuzzRequest[] = [];
    // every endpoint several times, then random ones
    for (const ep of ENDPOINTS) for (let i = 0; i < 3; i++) requests.push(generate(ep));
    while (requests.length < RANDOM_REQUESTS + ENDPOINTS.length * 3) requests.push(generate(pick(ENDPOINTS)));
    // plus the methods no route has
    for (const [method, url] of [
      ['PUT', '/vnflcm/v2/vnf_instances'],
      ['DELETE', '/vnflcm/v1/vnf_lcm_op_occs'],
      ['PATCH', '/v1.0/vims'],
      ['DELETE', '/vnfpkgm/v1/vnf_packages'],
      ['PUT', `/vnflcm/v1/vnf_instances/${ids.instNot}/heal`],
      ['GET', `/vnflcm/v2/vnf_instances/${ids.instInst}/scale`],
      ['POST', `/vnfpkgm/v1/vnf_packages/${ids.pkgOnboarded}`],
      ['GET', '/vnflcm/v2/vnf_lcm_op_occs/x/cancel'],
      ['POST', '/vnflcm/v3/vnf_instances'],
      ['GET', '/vnfpkgm/v1/no_such_collection'],
    ] as const) {
      requests.push({ what: `${method} ${url} (no such route/method)`, method, url, headers: { version: '2.0.0', 'content-type': 'application/json' }, ...(method === 'GET' ? {} : { payload: '{}' }) });
    }

    // schema-valid requests the services must refuse (semantic errors), fixed so every run has them
    const json = (method: FuzzRequest['method'], url: string, body: unknown, what: string): FuzzRequest => ({ what, method, url, headers: { version: '2.0.0', 'content-type': 'application/json' }, payload: JSON.stringify(body) });
    for (const v of ['v1', 'v2'] as const) {
      const p = `/vnflcm/${v}`;
      requests.push(
        json('POST', `${p}/vnf_instances`, { vnfdId: randomUUID() }, `${v} create with an unknown vnfdId`),
        json('PATCH', `${p}/vnf_instances/${ids.instNot}`, { vnfInstanceName: 'n', vnfdId: randomUUID() }, `${v} modify to an unknown vnfdId (op occ must roll back)`),
        json('PATCH', `${p}/vnf_instances/${ids.instNot}`, { vimConnectionInfo: vci(v, { vimId: randomUUID() }) }, `${v} modify naming an unregistered VIM`),
        json('POST', `${p}/vnf_instances/${ids.instNot}/instantiate`, { flavourId: 'no-such-flavour', vimConnectionInfo: vci(v, FAKE_VIM) }, `${v} instantiate an unknown flavour`),
        json('POST', `${p}/vnf_instances/${ids.instNot}/instantiate`, { flavourId: 'simple', instantiationLevelId: 'nope', vimConnectionInfo: vci(v, FAKE_VIM) }, `${v} instantiate an unknown level`),
        json('POST', `${p}/vnf_instances/${ids.instNot}/instantiate`, { flavourId: 'simple', vimConnectionInfo: vci(v, { vimId: randomUUID() }) }, `${v} instantiate on an unregistered VIM`),
        json('POST', `${p}/vnf_instances/${ids.instInst}/scale`, { type: 'SCALE_OUT', aspectId: 'no-such-aspect' }, `${v} scale an unknown aspect`),
        json('POST', `${p}/vnf_instances/${ids.instInst}/scale`, { type: 'SCALE_IN', aspectId: 'VDU1_scale', numberOfSteps: 50 }, `${v} scale in below the minimum`),
        json('POST', `${p}/vnf_instances/${ids.instInst}/heal`, { vnfcInstanceId: ['no-such-vnfc'] }, `${v} heal an unknown VNFC`),
        json('POST', `${p}/subscriptions`, { callbackUri: 'http://127.0.0.1:9/unreachable' }, `${v} subscribe with an unreachable callback`),
      );
    }
    requests.push(
      json('PATCH', `/vnflcm/v1/vnf_instances/${ids.instNot}`, { vnfPkgId: randomUUID() }, 'v1 modify to an unknown package'),
      json('POST', '/v1.0/vims', { vim: { name: 'vm', type: 'vmware', auth_url: 'http://127.0.0.1/', auth_cred: { username: 'u', password: 'p' }, vim_project: { name: 'p' } } }, 'unsupported VIM type'),
      json('POST', '/v1.0/vims', { vim: { name: 'fuzz-vim', type: 'openstack', auth_url: 'http://127.0.0.1/', auth_cred: { username: 'u', password: 'p' }, vim_project: { name: 'p' } } }, 'duplicate VIM name'),
      json('PATCH', `/vnfpkgm/v1/vnf_packages/${ids.pkgCreated}`, { operationalState: 'DISABLED' }, 'disable a package that is not onboarded'),
      json('PATCH', `/vnfpkgm/v1/vnf_packages/${ids.pkgOnboarded}`, { operationalState: 'ENABLED' }, 'enable an enabled package'),
    );

    let before = await fingerprint();
    const statuses = new Map<number, number>();
    const failures: string[] = [];
    for (const [i, r] of requests.entries()) {
      const res = await vnfm.app.inject({ method: r.method, url: r.url, headers: r.headers, ...(r.payload !== undefined ? { payload: r.payload } : {}) });
      statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
      const where = `#${i} (seed ${SEED}) ${r.what} -> ${res.statusCode} ${res.body.slice(0, 300)}`;
      const problems: string[] = [];
      if (res.statusCode < 400 || res.statusCode > 499) problems.push('status is not 4xx');
      if (!/^application\/problem\+json/.test(String(res.headers['content-type']))) problems.push(`content-type ${String(res.headers['content-type'])}`);
      let body: Record<string, unknown> = {};
      try {
        body = res.json();
      } catch {
        problems.push('body is not JSON');
      }
      if (body.status !== res.statusCode) problems.push('ProblemDetails.status differs from the HTTP status');
      if (typeof body.title !== 'string' || body.title === '') problems.push('no title');
      if (typeof body.detail !== 'string' || body.detail === '') problems.push('no detail');
      if (typeof body.detail === 'string' && /fuzz-vim-pw|fake-secret-pw/.test(res.body)) problems.push('a secret is echoed');
      await vnfm.ctx.engine?.runner.idle();
      const now = await fingerprint();
      if (now !== before) {
        problems.push('the database changed');
        before = now;
      }
      if (problems.length) failures.push(`${where}\n    ${problems.join('; ')}`);
    }
    if (failures.length) assert.fail(`${failures.length} of ${requests.length} fuzzed requests misbehaved:\n${failures.slice(0, 30).join('\n')}`);
    assert.ok(requests.length >= 400, `${requests.length} requests`);
    // a healthy mix of answers, not one catch-all
    for (const s of [400, 404, 409, 413, 415, 422]) assert.ok((statuses.get(s) ?? 0) > 0, `no ${s} answers: ${JSON.stringify([...statuses])}`);
    const errors = vnfm.logs.filter((l) => /"level":50/.test(l));
    assert.deepEqual(errors, [], 'no request was logged as an unhandled error');
  });

  it('the service still works normally afterwards', async () => {
    const H = { version: '2.0.0' };
    const c = await vnfm.app.inject({ method: 'POST', url: '/vnflcm/v2/vnf_instances', headers: H, payload: { vnfdId: ids.vnfdId, vnfInstanceName: '名前🙂' } });
    assert.equal(c.statusCode, 201, c.body);
    assert.equal(c.json().vnfInstanceName, '名前🙂');
    const d = await vnfm.app.inject({ method: 'DELETE', url: `/vnflcm/v2/vnf_instances/${c.json().id as string}`, headers: H });
    assert.equal(d.statusCode, 204);
  });
});
