/**
 * The single place where errors become SOL013 ProblemDetails (`application/problem+json`). Catalog
 * errors keep their status and detail; Fastify's own client errors (bad JSON, schema violations,
 * wrong media type, oversized bodies) become 4xx with a readable detail; anything else is a 500
 * whose detail never leaks internals.
 */
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { isVnfmError } from '../errors.ts';

/** SOL013 ProblemDetails. */
export interface ProblemDetails {
  type?: string;
  title?: string;
  status: number;
  detail: string;
  instance?: string;
  [k: string]: unknown;
}

/** Builds a ProblemDetails body. */
export function problem(status: number, title: string, detail: string, extra?: Record<string, unknown>): ProblemDetails {
  return { title, status, detail, ...(extra ?? {}) };
}

function fromValidation(err: FastifyError): string {
  const v = (err as unknown as { validation?: { instancePath?: string; message?: string; params?: Record<string, unknown> }[]; validationContext?: string }).validation;
  const ctx = (err as unknown as { validationContext?: string }).validationContext ?? 'body';
  if (!v || v.length === 0) return err.message;
  return v
    .slice(0, 5)
    .map((e) => {
      const where = `${ctx}${e.instancePath ? e.instancePath.replace(/\//g, '.') : ''}`;
      if (e.params && 'additionalProperty' in e.params) return `${where}: unknown attribute '${String(e.params.additionalProperty)}'`;
      if (e.params && 'allowedValues' in e.params) return `${where} ${e.message}: ${(e.params.allowedValues as unknown[]).join(', ')}`;
      return `${where} ${e.message ?? 'is invalid'}`;
    })
    .join('; ');
}

/** Titles of the client error statuses Fastify or a plugin may raise without a catalog code. */
const TITLES: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  406: 'Not Acceptable',
  408: 'Request Timeout',
  409: 'Conflict',
  411: 'Length Required',
  413: 'Payload Too Large',
  414: 'URI Too Long',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Entity',
  429: 'Too Many Requests',
  431: 'Request Header Fields Too Large',
};

/** Maps any thrown value to a ProblemDetails; `logError` is called for unexpected ones. */
export function toProblem(err: unknown, logError: (e: unknown) => void): ProblemDetails {
  if (isVnfmError(err)) {
    return { type: `urn:vnfm:error:${err.code}`, title: err.title, status: err.httpStatus, detail: err.message, ...(err.extra ?? {}) };
  }
  const fe = err as FastifyError & { validation?: unknown };
  if (fe && typeof fe === 'object' && fe.validation) return problem(400, 'Bad Request', fromValidation(fe));
  const code = fe?.code ?? '';
  const status = typeof fe?.statusCode === 'number' ? fe.statusCode : 500;
  switch (code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return problem(415, 'Unsupported Media Type', `Content-Type ${fe.message.replace(/^Unsupported Media Type:?\s*/, '') || 'of the request'} is not supported; use application/json`);
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return problem(413, 'Payload Too Large', 'request body is too large');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return problem(400, 'Bad Request', 'body is missing or empty');
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return problem(400, 'Bad Request', `malformed request body: ${fe.message}`);
  }
  if (err instanceof SyntaxError) return problem(400, 'Bad Request', `malformed JSON body: ${err.message}`);
  // PostgreSQL refusing a character of the request (22021 character_not_in_repertoire, 22P05
  // untranslatable_character): the client sent text that cannot be stored, not a server fault.
  if (code === '22021' || code === '22P05') return problem(400, 'Bad Request', 'the request contains characters that cannot be stored (e.g. U+0000)');
  if (status >= 400 && status < 500) return problem(status, TITLES[status] ?? 'Bad Request', fe.message || 'bad request');
  logError(err);
  return problem(500, 'Internal Server Error', 'the VNFM failed to process the request; see the server log');
}

/** Sends a ProblemDetails with the right content type (keeps a SOL `Version` header set earlier). */
export function sendProblem(reply: FastifyReply, p: ProblemDetails): FastifyReply {
  return reply.code(p.status).type('application/problem+json').send(p);
}

/** Fastify error handler using {@link toProblem}. */
export function errorHandler(err: FastifyError, req: FastifyRequest, reply: FastifyReply): FastifyReply {
  const p = toProblem(err, (e) => req.log.error({ err: e }, 'unhandled error'));
  return sendProblem(reply, p);
}
