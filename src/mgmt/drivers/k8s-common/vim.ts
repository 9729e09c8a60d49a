/**
 * The cluster's Kubernetes VIM, as both cluster drivers register and delete it (spec §2.0.4):
 * registered idempotently with the admin token the driver holds (and the cluster CA), one
 * vimConnectionInfo entry per VIM with a stable id; deleted by the id the driver recorded and by
 * name (only a VIM created for this instance).
 */
import { createHash } from 'node:crypto';
import { vnfmError } from '../../../errors.ts';
import type { MgmtContext } from '../../mgmt-driver.ts';
import type { ClusterInstanceState } from './run-context.ts';
import { KUBERNETES_VIM_KIND } from '../../../infra/kubernetes/vim-type.ts';

/** A stable UUID-shaped vimConnectionInfo id for (driver, instance, VIM): a replayed registration adds no second entry. */
export function entryIdFor(driver: string, instanceId: string, vimId: string): string {
  const h = createHash('sha256').update(`${driver}|${instanceId}|${vimId}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-${((Number.parseInt(h[16] as string, 16) & 0x3) | 0x8).toString(16)}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** `instantiatedVnfInfo.metadata.k8sCluster` as the previous operation left it. */
export function previousClusterMeta<T>(ctx: Pick<MgmtContext, 'instance' | 'previousInstance'>): T | undefined {
  const m = (ctx.previousInstance ?? ctx.instance).instantiatedVnfInfo?.metadata?.k8sCluster ?? ctx.instance.instantiatedVnfInfo?.metadata?.k8sCluster;
  return m && typeof m === 'object' ? (m as T) : undefined;
}

/** Registers the cluster's VIM with the sealed admin credentials; returns its id and the entry id to use. */
export async function registerClusterVim(ctx: MgmtContext, driver: string, st: ClusterInstanceState, o: { name: string; description: string }): Promise<{ vimId: string; entryId: string; created: boolean }> {
  if (!st.adminToken || !st.apiUrl) throw vnfmError('VNFM_ERR_MGMT_FAILED', `${driver}: no admin credentials to register the VIM with`);
  const r = await ctx.vims.register({
    name: o.name,
    type: KUBERNETES_VIM_KIND,
    description: o.description,
    auth_url: st.apiUrl,
    auth_cred: { bearer_token: st.adminToken, ...(st.caCert ? { ssl_ca_cert: st.caCert } : {}), ...(st.insecure ? { cert_verify: false } : {}) },
    vim_project: { name: 'default' },
    extra: { ...(st.tlsServerName ? { tls_server_name: st.tlsServerName } : {}) },
  });
  // one entry per VIM: the instance's own entry for it when there is one, else an id derived from the VIM's
  const existing = Object.entries(ctx.instance.vimConnectionInfo ?? {}).find(([, v]) => v.vimId === r.id)?.[0];
  return { vimId: r.id, entryId: existing ?? entryIdFor(driver, ctx.instance.id, r.id), created: r.created };
}

/** Deletes the cluster's VIM (the recorded id, and one of that name created for this instance); returns the deleted ids. */
export async function deleteClusterVims(ctx: MgmtContext, name: string, recordedId: string | undefined): Promise<string[]> {
  const ids = new Set<string>();
  if (recordedId) ids.add(recordedId);
  const found = await ctx.vims.findByName(name);
  if (found && (found.createdFor === undefined || found.createdFor === ctx.instance.id)) ids.add(found.id);
  for (const id of ids) await ctx.vims.delete(id);
  return [...ids];
}
