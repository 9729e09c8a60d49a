/**
 * The external load-balancer reconciler (spec §3.3), shared by the drivers that publish on an
 * HAProxy LB VM: `cnf-nodeport-lb` (a CNF's NodePort Services) and `k8s-kubespray` (the cluster's
 * API servers and its nodes).
 *
 * Model: the LB's configuration file is owned as marked sections, one per **owner** — one CNF
 * instance (`lbOwner('cnf', id)`) or one cluster (`lbOwner('cluster', id)`). A driver states what
 * its owner publishes (a list of {@link LbFrontend}: a name, a bind port, backend servers) and
 * calls {@link reconcileOwner}; the section is rewritten as a whole, other owners' sections and the
 * operator's base are never touched. Rendering is deterministic (same inputs, same bytes, same
 * hash).
 *
 * ```ts
 * // lbOwner, nodePortFrontends, apiServerFrontend, reconcileOwner, removeOwner: this module's exports
 * const session = await connectSsh({ host: lbIp, username, password }, { hostKey });
 * const release = await ctx.lock(`lb:${lbIp}`);           // serialise with other instances' drivers
 * try {
 *   const { frontends, unpublished } = nodePortFrontends({ instanceId, services, nodes });
 *   const r = await reconcileOwner(session, { owner: lbOwner('cnf', instanceId), frontends }, { lastAppliedHash });
 *   // r.action: 'unchanged' | 'runtime' | 'reload' | 'start'; r.hash: keep it for the next drift check; r.drift
 * } finally { await release(); }
 * // cluster driver: reconcileOwner(session, { owner: lbOwner('cluster', id), frontends: [apiServerFrontend({ masters }), ...] })
 * // terminate: await removeOwner(session, lbOwner('cnf', instanceId));
 * // the cluster's nodes changed (worker healed/added/removed): every CNF section's node-port backends follow
 * await reconcileNodeMembers(session, nodes);          // runtime API when only members change
 * // drift check (e.g. a periodic sync): readLbState(session) -> fileDrift, owners[o].drift
 * ```
 *
 * What was applied is recorded on the LB next to the file (`<cfg>.healvnfm.json`: file hash and
 * each owner's section hash); a file or section that differs from its record is drift, reported
 * (`LbApplyResult.drift`, `LbState.fileDrift` / `owners[o].drift`) and overwritten by the next
 * apply of that owner.
 *
 * Stale sections: the owner of a section is named in its markers (`cluster-<instance id>`,
 * `cnf-<instance id>`). With `LbHostOptions.ownerIsStale` (the engine answers it from its database:
 * the instance is unknown, or NOT_INSTANTIATED with no operation in progress), a stale section in
 * the way of the owner being applied is removed in the same validated write and reported
 * (`LbApplyResult.removedStale`, `onStaleOwnerRemoved`); other clashes refuse, naming each owner
 * and its instance.
 *
 * Errors (VnfmError, terminal: the op goes FAILED_TEMP and a retry re-runs the apply):
 * - `VNFM_ERR_MGMT_REFUSED`: invalid names/ports, or a frontend name / bind port another owner or
 *   the base already uses (nothing written);
 * - `VNFM_ERR_MGMT_COMMAND`: `haproxy -c` rejected the new file (the message names haproxy's
 *   output; the live file is untouched), or a remote command failed;
 * - `VNFM_ERR_MGMT_FAILED`: the live file has broken markers, or after the reload a desired port
 *   does not listen / a removed one still does.
 * SSH failures surface as the executor's errors (VNFM_ERR_SSH_*).
 */
export {
  apiServerFrontend,
  checkOwnerConfig,
  composeLbConfig,
  conflicts,
  conflictingOwners,
  DEFAULT_CHECK,
  defaultBase,
  type LbFrontend,
  type LbNode,
  lbOwner,
  type LbOwnerConfig,
  type LbServer,
  type LbService,
  type LbServicePort,
  membershipOnly,
  nodePortFrontends,
  nodePortServers,
  ownerInstanceId,
  parseLbConfig,
  parseOwnerSection,
  type ParsedLbConfig,
  renderOwnerSection,
  type ServerChanges,
  sha256,
  shapeOf,
  shortId,
  type Unpublished,
  withNodeMembers,
} from './desired.ts';
export { type LbApplyResult, type LbHostOptions, type LbState, readLbState, reconcileNodeMembers, reconcileOwner, removeOwner } from './reconciler.ts';
export * as haproxyConfig from './haproxy-config.ts';
