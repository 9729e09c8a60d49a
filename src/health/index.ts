/** The VNFC health model: watchers' reports mapped to VNFCs, durable conditions, sustained faults. */
export { createHealth, type HealthDeps, type HealthHandle, type HealthPluginOptions } from './health-plugin.ts';
export { HealthMonitor, VIM_UNREACHABLE, unhealthyForOverrideMs, type HealthMonitorDeps, type HealthOptions, type SustainedFault, type SustainedFaultCallback } from './health-monitor.ts';
export { HealthStore, NOT_OBSERVED, OPERATION_IN_PROGRESS, VNFC_HEALTH_CHANGED, changeEvent, healthFromRow, rowId, type HealthChange, type HealthObservation, type UnreportedFault, type VnfcHealthRecord, type VnfcRef } from './health-store.ts';
export { connectionKey, loadWatched, toWatchTarget, vnfcsOf, type LoadedTarget, type Watched } from './health-targets.ts';
export { VNFC_HEALTH_MIGRATION } from '../store/migrations/health.ts';
