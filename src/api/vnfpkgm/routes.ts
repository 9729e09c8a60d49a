/**
 * VNF package management (`/vnfpkgm/v1`, SOL005 as Tacker has it) and the v2 onboarded-package
 * lookup by vnfdId. Uploads are raw ZIP bodies (application/zip) or a multipart form with one file.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { zipSync } from 'fflate';
import { sql } from 'kysely';
import { Type } from 'typebox';
import { VnfmError, vnfmError } from '../../errors.ts';
import { packageInfoOf } from '../../packages/package-info.ts';
import { type PackageRecord, packageFromRow } from '../../packages/package-service.ts';
import type { AppContext } from '../../core/services.ts';
import { type SqlListSpec, sendSqlList } from '../sol/sql-list.ts';
import { ownerProject, requestScope, scopeWhere } from '../auth/index.ts';

/** VnfPkgInfo body. */
export function packageToApi(p: PackageRecord, publicUrl: string): Record<string, unknown> {
  const self = `${publicUrl}/vnfpkgm/v1/vnf_packages/${p.id}`;
  const body: Record<string, unknown> = { id: p.id };
  if (p.vnfdId) Object.assign(body, { vnfdId: p.vnfdId, vnfProvider: p.vnfProvider, vnfProductName: p.vnfProductName, vnfSoftwareVersion: p.vnfSoftwareVersion, vnfdVersion: p.vnfdVersion });
  if (p.checksum) body.checksum = p.checksum;
  // computed at onboarding; derived from the VNFD for a package onboarded before that was stored
  const info = p.packageInfo ?? (p.vnfd ? packageInfoOf(p.vnfd, p.createdAt) : null);
  body.softwareImages = info?.softwareImages ?? [];
  body.additionalArtifacts = info?.additionalArtifacts ?? [];
  body.onboardingState = p.onboardingState;
  body.operationalState = p.operationalState;
  body.usageState = p.usageState;
  body.userDefinedData = p.userDefinedData;
  if (p.onboardingState === 'ERROR' && p.onboardingError) body.onboardingFailureDetails = { title: 'Onboarding failed', status: 422, detail: p.onboardingError };
  body._links = { self: { href: self }, ...(p.vnfdId ? { vnfd: { href: `${self}/vnfd` } } : {}), packageContent: { href: `${self}/package_content` } };
  return body;
}

const PKG_LIST_COLUMNS = ['id', 'onboarding_state', 'operational_state', 'usage_state', 'vnfd_id', 'vnf_provider', 'vnf_product_name', 'vnf_software_version', 'vnfd_version', 'checksum', 'user_defined_data', 'package_info', 'onboarding_error', 'created_at'];

/**
 * `/vnfpkgm/v1/vnf_packages` listed in SQL (src/api/sol/sql-list.ts), oldest first. The parsed
 * VNFD and the CSAR content are never read for a list.
 */
export function packageListSpec(publicUrl: string): SqlListSpec {
  return {
    collection: 'vnfpkgm/v1/vnf_packages',
    table: 'vnf_package',
    orderColumn: 'created_at',
    orderDir: 'asc',
    columns: PKG_LIST_COLUMNS,
    attrs: {
      id: { column: 'id', type: 'text' },
      vnfdId: { column: 'vnfd_id', type: 'text' },
      onboardingState: { column: 'onboarding_state', type: 'text' },
      operationalState: { column: 'operational_state', type: 'text' },
      usageState: { column: 'usage_state', type: 'text' },
      vnfProvider: { column: 'vnf_provider', type: 'text' },
      vnfProductName: { column: 'vnf_product_name', type: 'text' },
      vnfSoftwareVersion: { column: 'vnf_software_version', type: 'text' },
      vnfdVersion: { column: 'vnfd_version', type: 'text' },
    },
    // the VNFD-derived attributes are shown only when the package has a vnfdId (the in-memory
    // re-check of every row keeps the column conditions exact)
    where: [],
    // stored as shown: nested filters decided in SQL (src/api/sol/json-filter.ts)
    jsonAttrs: { checksum: { expr: sql.ref('checksum') }, userDefinedData: { expr: sql.ref('user_defined_data') } },
    presence: { checksum: sql<boolean>`checksum is not null and jsonb_typeof(checksum) <> 'null'`, onboardingFailureDetails: sql<boolean>`onboarding_state = 'ERROR' and onboarding_error is not null` },
    // vnfd is never read by lists (a large column)
    toApi: (r) =>
      packageToApi(
        { ...packageFromRow(r), vnfd: null },
        publicUrl,
      ),
  };
}

