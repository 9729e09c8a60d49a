/** Built-in `cnf-nodeport-lb` management driver (Tacker's `mgmt-drivers-cnf-nodeport`). */
export { createNodePortLbDriver, NODEPORT_LB_ARTIFACT_NAME, NODEPORT_LB_DRIVER_NAME, type NodePortKubeApi, type NodePortLbDriverDeps, type NodePortLbMeta, NodePortLbMgmtDriver } from './driver.ts';
export { effectiveLbAccess, type LbAccess, type NodePortLbParams, ParamError, parseNodePortLbParams } from './params.ts';
