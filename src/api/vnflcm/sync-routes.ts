/**
 * `POST /vnflcm/v2/vnf_instances/{id}/sync` (extension, v2 facade only): re-observes the VNF in
 * its VIM now and stores what changed, instead of waiting for the periodic drift sync. Answers
 * 200 with `{changed, settled, affectedVnfcs, affectedVirtualStorages, affectedVirtualLinks,
 * vnfLcmOpOccId?, detail?}`; 404 for an unknown instance; 409 when it is not instantiated or an
 * LCM operation is active on it.
 */
import type { FastifyInstance } from 'fastify';
import type { DriftSync } from '../../lcm/sync.ts';
import type { ApiVersion } from './converters.ts';
import { IdParams } from './schemas.ts';

/** Builds the registrar of the sync route (called by routes.ts when sync is wired; it adds nothing to the v1 facade). */
export function syncRoutes(sync: DriftSync) {
  return async (r: FastifyInstance, v: ApiVersion): Promise<void> => {
    if (v !== 'v2') return;
    r.post('/vnf_instances/:id/sync', { schema: { params: IdParams, tags: [`vnflcm ${v}`] } }, async (req) => {
      const { id } = req.params as { id: string };
      return sync.syncInstance(id);
    });
  };
}
