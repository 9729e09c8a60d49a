/**
 * LCCN subscriptions (SOL002/SOL003 "Subscriptions" resource): validation of the request, the
 * callback test, duplicate handling (v1), storage with sealed credentials, and removal together
 * with the notifications still waiting for the subscriber. Which notifications a subscription gets
 * is decided by `matchesSubscription` in notifier.ts when an event is enqueued.
 */
import { createHash, randomUUID } from 'node:crypto';
import { type Kysely, sql } from 'kysely';
import { Ajv, type ValidateFunction } from 'ajv';
import { Type } from 'typebox';
import type { VnfmConfig } from '../config.ts';
import { vnfmError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import { json } from '../store/db.ts';
import type { Database } from '../store/schema.ts';
import type { SecretBox } from '../store/secret-box.ts';
import { CallbackAuthenticator, CallbackError, type NotificationAuthType, type NotificationCredentials, callConsumer } from './auth.ts';
import type { SubscriptionFilter } from './notifier.ts';

/** API version of the facade a subscription was created through (fixes its notification shape). */
export type SubscriptionApiVersion = 'v1' | 'v2';

/** Verbosity of LCM operation occurrence notifications (v2 only; v1 is always FULL). */
export const VERBOSITY = { FULL: 'FULL', SHORT: 'SHORT' } as const;
/** One verbosity value. */
export type Verbosity = (typeof VERBOSITY)[keyof typeof VERBOSITY];

/** A stored subscription, without its credentials. */
export interface SubscriptionRecord {
  id: string;
  apiVersion: SubscriptionApiVersion;
  callbackUri: string;
  filter: SubscriptionFilter | null;
  verbosity: Verbosity;
  /** Authentication types the subscriber accepts (credentials are sealed and never returned). */
  authTypes: NotificationAuthType[];
  createdAt: Date;
}

/** Outcome of {@link SubscriptionService.create}. */
export interface CreateSubscriptionResult {
  subscription: SubscriptionRecord;
  /** False when v1 found an identical subscription (the API answers 303 See Other). */
  created: boolean;
}

const NOTIFICATION_TYPES = ['VnfLcmOperationOccurrenceNotification', 'VnfIdentifierCreationNotification', 'VnfIdentifierDeletionNotification'] as const;
const OPERATION_TYPES_V1 = ['INSTANTIATE', 'SCALE', 'SCALE_TO_LEVEL', 'CHANGE_FLAVOUR', 'TERMINATE', 'HEAL', 'OPERATE', 'CHANGE_EXT_CONN', 'MODIFY_INFO'] as const;
const OPERATION_TYPES_V2 = [...OPERATION_TYPES_V1, 'CREATE_SNAPSHOT', 'REVERT_TO_SNAPSHOT', 'CHANGE_VNFPKG'] as const;
const OPERATION_STATES = ['STARTING', 'PROCESSING', 'COMPLETED', 'FAILED_TEMP', 'FAILED', 'ROLLING_BACK', 'ROLLED_BACK'] as const;

const Str = Type.String({ maxLength: 1024 });
const StrList = Type.Array(Str, { maxItems: 1000 });
const UriStr = Type.String({ minLength: 1, maxLength: 4096 });

/**
 * LccnSubscriptionRequest as JSON Schema, per API version. Used by the route (validation and
 * OpenAPI docs) and by the service itself, so a request is judged the same way from anywhere.
 * Unknown attributes inside `filter` and `authentication` are rejected: a misspelled filter
 * criterion would otherwise silently subscribe to everything.
 */
export function lccnSubscriptionRequestSchema(v: SubscriptionApiVersion) {
  const filter = Type.Object(
    {
      vnfInstanceSubscriptionFilter: Type.Optional(
        Type.Object(
          {
            vnfdIds: Type.Optional(StrList),
            vnfProductsFromProviders: Type.Optional(
              Type.Array(
                Type.Object(
                  {
                    vnfProvider: Str,
                    vnfProducts: Type.Optional(
                      Type.Array(
                        Type.Object(
                          {
                            vnfProductName: Str,
                            versions: Type.Optional(Type.Array(Type.Object({ vnfSoftwareVersion: Str, vnfdVersions: Type.Optional(StrList) }, { additionalProperties: false }))),
                          },
                          { additionalProperties: false },
                        ),
                      ),
                    ),
                  },
                  { additionalProperties: false },
                ),
              ),
            ),
            vnfInstanceIds: Type.Optional(StrList),
            vnfInstanceNames: Type.Optional(StrList),
          },
          { additionalProperties: false },
        ),
      ),
      notificationTypes: Type.Optional(Type.Array(Type.Enum([...NOTIFICATION_TYPES]))),
      operationTypes: Type.Optional(Type.Array(v === 'v2' ? Type.Enum([...OPERATION_TYPES_V2]) : Type.Enum([...OPERATION_TYPES_V1]))),
      operationStates: Type.Optional(Type.Array(Type.Enum([...OPERATION_STATES]))),
    },
    { additionalProperties: false },
  );
  const authentication = Type.Object(
    {
      authType: Type.Array(Type.String({ maxLength: 64 }), { minItems: 1 }),
      paramsBasic: Type.Optional(Type.Object({ userName: Type.Optional(Str), password: Type.Optional(Str) }, { additionalProperties: false })),
      paramsOauth2ClientCredentials: Type.Optional(Type.Object({ clientId: Type.Optional(Str), clientPassword: Type.Optional(Str), tokenEndpoint: Type.Optional(UriStr) }, { additionalProperties: false })),
    },
    { additionalProperties: true },
  );
  return Type.Object(
    {
      callbackUri: UriStr,
      filter: Type.Optional(filter),
      authentication: Type.Optional(authentication),
      ...(v === 'v2' ? { verbosity: Type.Optional(Type.Enum([VERBOSITY.FULL, VERBOSITY.SHORT])) } : {}),
    },
    { additionalProperties: true },
  );
}

const SCHEMAS = { v1: lccnSubscriptionRequestSchema('v1'), v2: lccnSubscriptionRequestSchema('v2') };

/** The request validators (JSON Schema through Ajv, the validator the API's routes use), compiled on first use. */
const validators: Partial<Record<SubscriptionApiVersion, ValidateFunction>> = {};
let ajv: Ajv | undefined;
function validatorOf(v: SubscriptionApiVersion): ValidateFunction {
  ajv ??= new Ajv({ allErrors: true, strict: false });
  validators[v] ??= ajv.compile(SCHEMAS[v]);
  return validators[v];
}

function bad(detail: string): never {
  throw vnfmError('VNFM_ERR_API_BAD_REQUEST', detail);
}

function isHttpUrl(s: string): boolean {
  try {
    const u = new URL(s);
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname !== '';
  } catch {
    return false;
  }
}

/** Sorted-key JSON, so equal filters give equal duplicate keys whatever the attribute order. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o)
      .filter((k) => o[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(o[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v);
}

interface ValidatedRequest {
  callbackUri: string;
  filter: SubscriptionFilter | null;
  verbosity: Verbosity;
  authTypes: NotificationAuthType[];
  credentials: NotificationCredentials | null;
}

/**
 * Checks an LccnSubscriptionRequest and extracts what is stored. Throws VNFM_ERR_API_BAD_REQUEST
 * (400) with a readable detail; the detail never echoes credentials.
 */
export function validateSubscriptionRequest(req: unknown, v: SubscriptionApiVersion): ValidatedRequest {
  if (req === null || typeof req !== 'object' || Array.isArray(req)) bad('the request body must be an LccnSubscriptionRequest object');
  const validate = validatorOf(v);
  if (!validate(req)) {
    const errs = validate.errors ?? [];
    // Prefer the most specific error (enum / required / additionalProperties over anyOf wrappers).
    const e = errs.find((x) => x.keyword === 'additionalProperties') ?? errs.find((x) => x.keyword !== 'anyOf' && x.keyword !== 'boolean') ?? errs[0];
    const where = `body${(e?.instancePath ?? '').replace(/\//g, '.')}`;
    const params = (e?.params ?? {}) as Record<string, unknown>;
    if (e?.keyword === 'required') bad(`${where}: missing required attribute '${String((params.requiredProperties as string[] | undefined)?.[0] ?? params.missingProperty ?? '')}'`);
    if (e?.keyword === 'additionalProperties') bad(`${where}: unknown attribute '${String((params.additionalProperties as string[] | undefined)?.[0] ?? params.additionalProperty ?? '')}'`);
    if (e?.keyword === 'enum') bad(`${where} must be one of: ${(params.allowedValues as unknown[] | undefined)?.join(', ') ?? ''}`);
    bad(`${where} ${e?.message ?? 'is invalid'}`);
  }
  const b = req as { callbackUri: string; filter?: SubscriptionFilter; verbosity?: Verbosity; authentication?: { authType: string[]; paramsBasic?: { userName?: string; password?: string }; paramsOauth2ClientCredentials?: { clientId?: string; clientPassword?: string; tokenEndpoint?: string } } };
  if (!isHttpUrl(b.callbackUri)) bad('body.callbackUri must be an absolute http or https URL');
  const filter = b.filter && Object.keys(b.filter).length > 0 ? b.filter : null;
  const verbosity: Verbosity = v === 'v2' && b.verbosity === 'SHORT' ? 'SHORT' : 'FULL';

  let authTypes: NotificationAuthType[] = [];
  let credentials: NotificationCredentials | null = null;
  const a = b.authentication;
  if (a) {
    const types = [...new Set(a.authType)];
    for (const t of types) {
      if (t === 'TLS_CERT') bad('authType TLS_CERT is not supported; use BASIC or OAUTH2_CLIENT_CREDENTIALS');
      if (t !== 'BASIC' && t !== 'OAUTH2_CLIENT_CREDENTIALS') bad(`body.authentication.authType: unknown value '${t.slice(0, 64)}'; allowed: BASIC, OAUTH2_CLIENT_CREDENTIALS`);
    }
    authTypes = types as NotificationAuthType[];
    credentials = {};
    // A params block for a type that is not listed is ignored (and not stored).
    if (authTypes.includes('BASIC')) {
      const p = a.paramsBasic;
      if (!p) bad('paramsBasic must be specified when authType includes BASIC');
      if (!p.userName || p.password === undefined) bad('paramsBasic needs userName and password');
      credentials.basic = { userName: p.userName, password: p.password };
    }
    if (authTypes.includes('OAUTH2_CLIENT_CREDENTIALS')) {
      const p = a.paramsOauth2ClientCredentials;
      if (!p) bad('paramsOauth2ClientCredentials must be specified when authType includes OAUTH2_CLIENT_CREDENTIALS');
      if (!p.clientId || p.clientPassword === undefined || !p.tokenEndpoint) bad('paramsOauth2ClientCredentials needs clientId, clientPassword and tokenEndpoint');
      if (!isHttpUrl(p.tokenEndpoint)) bad('paramsOauth2ClientCredentials.tokenEndpoint must be an absolute http or https URL');
      credentials.oauth2 = { clientId: p.clientId, clientPassword: p.clientPassword, tokenEndpoint: p.tokenEndpoint };
    }
  }
  return { callbackUri: b.callbackUri, filter, verbosity, authTypes, credentials };
}

type SubscriptionRow = { id: string; api_version: string; callback_uri: string; filter: unknown; verbosity: string; auth_types: unknown; created_at: Date };

/** A subscription row as a record (the SQL list reads rows itself). */
export function subscriptionFromRow(r: SubscriptionRow): SubscriptionRecord {
  return toRecord(r);
}

function toRecord(r: SubscriptionRow): SubscriptionRecord {
  return {
    id: r.id,
    apiVersion: r.api_version === 'v1' ? 'v1' : 'v2',
    callbackUri: r.callback_uri,
    filter: (r.filter ?? null) as SubscriptionFilter | null,
    verbosity: r.verbosity === 'SHORT' ? 'SHORT' : 'FULL',
    authTypes: (Array.isArray(r.auth_types) ? r.auth_types : []) as NotificationAuthType[],
    createdAt: new Date(r.created_at),
  };
}

/** Advisory-lock number of a duplicate key (serializes concurrent identical v1 requests). */
function lockId(key: string): bigint {
  return createHash('sha256').update(`subscription:${key}`).digest().readBigInt64BE(0);
}

const COLUMNS = ['id', 'api_version', 'callback_uri', 'filter', 'verbosity', 'auth_types', 'created_at'] as const;

/**
 * Creates, reads and deletes LCCN subscriptions. Subscriptions belong to the API version they
 * were created through (as in Tacker, where v1 and v2 keep separate tables): each facade lists and
 * addresses only its own, and notifications are shaped for that version.
 */
export class SubscriptionService {
  private readonly auth: CallbackAuthenticator;
  private readonly fetchImpl: typeof fetch | undefined;
  private readonly checkUrl: ((url: string) => Promise<string | undefined>) | undefined;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly box: SecretBox,
    private readonly config: VnfmConfig,
    private readonly log: Logger,
    opts: { fetch?: typeof fetch; checkUrl?: (url: string) => Promise<string | undefined> } = {},
  ) {
    this.fetchImpl = opts.fetch;
    this.checkUrl = opts.checkUrl;
    this.auth = new CallbackAuthenticator({ timeoutMs: config.notifications.timeoutMs, ...(opts.fetch ? { fetch: opts.fetch } : {}) });
  }

  /**
   * Validates the request, tests the callback (GET, expects 204) when configured, and stores the
   * subscription. v1 returns the existing subscription (created false) for an identical request
   * (same callbackUri, filter and verbosity) instead of creating a second one.
   */
  async create(req: unknown, apiVersion: SubscriptionApiVersion, project?: string): Promise<CreateSubscriptionResult> {
    const r = validateSubscriptionRequest(req, apiVersion);
    // Outbound rules (loopback, link-local, metadata, the VNFM itself, configured denials): 422 with the reason.
    if (this.checkUrl) {
      for (const [what, url] of [['callbackUri', r.callbackUri], ['paramsOauth2ClientCredentials.tokenEndpoint', r.credentials?.oauth2?.tokenEndpoint]] as const) {
        if (url === undefined) continue;
        const why = await this.checkUrl(url);
        if (why) throw vnfmError('VNFM_ERR_SUB_CALLBACK', `${what} is refused by the outbound rules: ${why}`);
      }
    }
    // one project never finds (nor learns of) another project's identical subscription
    const dedupeKey = createHash('sha256')
      .update(canonical({ v: apiVersion, callbackUri: r.callbackUri, filter: r.filter, verbosity: r.verbosity, ...(project !== undefined ? { project } : {}) }))
      .digest('hex');
    if (apiVersion === 'v1') {
      const existing = await this.findDuplicate(this.db, dedupeKey);
      if (existing) return { subscription: existing, created: false };
    }
    if (this.config.notifications.testCallback) await this.testCallback(r.callbackUri, r.credentials, apiVersion);

    const id = randomUUID();
    const result = await this.db.transaction().execute(async (tx) => {
      if (apiVersion === 'v1') {
        await sql`select pg_advisory_xact_lock(${lockId(dedupeKey).toString()}::bigint)`.execute(tx);
        const existing = await this.findDuplicate(tx, dedupeKey);
        if (existing) return { subscription: existing, created: false };
      }
      await tx
        .insertInto('subscription')
        .values({
          id,
          api_version: apiVersion,
          callback_uri: r.callbackUri,
          filter: json(r.filter),
          verbosity: r.verbosity,
          auth_types: json(r.authTypes),
          auth_secret: r.credentials ? this.box.seal(r.credentials) : null,
          dedupe_key: dedupeKey,
          project: project ?? null,
        })
        .execute();
      const row = await tx.selectFrom('subscription').select(COLUMNS).where('id', '=', id).executeTakeFirstOrThrow();
      return { subscription: toRecord(row), created: true };
    });
    if (result.created) this.log.info({ subscriptionId: id, apiVersion, authTypes: r.authTypes }, 'subscription created');
    return result;
  }

  private async findDuplicate(db: Kysely<Database>, dedupeKey: string): Promise<SubscriptionRecord | undefined> {
    const row = await db.selectFrom('subscription').select(COLUMNS).where('dedupe_key', '=', dedupeKey).where('api_version', '=', 'v1').orderBy('created_at').executeTakeFirst();
    return row ? toRecord(row) : undefined;
  }

  /** GET on the callback URI with the subscription's authentication; anything but 204 is refused. */
  private async testCallback(uri: string, creds: NotificationCredentials | null, v: SubscriptionApiVersion): Promise<void> {
    const timeoutMs = this.config.notifications.timeoutMs;
    let status: number | undefined;
    let why: string;
    try {
      status = (await callConsumer(this.auth, creds, { method: 'GET', url: uri, headers: { accept: 'application/json', version: v === 'v2' ? '2.0.0' : '1.3.0' }, timeoutMs, ...(this.fetchImpl ? { fetch: this.fetchImpl } : {}) })).status;
      why = `the callback answered HTTP ${status}, expected 204`;
    } catch (e) {
      why = e instanceof CallbackError ? e.message : 'the callback could not be reached';
    }
    if (status === 204) return;
    // The reason is logged for the operator; the client gets a generic one (what the callback or
    // its token endpoint answered, or how a connection failed, would map internal services).
    this.log.info({ apiVersion: v, reason: why }, 'subscription refused: callback test failed');
    const detail = "Can't get from notification callback Uri. (the callback test did not get 204 No Content)";
    // Tacker answers 400 in v1 and 422 in v2 for the same failure.
    throw v === 'v1' ? vnfmError('VNFM_ERR_API_BAD_REQUEST', detail) : vnfmError('VNFM_ERR_SUB_CALLBACK', detail);
  }

  /** Every subscription of the given API version, oldest first. */
  async list(apiVersion: SubscriptionApiVersion): Promise<SubscriptionRecord[]> {
    const rows = await this.db.selectFrom('subscription').select(COLUMNS).where('api_version', '=', apiVersion).orderBy('created_at').orderBy('id').execute();
    return rows.map(toRecord);
  }

  /** One subscription; 404 when it does not exist in this API version. */
  async get(id: string, apiVersion: SubscriptionApiVersion): Promise<SubscriptionRecord> {
    const row = await this.db.selectFrom('subscription').select(COLUMNS).where('id', '=', id).where('api_version', '=', apiVersion).executeTakeFirst();
    if (!row) throw vnfmError('VNFM_ERR_SUB_NOT_FOUND', `LccnSubscription ${id} not found.`);
    return toRecord(row);
  }

  /**
   * Deletes a subscription and the notifications still waiting for it (delivered and dead ones stay
   * as the delivery record). A delivery in flight at that moment finishes but is not retried.
   */
  async delete(id: string, apiVersion: SubscriptionApiVersion): Promise<void> {
    const dropped = await this.db.transaction().execute(async (tx) => {
      const del = await tx.deleteFrom('subscription').where('id', '=', id).where('api_version', '=', apiVersion).executeTakeFirst();
      if (Number(del.numDeletedRows) === 0) throw vnfmError('VNFM_ERR_SUB_NOT_FOUND', `LccnSubscription ${id} not found.`);
      const out = await tx.deleteFrom('outbox').where('subscription_id', '=', id).where('status', '=', 'PENDING').executeTakeFirst();
      return Number(out.numDeletedRows);
    });
    this.log.info({ subscriptionId: id, droppedNotifications: dropped }, 'subscription deleted');
  }
}
