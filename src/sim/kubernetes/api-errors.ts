/**
 * Kubernetes `Status` failure objects. Clients (kubectl, client-node) branch on `code` and `reason`, so
 * every error the simulator raises is one of these, shaped like the real API server's.
 */
import type { ResourceDef } from './resource-registry.ts';

/** A field-level cause of an `Invalid` (422) error. */
export interface StatusCause {
  reason: string;
  message: string;
  field: string;
}

/** An error that maps 1:1 to an HTTP response carrying a `Status` body. */
export class ApiError extends Error {
  readonly code: number;
  readonly reason: string;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: number, reason: string, message: string, details?: Record<string, unknown>) {
    super(message);
    this.code = code;
    this.reason = reason;
    this.details = details;
  }

  /** The `Status` body the real API server would send. */
  toStatus(): Record<string, unknown> {
    const s: Record<string, unknown> = {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: this.message,
      reason: this.reason,
      code: this.code,
    };
    if (this.details) s.details = this.details;
    return s;
  }
}

function qualified(def: ResourceDef): string {
  return def.group ? `${def.plural}.${def.group}` : def.plural;
}

function details(def: ResourceDef, name: string): Record<string, unknown> {
  const d: Record<string, unknown> = { name, kind: def.plural };
  if (def.group) d.group = def.group;
  return d;
}

/** 404 `NotFound` for a named object. */
export function notFound(def: ResourceDef, name: string): ApiError {
  return new ApiError(404, 'NotFound', `${qualified(def)} "${name}" not found`, details(def, name));
}

/** 409 `AlreadyExists` on create. */
export function alreadyExists(def: ResourceDef, name: string): ApiError {
  return new ApiError(409, 'AlreadyExists', `${qualified(def)} "${name}" already exists`, details(def, name));
}

/** 409 `Conflict` on a stale `resourceVersion` / failed precondition. */
export function conflict(def: ResourceDef, name: string, why = 'the object has been modified; please apply your changes to the latest version and try again'): ApiError {
  return new ApiError(409, 'Conflict', `Operation cannot be fulfilled on ${qualified(def)} "${name}": ${why}`, details(def, name));
}

/** 422 `Invalid` with field causes, e.g. `Pod "x" is invalid: spec.containers: Required value`. */
export function invalid(def: ResourceDef, name: string, causes: StatusCause[]): ApiError {
  const text = causes.map((c) => `${c.field}: ${c.message}`).join(', ');
  const msg = causes.length > 1 ? `[${text}]` : text;
  return new ApiError(422, 'Invalid', `${def.kind} "${name}" is invalid: ${msg}`, {
    ...details(def, name),
    kind: def.kind,
    causes,
  });
}

/** 400 `BadRequest`. */
export function badRequest(message: string): ApiError {
  return new ApiError(400, 'BadRequest', message);
}

/** 405 `MethodNotAllowed`. */
export function methodNotAllowed(): ApiError {
  return new ApiError(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource');
}
