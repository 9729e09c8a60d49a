/**
 * The single place where errors become SOL013 ProblemDetails (`application/problem+json`). Catalog
 * errors keep their status and detail; Fastify's own client errors (bad JSON, schema violations,
 * wrong media type, oversized bodies, unknown routes and methods) become the catalog's 4xx entries
 * with a readable detail; anything else is a 500 whose detail never leaks internals.
 */
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { ERRORS, type ErrorCode, isVnfmError } from '../errors.ts';

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

/** A ProblemDetails of the error catalog: the code's status and title, `type` naming the code. */
export function catalogProblem(code: ErrorCode, detail: string, extra?: Record<string, unknown>): ProblemDetails {
  const def = ERRORS[code];
  return { type: `urn:vnfm:error:${code}`, title: def.title, status: def.httpStatus, detail, ...(extra ?? {}) };
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

/** The catalog code of each client error status Fastify or a plugin may raise without one. */
const CODES: Record<number, ErrorCode> = {
  400: 'VNFM_ERR_API_BAD_REQUEST',
  401: 'VNFM_ERR_API_UNAUTHORIZED',
  403: 'VNFM_ERR_API_FORBIDDEN',
  404: 'VNFM_ERR_API_NOT_FOUND',
  405: 'VNFM_ERR_API_METHOD_NOT_ALLOWED',
  406: 'VNFM_ERR_API_NOT_ACCEPTABLE',
  409: 'VNFM_ERR_API_CONFLICT',
  413: 'VNFM_ERR_API_PAYLOAD_TOO_LARGE',
  414: 'VNFM_ERR_API_URI_TOO_LONG',
  415: 'VNFM_ERR_API_UNSUPPORTED_MEDIA_TYPE',
  422: 'VNFM_ERR_API_UNPROCESSABLE',
};

/** Titles of the client error statuses without a catalog code. */
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
  if (fe && typeof fe === 'object' && fe.validation) return catalogProblem('VNFM_ERR_API_BAD_REQUEST', fromValidation(fe));
  const code = fe?.code ?? '';
  const status = typeof fe?.statusCode === 'number' ? fe.statusCode : 500;
  switch (code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return catalogProblem('VNFM_ERR_API_UNSUPPORTED_MEDIA_TYPE', `Content-Type ${fe.message.replace(/^Unsupported Media Type:?\s*/, '') || 'of the request'} is not supported; use application/json`);
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return catalogProblem('VNFM_ERR_API_PAYLOAD_TOO_LARGE', 'request body is too large');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return catalogProblem('VNFM_ERR_API_BAD_REQUEST', 'body is missing or empty');
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return catalogProblem('VNFM_ERR_API_BAD_REQUEST', `malformed request body: ${fe.message}`);
  }
  if (err instanceof SyntaxError) return catalogProblem('VNFM_ERR_API_BAD_REQUEST', `malformed JSON body: ${err.message}`);
  // PostgreSQL refusing a character of the request (22021 character_not_in_repertoire, 22P05
  // untranslatable_character): the client sent text that cannot be stored, not a server fault.
  if (code === '22021' || code === '22P05') return catalogProblem('VNFM_ERR_API_BAD_REQUEST', 'the request contains characters that cannot be stored (e.g. U+0000)');
  if (status >= 400 && status < 500) return clientProblem(status, fe.message || 'bad request');
  logError(err);
  return catalogProblem('VNFM_ERR_INTERNAL', 'the VNFM failed to process the request; see the server log');
}

/** A client error (4xx) ProblemDetails: the catalog's entry for the status when it has one. */
export function clientProblem(status: number, detail: string): ProblemDetails {
  const code = CODES[status];
  return code ? catalogProblem(code, detail) : problem(status, TITLES[status] ?? 'Bad Request', detail);
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
