/**
 * The masters' HAProxy configuration: the generic parser/editor and the runtime API helpers live
 * in the shared load-balancer module (`src/mgmt/lb/haproxy-config.ts`); re-exported here for the
 * kubeadm driver's modules.
 */
export * from '../../lb/haproxy-config.ts';
