/**
 * LCM operation endpoints (instantiate, scale, heal, terminate) and op occ task resources (retry,
 * rollback, fail, and v1 cancel). 202 answers have an empty body and a Location header pointing at
 * the op occ, as `openstack vnflcm` expects.
 */
import { requestScope } from '../auth/index.ts';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { Type } from 'typebox';
import type { LcmService } from '../../lcm/lcm-service.ts';
import type { AppContext } from '../../core/services.ts';
import { healCommand, instantiateCommand, scaleCommand, terminateCommand } from './commands.ts';
import { type ApiVersion, opOccToApi } from './converters.ts';
import { IdParams, VimConnectionInfoSchema } from './schemas.ts';

const Obj = Type.Object({}, { additionalProperties: true });

const InstantiateSchema = (v: ApiVersion) =>
  Type.Object(
    {
      flavourId: Type.String({ minLength: 1, maxLength: 255 }),
      instantiationLevelId: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
      extVirtualLinks: Type.Optional(Type.Array(Obj)),
      extManagedVirtualLinks: Type.Optional(Type.Array(Obj)),
      localizationLanguage: Type.Optional(Type.String()),
      additionalParams: Type.Optional(Obj),
      extensions: Type.Optional(Obj),
      vnfConfigurableProperties: Type.Optional(Obj),
      vimConnectionInfo: Type.Optional(v === 'v2' ? Type.Record(Type.String(), VimConnectionInfoSchema) : Type.Array(VimConnectionInfoSchema)),
    },
    { additionalProperties: true },
  );
const TerminateSchema = Type.Object(
  {
    terminationType: Type.Optional(Type.Union([Type.Literal('FORCEFUL'), Type.Literal('GRACEFUL')])),
    gracefulTerminationTimeout: Type.Optional(Type.Integer({ minimum: 0 })),
    additionalParams: Type.Optional(Obj),
  },
  { additionalProperties: true },
);
const ScaleSchema = Type.Object(
  {
    type: Type.Union([Type.Literal('SCALE_OUT'), Type.Literal('SCALE_IN')]),
    aspectId: Type.String({ minLength: 1, maxLength: 255 }),
    numberOfSteps: Type.Optional(Type.Integer({ minimum: 1 })),
    additionalParams: Type.Optional(Obj),
  },
  { additionalProperties: true },
);
const HealSchema = Type.Object(
  {
    vnfcInstanceId: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 255 }), { maxItems: 10000 })),
    cause: Type.Optional(Type.String({ maxLength: 255 })),
    additionalParams: Type.Optional(Obj),
    healScript: Type.Optional(Type.String({ maxLength: 255 })),
  },
  { additionalProperties: true },
);
const CancelSchema = Type.Optional(Type.Object({ cancelMode: Type.Optional(Type.Union([Type.Literal('GRACEFUL'), Type.Literal('FORCEFUL')])) }, { additionalProperties: true }));

/** Builds the registrar of the LCM operation routes of one facade (called by routes.ts when the engine is wired). */
export function lcmRoutes(ctx: AppContext, lcm: LcmService) {
  return async (r: FastifyInstance, v: ApiVersion): Promise<void> => {
    const accepted = (reply: FastifyReply, opId: string) => reply.code(202).header('location', `${ctx.config.publicUrl}/vnflcm/${v}/vnf_lcm_op_occs/${opId}`).send();
    const id = (req: { params: unknown }) => (req.params as { id: string }).id;
    const body = (req: { body: unknown }) => (req.body ?? {}) as Record<string, unknown>;
    const tags = [`vnflcm ${v}`];
    // task resources take no body (cancel: an optional one); many NFVOs still send Content-Type: application/json with it empty
    const taskConfig = { emptyBody: true };
    const opts = (b: Record<string, unknown>) => ({ apiVersion: v, params: b });
    r.post('/vnf_instances/:id/instantiate', { schema: { params: IdParams, body: InstantiateSchema(v), tags } }, async (req, reply) => {
      const b = body(req);
      const { command, vimConnectionInfo } = instantiateCommand(b, v);
      return accepted(reply, (await lcm.instantiate(id(req), command, { ...opts(b), vimScope: requestScope(req, ctx.config.auth.tenancy.vims), ...(vimConnectionInfo ? { vimConnectionInfo } : {}) })).id);
    });
    r.post('/vnf_instances/:id/terminate', { schema: { params: IdParams, body: TerminateSchema, tags } }, async (req, reply) => accepted(reply, (await lcm.terminate(id(req), terminateCommand(body(req)), opts(body(req)))).id));
    r.post('/vnf_instances/:id/scale', { schema: { params: IdParams, body: ScaleSchema, tags } }, async (req, reply) => {
      const command = scaleCommand(body(req));
      return accepted(reply, (await lcm.scale(id(req), command, opts({ ...body(req), numberOfSteps: command.numberOfSteps }))).id);
    });
    r.post('/vnf_instances/:id/heal', { schema: { params: IdParams, body: HealSchema, tags } }, async (req, reply) => {
      const command = healCommand(body(req), v, await ctx.instances.get(id(req)));
      return accepted(reply, (await lcm.heal(id(req), command, opts(body(req)))).id);
    });
    r.post('/vnf_lcm_op_occs/:id/retry', { schema: { params: IdParams, tags }, config: taskConfig }, async (req, reply) => {
      await lcm.retry(id(req));
      return reply.code(202).send();
    });
    r.post('/vnf_lcm_op_occs/:id/rollback', { schema: { params: IdParams, tags }, config: taskConfig }, async (req, reply) => {
      await lcm.rollback(id(req));
      return reply.code(202).send();
    });
    r.post('/vnf_lcm_op_occs/:id/fail', { schema: { params: IdParams, tags }, config: taskConfig }, async (req) => opOccToApi(await lcm.fail(id(req)), v, ctx.config.publicUrl));
    if (v === 'v1') {
      r.post('/vnf_lcm_op_occs/:id/cancel', { schema: { params: IdParams, body: CancelSchema, tags }, config: taskConfig }, async (req, reply) => {
        await lcm.cancel(id(req), (body(req).cancelMode as string) ?? 'GRACEFUL');
        return reply.code(202).send();
      });
    }
  };
}
