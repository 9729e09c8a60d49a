/** Built-in Server Notifier alarm registration management driver. */
export { createServerNotifierMgmtDriver, ServerNotifierMgmtDriver, SERVER_NOTIFIER_KEYS, VNFC_ALARM_KEY, registrationOf, type ServerNotifierDriverOptions } from './server-notifier-driver.ts';
export { ServerNotifierClient, type AlarmClientOptions, type UnregisterResult } from './alarm-client.ts';
