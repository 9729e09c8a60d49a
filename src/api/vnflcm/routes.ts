/**
 * The VNF LCM API facade of one version (v1 = SOL 2.6.1, v2 = SOL 3.3.1). Both facades call the
 * same services; only request normalisation and response shapes (converters.ts) differ.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { vnfmError } from '../../errors.ts';
import type { CreateInstanceInput, ModifyInstanceInput } from '../../lcm/instance-service.ts';
import { getOpOcc } from '../../lcm/op-occ-repo.ts';
import type { VimConnection } from '../../vims/vim-registry.ts';
import type { AppContext } from '../../core/services.ts';
import { projectOf, requestScope, tenantWhere } from '../auth/index.ts';
import { sendSqlList } from '../sol/sql-list.ts';
import { lcmRoutes } from './lcm-routes.ts';
import { registerSubscriptionRoutes } from './subscription-routes.ts';
import { syncRoutes } from './sync-routes.ts';
import { instanceListSpec, opOccListSpec } from './list-specs.ts';
import { v1Connections } from './commands.ts';
import { type ApiVersion, INSTANCE_DEFAULT_EXCLUDED, OPOCC_DEFAULT_EXCLUDED, instanceToApi, opOccToApi } from './converters.ts';
import { IdParams, createVnfRequestSchema, modifyVnfRequestSchema } from './schemas.ts';
import { checkVnfmProperties } from '../../model/vnfm-properties.ts';

/** The API version each facade answers with in its `Version` header. */
export const API_VERSIONS: Record<ApiVersion, string> = { v1: '1.3.0', v2: '2.0.0' };

const INSTANCE_ATTRS = ['id', 'vnfInstanceName', 'vnfInstanceDescription', 'vnfdId', 'vnfProvider', 'vnfProductName', 'vnfSoftwareVersion', 'vnfdVersion', 'vnfPkgId', 'vnfConfigurableProperties', 'vimConnectionInfo', 'instantiationState', 'instantiatedVnfInfo', 'metadata', 'extensions', '_links'];
const OPOCC_ATTRS = ['id', 'operationState', 'stateEnteredTime', 'startTime', 'vnfInstanceId', 'grantId', 'operation', 'isAutomaticInvocation', 'operationParams', 'isCancelPending', 'cancelMode', 'error', 'resourceChanges', 'changedInfo', 'changedExtConnectivity', 'vnfmRetry', 'vnfmProgress', '_links'];

/** Checks the SOL `Version` header of v2 requests: missing 400, unsupported 406. */
export function checkVersionHeader(req: FastifyRequest): void {
  const raw = req.headers.version;
  const value = Array.isArray(raw) ? raw[0] : raw;
  if (value === undefined || value === '') throw vnfmError('VNFM_ERR_API_VERSION_MISSING', 'Version header is missing; send Version: 2.0.0');
  const base = value.split('-impl:')[0]?.trim() ?? '';
  if (!/^\d+\.\d+\.\d+$/.test(base)) throw vnfmError('VNFM_ERR_API_BAD_REQUEST', `Version header '${value}' is malformed`);
  if (base !== '2.0.0') throw vnfmError('VNFM_ERR_API_VERSION_UNSUPPORTED', `API version ${value} is not supported; supported: 2.0.0`);
}