/** Extracts the first file of a multipart/form-data body. */
export function firstMultipartFile(body: Buffer, contentType: string): Buffer {
  const m = /boundary=("?)([^";]+)\1/i.exec(contentType);
  if (!m) throw vnfmError('VNFM_ERR_API_BAD_REQUEST', 'multipart body without boundary');
  const boundary = Buffer.from(`--${m[2]}`);
  const start = body.indexOf(boundary);
  if (start < 0) throw vnfmError('VNFM_ERR_API_BAD_REQUEST', 'multipart body is malformed');
  const headerEnd = body.indexOf('\r\n\r\n', start);
  if (headerEnd < 0) throw vnfmError('VNFM_ERR_API_BAD_REQUEST', 'multipart body is malformed');
  const next = body.indexOf(boundary, headerEnd + 4);
  if (next < 0) throw vnfmError('VNFM_ERR_API_BAD_REQUEST', 'multipart body is not terminated');
  return body.subarray(headerEnd + 4, next - 2);
}

/**
 * Who an upload counts against for packages.maxConcurrentOnboardingsPerCaller: the principal's
 * project (its users share the share), else the principal; without authentication (or for the
 * `none` principal) the client address (behind a reverse proxy: the proxy's address, so one
 * share for every caller behind it).
 */
export function onboardingCaller(req: FastifyRequest): string {
  const p = req.principal;
  if (!p || p.via === 'none') return `address:${req.ip}`;
  return p.project !== undefined ? `project:${p.project}` : `principal:${p.via}:${p.id}`;
}

const PKG_ATTRS = ['id', 'vnfdId', 'vnfProvider', 'vnfProductName', 'vnfSoftwareVersion', 'vnfdVersion', 'checksum', 'softwareImages', 'additionalArtifacts', 'onboardingState', 'operationalState', 'usageState', 'userDefinedData', 'onboardingFailureDetails', '_links'];
const IdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 255 }) });

