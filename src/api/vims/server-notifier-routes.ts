/**
 * Server Notifier registrations (`/vnfm/v1/server-notifiers`): the endpoints a VIM's token may be
 * sent to by the Server Notifier management driver. An admin registers them; instantiate requests
 * name one by `additionalParams.ServerNotifierUri` (Tacker's) or `ServerNotifierId`.
 */
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { AppContext } from '../../core/services.ts';
import { serverNotifierToApi } from '../../vims/server-notifiers.ts';

const Body = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 255 }),
    uri: Type.String({ minLength: 1, maxLength: 2048 }),
    vimId: Type.String({ minLength: 1, maxLength: 255 }),
    sendToken: Type.Optional(Type.Boolean()),
    description: Type.Optional(Type.String({ maxLength: 1024 })),
  },
  { additionalProperties: false },
);
const IdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 255 }) });

/** Registers the Server Notifier registration routes. */
export async function registerServerNotifierRoutes(app: FastifyInstance, ctx: AppContext): Promise<void> {
  const reg = ctx.serverNotifiers;
  app.post('/vnfm/v1/server-notifiers', { schema: { body: Body, tags: ['server-notifiers'] } }, async (req, reply) => {
    const n = await reg.register(req.body as { name: string; uri: string; vimId: string; sendToken?: boolean; description?: string });
    reply.code(201).header('location', `/vnfm/v1/server-notifiers/${n.id}`);
    return serverNotifierToApi(n);
  });
  app.get('/vnfm/v1/server-notifiers', { schema: { tags: ['server-notifiers'] } }, async () => (await reg.list()).map(serverNotifierToApi));
  app.get('/vnfm/v1/server-notifiers/:id', { schema: { params: IdParams, tags: ['server-notifiers'] } }, async (req) => serverNotifierToApi(await reg.get((req.params as { id: string }).id)));
  app.delete('/vnfm/v1/server-notifiers/:id', { schema: { params: IdParams, tags: ['server-notifiers'] } }, async (req, reply) => {
    await reg.delete((req.params as { id: string }).id);
    reply.code(204);
  });
}
