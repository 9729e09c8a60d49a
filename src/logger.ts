/**
 * pino logger with secret redaction. Every path that may carry a credential (VIM access info,
 * subscription auth, SSH passwords, tokens in headers) is censored here once, so no call site has
 * to remember it.
 */
import { pino, type Logger } from 'pino';

/** Paths censored in every log line. */
export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers["x-auth-token"]',
  'req.headers["x-subject-token"]',
  'headers.authorization',
  'headers["x-auth-token"]',
  '*.password',
  '*.*.password',
  '*.*.*.password',
  '*.bearer_token',
  '*.*.bearer_token',
  '*.*.*.bearer_token',
  '*.accessInfo',
  '*.*.accessInfo',
  '*.clientPassword',
  '*.*.clientPassword',
  '*.*.*.clientPassword',
  '*.token',
  '*.secret',
  '*.ssh_password',
  '*.*.ssh_password',
  '*.clientSecret',
  '*.*.clientSecret',
  '*.client_secret',
  '*.access_token',
  // credential-named values (the rule of src/model/sealed-params.ts for the usual spellings)
  ...['api_key', 'apiKey', 'apikey', 'access_key', 'secret_key', 'private_key', 'ssh_key', 'auth_token', 'authToken', 'passphrase', 'kubeconfig', 'cookie', 'credentials'].flatMap((n) => [`*.${n}`, `*.*.${n}`]),
  'req.headers.cookie',
];

/** Creates the process logger. `destination` lets tests capture lines. */
export function createLogger(level: string, destination?: NodeJS.WritableStream): Logger {
  return pino(
    {
      level,
      base: undefined,
      redact: { paths: REDACT_PATHS, censor: '***' },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination as pino.DestinationStream | undefined,
  );
}

/** Name (the `logger` field) of the audit log's lines. */
export const AUDIT_LOGGER = 'vnfm.audit';

/** One audit record: who did what to which resource, and how it ended. Never carries request bodies or secrets. */
export interface AuditRecord {
  /** The principal's name; `anonymous` when the API has no authentication; `vnfm` for the VNFM's own actions. */
  who: string;
  /** The principal's project, when it has one. */
  project?: string;
  /** What was done: `<METHOD> <route pattern>` for API calls, `HEAL (automatic)` for auto-heal. */
  action: string;
  /** The resource acted on (ids from the path, or the VNF instance). */
  target?: string;
  /** HTTP status of the answer (API) or `accepted` / `refused` (automatic heal). */
  result: number | string;
  /** The op occ the call created or acted on, when there is one. */
  opOccId?: string;
  [extra: string]: unknown;
}

/**
 * The audit log: a child of the process logger named {@link AUDIT_LOGGER} that writes at info
 * level even when the process logs at warn or error (silent stays silent). One line per mutating
 * API call and per automatic heal.
 */
export function auditLogger(log: Logger): { record(r: AuditRecord): void } {
  const child = log.level === 'silent' ? log.child({ logger: AUDIT_LOGGER }) : log.child({ logger: AUDIT_LOGGER }, { level: 'info' });
  return {
    record(r) {
      child.info({ audit: r }, 'audit');
    },
  };
}

export type { Logger };
