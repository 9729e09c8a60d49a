/**
 * Minimal OpenAPI v3 documents. kubectl's default (`--validate=strict`) asks `/openapi/v3` whether the
 * server supports server-side field validation: it looks for a PATCH operation tagged with the
 * object's group/version/kind that declares the `fieldValidation` query parameter. Answering that
 * lets kubectl skip client-side schema validation (which would need the full `/openapi/v2`
 * schema). The PATCH request bodies deliberately do not list strategic merge patch, so
 * `kubectl apply` computes its patches from its built-in types instead of needing full schemas.
 */
import { groupVersions, RESOURCES } from './resource-registry.ts';
import type { Loose } from './types.ts';

const HASH = 'SIMULATED0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000';

function gvPath(group: string, version: string): string {
  return group ? `apis/${group}/${version}` : `api/${version}`;
}

/** `/openapi/v3` discovery of the per-group-version documents. */
export function openApiV3Root(): Loose {
  const paths: Record<string, Loose> = {};
  for (const { group, version } of groupVersions()) {
    const p = gvPath(group, version);
    paths[p] = { serverRelativeURL: `/openapi/v3/${p}?hash=${HASH}` };
  }
  return { paths };
}

const QUERY = (name: string, description: string): Loose => ({ name, in: 'query', description, schema: { type: 'string', uniqueItems: true } });

/** `/openapi/v3/<api|apis/group>/<version>` document, undefined when unknown. */
export function openApiV3Doc(pathAfterV3: string): Loose | undefined {
  const gv = groupVersions().find(({ group, version }) => gvPath(group, version) === pathAfterV3);
  if (!gv) return undefined;
  const paths: Record<string, Loose> = {};
  for (const r of RESOURCES.filter((x) => x.group === gv.group && x.version === gv.version)) {
    const base = `/${gvPath(r.group, r.version)}${r.namespaced ? '/namespaces/{namespace}' : ''}/${r.plural}/{name}`;
    paths[base] = {
      patch: {
        description: `partially update the specified ${r.kind}`,
        operationId: `patch${r.kind}`,
        parameters: [
          QUERY('dryRun', 'When present, indicates that modifications should not be persisted.'),
          QUERY('fieldManager', 'fieldManager is a name associated with the actor or entity that is making these changes.'),
          QUERY('fieldValidation', 'fieldValidation instructs the server on how to handle objects in the request containing unknown or duplicate fields.'),
          { name: 'force', in: 'query', description: 'Force is going to "force" Apply requests.', schema: { type: 'boolean', uniqueItems: true } },
        ],
        requestBody: {
          content: {
            'application/json-patch+json': { schema: { type: 'object' } },
            'application/merge-patch+json': { schema: { type: 'object' } },
            'application/apply-patch+yaml': { schema: { type: 'object' } },
          },
          required: true,
        },
        responses: { '200': { description: 'OK' }, '201': { description: 'Created' }, '401': { description: 'Unauthorized' } },
        'x-kubernetes-action': 'patch',
        'x-kubernetes-group-version-kind': { group: r.group, version: r.version, kind: r.kind },
      },
    };
  }
  return { openapi: '3.0.0', info: { title: 'Kubernetes (simulated)', version: 'v1.32.0' }, paths, components: { schemas: {} } };
}
