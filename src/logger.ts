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

export type { Logger };
