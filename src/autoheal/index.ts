/** Auto-heal: fault intake, ledger, durable heal batches, storm guard. */
export { createAutoheal, type AutohealDeps, type AutohealHandle, type AutohealPluginOptions } from './autoheal-plugin.ts';
export { HealBatcher, isAutohealEnabled, type HealBatcherDeps } from './batcher.ts';
export { FaultLedger, BATCH_STATUSES, NOTIFICATION_STATUSES, batchOrigin, healCausePrefix, type BatchStatus, type NotificationStatus, type HealBatchRecord, type FaultNotificationRecord, type BatchTarget, type GroupItem, type GroupOutcome } from './ledger.ts';
export { IntakeQueue, validateNotification, type IntakeRequest, type IntakeResult, type IntakeQueueDeps } from './intake-queue.ts';
export { InstanceFactsCache, type InstanceFacts, type ServerFacts } from './instance-facts.ts';
export { AUTOHEAL_MIGRATION, AUTOHEAL_INTAKE_MIGRATION } from '../store/migrations/autoheal.ts';
export { resolveAutohealOptions, evaluateStormGuard, policyFor, maxUnhealthyCount, DEFAULT_AUTOHEAL_OPTIONS, SUPPRESS_REASONS, type AutohealOptions, type StormVerdict } from './storm-guard.ts';
