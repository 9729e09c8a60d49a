/**
 * Tacker's legacy VIM registry API (`/v1.0/vims`), used by `openstack vim register/list/show/
 * set/delete`. Credentials are accepted on write and always masked on read.
 */
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { VimInput } from '../../vims/vim-registry.ts';
import { vimToApi } from '../../vims/vim-registry.ts';
import type { AppContext } from '../context.ts';

const Obj = Type.Record(Type.String(), Type.Unknown());
const VimBody = (required: boolean) =>
  Type.Object(
    {
      vim: Type.Object(
        {
          name: required ? Type.String({ minLength: 1, maxLength: 255 }) : Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
          type: required ? Type.String({ minLength: 1 }) : Type.Optional(Type.String({ minLength: 1 })),
          description: Type.Optional(Type.String({ maxLength: 1024 })),
          tenant_id: Type.Optional(Type.String()),
          is_default: Type.Optional(Type.Boolean()),
          auth_url: required ? Type.String({ minLength: 1, maxLength: 2048 }) : Type.Optional(Type.String({ minLength: 1, maxLength: 2048 })),
          auth_cred: required ? Obj : Type.Optional(Obj),
          vim_project: Type.Optional(Obj),
          extra: Type.Optional(Obj),
        },
        { additionalProperties: true },
      ),
    },
    { additionalProperties: false },
  );
const IdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 255 }) });

/** Registers `/v1.0/vims`. */
export async function registerVimRoutes(app: FastifyInstance, ctx: AppContext): Promise<void> {
  await app.register(
    async (r) => {
      r.post('/vims', { schema: { body: VimBody(true), tags: ['vims'] } }, async (req, reply) => {
        const v = await ctx.vims.register((req.body as { vim: VimInput }).vim);
        reply.code(201);
        return { vim: vimToApi(v) };
      });
      r.get('/vims', { schema: { tags: ['vims'] } }, async () => ({ vims: (await ctx.vims.list()).map(vimToApi) }));
      r.get('/vims/:id', { schema: { params: IdParams, tags: ['vims'] } }, async (req) => ({ vim: vimToApi(await ctx.vims.get((req.params as { id: string }).id)) }));
      r.put('/vims/:id', { schema: { params: IdParams, body: VimBody(false), tags: ['vims'] } }, async (req) => ({
        vim: vimToApi(await ctx.vims.update((req.params as { id: string }).id, (req.body as { vim: VimInput }).vim)),
      }));
      r.delete('/vims/:id', { schema: { params: IdParams, tags: ['vims'] } }, async (req, reply) => {
        await ctx.vims.delete((req.params as { id: string }).id);
        return reply.code(204).send();
      });
    },
    { prefix: '/v1.0' },
  );
}