/** Registers the facade of version `v` under `/vnflcm/{v}`. */
export async function registerVnflcmRoutes(app: FastifyInstance, ctx: AppContext, v: ApiVersion): Promise<void> {
  await app.register(
    async (r) => {
      r.addHook('onRequest', async (req, reply) => {
        reply.header('version', API_VERSIONS[v]);
        if (v === 'v2' && !req.url.endsWith('/api_versions')) checkVersionHeader(req);
      });

      r.get('/api_versions', async () => ({ uriPrefix: `/vnflcm/${v}`, apiVersions: [{ version: API_VERSIONS[v], isDeprecated: false }] }));

      r.post('/vnf_instances', { schema: { body: createVnfRequestSchema(v), tags: [`vnflcm ${v}`] } }, async (req, reply) => {
        const b = req.body as Record<string, unknown>;
        const input: CreateInstanceInput = {
          vnfdId: b.vnfdId as string,
          ...(b.vnfInstanceName !== undefined ? { vnfInstanceName: b.vnfInstanceName as string } : {}),
          ...(b.vnfInstanceDescription !== undefined ? { vnfInstanceDescription: b.vnfInstanceDescription as string } : {}),
          ...(b.metadata !== undefined ? { metadata: b.metadata as Record<string, unknown> } : {}),
          ...(b.vimConnectionInfo !== undefined ? { vimConnectionInfo: b.vimConnectionInfo as Record<string, Partial<VimConnection>> } : {}),
          ...(projectOf(req) !== undefined ? { project: projectOf(req) } : {}),
          // vnfdId and vimId name only packages and VIMs of the caller's project or shared ones
          packageScope: requestScope(req, ctx.config.auth.tenancy.packages),
          vimScope: requestScope(req, ctx.config.auth.tenancy.vims),
        };
        const inst = await ctx.instances.create(input, v);
        reply.code(201).header('location', `${ctx.config.publicUrl}/vnflcm/${v}/vnf_instances/${inst.id}`);
        return instanceToApi(inst, v, ctx.config.publicUrl);
      });

      r.get('/vnf_instances', { schema: { tags: [`vnflcm ${v}`] } }, async (req, reply) => {
        return sendSqlList(req, reply, ctx.store.db, { ...instanceListSpec(v, ctx.config.publicUrl), where: tenantWhere(req) }, { defaultExcluded: INSTANCE_DEFAULT_EXCLUDED, pageSize: ctx.config.pageSize, baseUrl: `${ctx.config.publicUrl}/vnflcm/${v}/vnf_instances`, knownAttributes: INSTANCE_ATTRS });
      });

      r.get('/vnf_instances/:id', { schema: { params: IdParams, tags: [`vnflcm ${v}`] } }, async (req) => {
        const { id } = req.params as { id: string };
        return instanceToApi(await ctx.instances.get(id), v, ctx.config.publicUrl);
      });

      r.patch('/vnf_instances/:id', { schema: { params: IdParams, body: modifyVnfRequestSchema(v), tags: [`vnflcm ${v}`] } }, async (req, reply) => {
        const { id } = req.params as { id: string };
        const b = (req.body ?? {}) as Record<string, unknown>;
        if (Object.keys(b).length === 0) throw vnfmError('VNFM_ERR_API_BAD_REQUEST', 'the modification request is empty');
        checkVnfmProperties(b.vnfConfigurableProperties);
        const patch: ModifyInstanceInput = {};
        for (const k of ['vnfInstanceName', 'vnfInstanceDescription', 'vnfdId', 'vnfConfigurableProperties', 'metadata', 'extensions'] as const) if (k in b) (patch as Record<string, unknown>)[k] = b[k];
        if (v === 'v1') {
          if (b.vnfPkgId !== undefined) {
            const pkg = await ctx.packages.get(b.vnfPkgId as string, requestScope(req, ctx.config.auth.tenancy.packages));
            if (!pkg.vnfdId) throw vnfmError('VNFM_ERR_PKG_STATE', `VNF package ${pkg.id} is not onboarded`);
            patch.vnfdId = pkg.vnfdId;
          }
          const conns: Record<string, Partial<VimConnection> | null> = { ...(v1Connections(b.vimConnectionInfo as unknown[] | undefined) ?? {}) };
          for (const delId of (b.vimConnectionInfoDeleteIds as string[] | undefined) ?? []) conns[delId] = null;
          if (Object.keys(conns).length) patch.vimConnectionInfo = conns;
        } else if (b.vimConnectionInfo !== undefined) {
          patch.vimConnectionInfo = b.vimConnectionInfo as Record<string, Partial<VimConnection> | null>;
        }
        const lcm = ctx.engine?.lcm;
        if (!lcm) throw vnfmError('VNFM_ERR_INTERNAL', 'the LCM engine is not running');
        const op = await lcm.modifyInfo(id, patch, v, { packages: requestScope(req, ctx.config.auth.tenancy.packages), vims: requestScope(req, ctx.config.auth.tenancy.vims) });
        reply.code(202).header('location', `${ctx.config.publicUrl}/vnflcm/${v}/vnf_lcm_op_occs/${op.id}`);
        return reply.send();
      });

      r.delete('/vnf_instances/:id', { schema: { params: IdParams, tags: [`vnflcm ${v}`] } }, async (req, reply) => {
        const { id } = req.params as { id: string };
        await ctx.instances.delete(id);
        return reply.code(204).send();
      });

      r.get('/vnf_lcm_op_occs', { schema: { tags: [`vnflcm ${v}`] } }, async (req, reply) => {
        return sendSqlList(req, reply, ctx.store.db, { ...opOccListSpec(v, ctx.config.publicUrl), where: tenantWhere(req) }, { defaultExcluded: OPOCC_DEFAULT_EXCLUDED, pageSize: ctx.config.pageSize, baseUrl: `${ctx.config.publicUrl}/vnflcm/${v}/vnf_lcm_op_occs`, knownAttributes: OPOCC_ATTRS });
      });

      r.get('/vnf_lcm_op_occs/:id', { schema: { params: IdParams, tags: [`vnflcm ${v}`] } }, async (req) => {
        const { id } = req.params as { id: string };
        return opOccToApi(await getOpOcc(ctx.store.db, id), v, ctx.config.publicUrl);
      });

      // routes of the wired modules: LCM operations (engine), sync (v2 only), subscriptions
      if (ctx.engine) await lcmRoutes(ctx, ctx.engine.lcm)(r, v);
      if (ctx.sync) await syncRoutes(ctx.sync)(r, v);
      if (ctx.notifications) await registerSubscriptionRoutes(r, { ...ctx, subscriptions: ctx.notifications.subscriptions }, v);
      for (const extra of ctx.lcmRoutes ?? []) await extra(r, v);
    },
    { prefix: `/vnflcm/${v}` },
  );
  if (v === 'v2') {
    app.get('/vnflcm/api_versions', async (_req: FastifyRequest, reply: FastifyReply) => {
      reply.header('version', '2.0.0');
      return { uriPrefix: '/vnflcm', apiVersions: [{ version: '1.3.0', isDeprecated: false }, { version: '2.0.0', isDeprecated: false }] };
    });
  }
}