/** Registers the package routes. */
export async function registerVnfpkgmRoutes(app: FastifyInstance, ctx: AppContext): Promise<void> {
  const sendVnfd = async (id: string, req: FastifyRequest, reply: FastifyReply) => {
    const p = await ctx.packages.get(id);
    if (p.onboardingState !== 'ONBOARDED' || !p.vnfd) throw vnfmError('VNFM_ERR_PKG_STATE', `VNF package ${id} is not onboarded (onboardingState ${p.onboardingState})`);
    const files = await ctx.packages.files(id);
    const accept = String(req.headers.accept ?? '');
    const entry = (p.vnfd as { entryDefinitions?: string }).entryDefinitions;
    const defs = [...files.keys()].filter((f) => f.startsWith('Definitions/') || f.startsWith('TOSCA-Metadata/'));
    if (accept.includes('text/plain') && !accept.includes('application/zip')) {
      const yamlDefs = defs.filter((f) => f.startsWith('Definitions/'));
      if (yamlDefs.length !== 1 || !entry) throw vnfmError('VNFM_ERR_API_NOT_ACCEPTABLE', 'the VNFD consists of several files; ask for application/zip');
      return reply.type('text/plain').send(files.get(entry));
    }
    const zip = zipSync(Object.fromEntries(defs.map((f) => [f, new Uint8Array(files.get(f) as Buffer)])));
    return reply.type('application/zip').send(Buffer.from(zip));
  };
  const sendContent = async (id: string, reply: FastifyReply) => reply.type('application/zip').send(await ctx.packages.content(id));

  await app.register(
    async (r) => {
      r.post('/vnf_packages', { schema: { body: Type.Optional(Type.Object({ userDefinedData: Type.Optional(Type.Record(Type.String(), Type.Unknown())) }, { additionalProperties: false })), tags: ['vnfpkgm'] } }, async (req, reply) => {
        const b = (req.body ?? {}) as { userDefinedData?: Record<string, unknown> };
        // the caller's project owns it (auth.tenancy.packages; shared: no project)
        const p = await ctx.packages.create(b.userDefinedData ?? {}, ownerProject(req.principal, ctx.config.auth.tenancy.packages));
        reply.code(201).header('location', `${ctx.config.publicUrl}/vnfpkgm/v1/vnf_packages/${p.id}`);
        return packageToApi(p, ctx.config.publicUrl);
      });
      r.get('/vnf_packages', { schema: { tags: ['vnfpkgm'] } }, async (req, reply) => {
        return sendSqlList(req, reply, ctx.store.db, { ...packageListSpec(ctx.config.publicUrl), where: scopeWhere(requestScope(req, ctx.config.auth.tenancy.packages)) }, { defaultExcluded: ['softwareImages', 'additionalArtifacts', 'userDefinedData', 'checksum', 'onboardingFailureDetails'], pageSize: ctx.config.pageSize, baseUrl: `${ctx.config.publicUrl}/vnfpkgm/v1/vnf_packages`, knownAttributes: PKG_ATTRS });
      });
      r.get('/vnf_packages/:id', { schema: { params: IdParams, tags: ['vnfpkgm'] } }, async (req) => packageToApi(await ctx.packages.get((req.params as { id: string }).id), ctx.config.publicUrl));
      r.patch(
        '/vnf_packages/:id',
        {
          schema: {
            params: IdParams,
            body: Type.Object({ operationalState: Type.Optional(Type.Union([Type.Literal('ENABLED'), Type.Literal('DISABLED')])), userDefinedData: Type.Optional(Type.Record(Type.String(), Type.Unknown())) }, { additionalProperties: false, minProperties: 1 }),
            tags: ['vnfpkgm'],
          },
        },
        async (req) => ctx.packages.modify((req.params as { id: string }).id, req.body as never),
      );
      r.delete('/vnf_packages/:id', { schema: { params: IdParams, tags: ['vnfpkgm'] } }, async (req, reply) => {
        await ctx.packages.delete((req.params as { id: string }).id);
        return reply.code(204).send();
      });
      // Beyond packages.maxConcurrentOnboardings: 503 + Retry-After; beyond the caller's
      // packages.maxConcurrentOnboardingsPerCaller: 429 + Retry-After. Checked before the body is
      // read (onRequest) and again, atomically, when the upload is stored.
      const busy = (reply: FastifyReply, e: Error): Error => {
        reply.header('retry-after', String(ctx.packages.limits.busyRetryAfterSeconds));
        return e;
      };
      r.put(
        '/vnf_packages/:id/package_content',
        {
          schema: { params: IdParams, tags: ['vnfpkgm'] },
          onRequest: async (req, reply) => {
            const refused = ctx.packages.admissionError(onboardingCaller(req));
            if (refused) throw busy(reply, refused);
          },
        },
        async (req, reply) => {
          const ct = String(req.headers['content-type'] ?? '');
          if (!Buffer.isBuffer(req.body)) throw vnfmError('VNFM_ERR_API_UNSUPPORTED_MEDIA_TYPE', 'package content must be sent as application/zip (or multipart/form-data with one file)');
          const zip = ct.startsWith('multipart/form-data') ? firstMultipartFile(req.body, ct) : req.body;
          try {
            await ctx.packages.upload((req.params as { id: string }).id, zip, onboardingCaller(req));
          } catch (e) {
            if (e instanceof VnfmError && (e.code === 'VNFM_ERR_PKG_BUSY' || e.code === 'VNFM_ERR_PKG_CALLER_BUSY')) throw busy(reply, e);
            throw e;
          }
          return reply.code(202).send();
        },
      );
      r.get('/vnf_packages/:id/package_content', { schema: { params: IdParams, tags: ['vnfpkgm'] } }, async (req, reply) => sendContent((req.params as { id: string }).id, reply));
      r.get('/vnf_packages/:id/vnfd', { schema: { params: IdParams, tags: ['vnfpkgm'] } }, async (req, reply) => sendVnfd((req.params as { id: string }).id, req, reply));
      r.get('/onboarded_vnf_packages/:id', { schema: { params: IdParams, tags: ['vnfpkgm'] } }, async (req) => packageToApi(await ctx.packages.getOnboardedByVnfdId((req.params as { id: string }).id), ctx.config.publicUrl));
      r.get('/onboarded_vnf_packages/:id/vnfd', { schema: { params: IdParams, tags: ['vnfpkgm'] } }, async (req, reply) => sendVnfd((await ctx.packages.getOnboardedByVnfdId((req.params as { id: string }).id)).id, req, reply));
      r.get('/onboarded_vnf_packages/:id/package_content', { schema: { params: IdParams, tags: ['vnfpkgm'] } }, async (req, reply) => sendContent((await ctx.packages.getOnboardedByVnfdId((req.params as { id: string }).id)).id, reply));
    },
    { prefix: '/vnfpkgm/v1' },
  );
  await app.register(
    async (r) => {
      r.get('/onboarded_vnf_packages/:id', { schema: { params: IdParams, tags: ['vnfpkgm'] } }, async (req, reply) => {
        reply.header('version', '2.1.0');
        return packageToApi(await ctx.packages.getOnboardedByVnfdId((req.params as { id: string }).id), ctx.config.publicUrl);
      });
      r.get('/onboarded_vnf_packages/:id/vnfd', { schema: { params: IdParams, tags: ['vnfpkgm'] } }, async (req, reply) => sendVnfd((await ctx.packages.getOnboardedByVnfdId((req.params as { id: string }).id)).id, req, reply));
      r.get('/onboarded_vnf_packages/:id/package_content', { schema: { params: IdParams, tags: ['vnfpkgm'] } }, async (req, reply) => sendContent((await ctx.packages.getOnboardedByVnfdId((req.params as { id: string }).id)).id, reply));
    },
    { prefix: '/vnfpkgm/v2' },
  );
}
