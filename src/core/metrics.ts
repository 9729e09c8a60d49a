/**
 * Prometheus metrics of the VNFM, one registry per app instance (so several apps in one test
 * process do not collide). Counters are initialised at zero for every known label value so that
 * dashboards see a series before the first event. Served at `/metrics` by src/api/app.ts.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** Every metric the VNFM exposes at `/metrics`. */
export class VnfmMetrics {
  readonly registry = new Registry();
  readonly httpRequests = new Counter({ name: 'vnfm_http_requests_total', help: 'HTTP requests by route and status class', labelNames: ['method', 'route', 'status'] as const, registers: [this.registry] });
  readonly httpRejectedBusy = new Counter({ name: 'vnfm_http_rejected_busy_total', help: 'API requests answered 503 at once because api.maxInFlightRequests were being served', registers: [this.registry] });
  readonly lcmOps = new Counter({ name: 'vnfm_lcm_operations_total', help: 'LCM operations finished, by operation and final state', labelNames: ['operation', 'result'] as const, registers: [this.registry] });
  readonly lcmOpDuration = new Histogram({ name: 'vnfm_lcm_operation_duration_seconds', help: 'Accepted to final state', labelNames: ['operation'] as const, buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300], registers: [this.registry] });
  readonly lcmInflight = new Gauge({ name: 'vnfm_lcm_op_inflight', help: 'Operations being executed by this process', registers: [this.registry] });
  readonly stepRetries = new Counter({ name: 'vnfm_lcm_step_retries_total', help: 'Automatic retries of an LCM step after a retryable failure, by operation and step', labelNames: ['operation', 'step'] as const, registers: [this.registry] });
  readonly leaseLosses = new Counter({ name: 'vnfm_lcm_lease_lost_total', help: 'Operations this process stopped because its lease was lost or could not be renewed', registers: [this.registry] });
  readonly leaseRenewal = new Histogram({ name: 'vnfm_lcm_lease_renewal_seconds', help: 'Time from when a lease heartbeat was due to when its renewal was confirmed by the database (timer lateness + queueing + query); near leaseMs means the lease is at risk', buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30], registers: [this.registry] });
  readonly heals = new Counter({ name: 'vnfm_heal_total', help: 'Heal operations by trigger and result', labelNames: ['trigger', 'result'] as const, registers: [this.registry] });
  readonly notifications = new Counter({ name: 'vnfm_notifications_delivery_total', help: 'Notification delivery attempts by result', labelNames: ['result'] as const, registers: [this.registry] });
  readonly notificationsPending = new Gauge({ name: 'vnfm_notifications_pending', help: 'Notifications waiting in the outbox', registers: [this.registry] });
  readonly notificationsDead = new Gauge({ name: 'vnfm_notifications_dead', help: 'Notifications given up after notifications.retryForMs and not redelivered (GET /vnfm/v1/notifications?state=dead)', registers: [this.registry] });
  readonly faultNotifications = new Counter({ name: 'vnfm_fault_notifications_total', help: 'Fault notifications received, by result', labelNames: ['result'] as const, registers: [this.registry] });
  readonly healBatches = new Counter({ name: 'vnfm_autoheal_batches_total', help: 'Auto-heal batches by outcome', labelNames: ['result'] as const, registers: [this.registry] });
  readonly autohealSuppressed = new Counter({ name: 'vnfm_autoheal_suppressed_total', help: 'Auto-heals suppressed, by reason', labelNames: ['reason'] as const, registers: [this.registry] });
  readonly healthWatchRequests = new Counter({ name: 'vnfm_health_watch_requests_total', help: 'Requests the VNFC health watchers sent to VIMs, by VIM type', labelNames: ['vim_type'] as const, registers: [this.registry] });
  readonly vnfcHealth = new Gauge({ name: 'vnfm_vnfc_health', help: 'VNFCs of instantiated VNFs by health condition (docs/health.md)', labelNames: ['condition'] as const, registers: [this.registry] });
  readonly healthDetection = new Histogram({ name: 'vnfm_health_detection_seconds', help: 'From when a watcher observed a VNFC condition change to when the health model applied it', buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300], registers: [this.registry] });
  readonly packages = new Counter({ name: 'vnfm_package_onboarding_total', help: 'Package onboardings by result', labelNames: ['result'] as const, registers: [this.registry] });

  constructor(opts: { defaultMetrics?: boolean; wasmMemoryBytes?: () => number } = {}) {
    if (opts.defaultMetrics) collectDefaultMetrics({ register: this.registry, prefix: 'vnfm_process_' });
    const wasm = opts.wasmMemoryBytes;
    if (wasm) {
      // the embedded database's linear memory (reserved and grown, never shrunk), part of RSS and of nodejs_external_memory
      new Gauge({
        name: 'vnfm_db_wasm_memory_bytes',
        help: 'Size of the embedded database (PGlite) WebAssembly memory',
        registers: [this.registry],
        collect() {
          this.set(wasm());
        },
      });
    }
    for (const op of ['INSTANTIATE', 'SCALE', 'HEAL', 'TERMINATE', 'MODIFY_INFO']) {
      for (const r of ['COMPLETED', 'FAILED_TEMP', 'FAILED', 'ROLLED_BACK']) this.lcmOps.inc({ operation: op, result: r }, 0);
    }
    for (const op of ['INSTANTIATE', 'SCALE', 'HEAL', 'TERMINATE', 'MODIFY_INFO']) {
      for (const step of ['grant', 'mgmt-start', 'infra', 'mgmt-end', 'finalize']) this.stepRetries.inc({ operation: op, step }, 0);
    }
    this.leaseLosses.inc(0);
    this.httpRejectedBusy.inc(0);
    for (const t of ['manual', 'auto']) for (const r of ['COMPLETED', 'FAILED_TEMP']) this.heals.inc({ trigger: t, result: r }, 0);
    for (const r of ['delivered', 'failed', 'dead', 'redelivered']) this.notifications.inc({ result: r }, 0);
    for (const r of ['accepted', 'ignored', 'rejected']) this.faultNotifications.inc({ result: r }, 0);
    for (const r of ['healed', 'suppressed', 'failed', 'waiting']) this.healBatches.inc({ result: r }, 0);
    for (const r of ['max_unhealthy', 'frequency', 'disabled']) this.autohealSuppressed.inc({ reason: r }, 0);
    for (const r of ['ONBOARDED', 'ERROR']) this.packages.inc({ result: r }, 0);
    for (const c of ['healthy', 'degraded', 'faulty', 'unknown']) this.vnfcHealth.set({ condition: c }, 0);
  }
}
