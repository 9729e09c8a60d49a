/**
 * Simulated Server Notifier (alarm registration + fault notifications) for tests and demos of
 * the VNFM's FaultNotification auto-heal. Independent of the product code: it speaks only HTTP.
 */
export {
  type AlarmJournalEntry,
  type AlarmRequestHold,
  type HeldAlarmRequest,
  type NotificationAuth,
  type NotifierLogger,
  SERVER_NOTIFIER_STATE_NAME,
  type ServerNotifierSim,
  type ServerNotifierSnapshot,
  type ServerNotifierSimOptions,
  type SimAlarm,
  type SimDelivery,
  startServerNotifierSim,
} from './server-notifier-sim.ts';
