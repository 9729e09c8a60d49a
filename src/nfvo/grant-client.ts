/**
 * Grants toward the NFVO (SOL003 Grant interface). The local NFVO grants everything (the default,
 * for VNFMs run without an NFVO); the external client calls `{endpoint}/grant/v1/grants` with OAuth2
 * client credentials or basic auth, accepts a synchronous 201 and also an asynchronous 202 whose
 * Location is polled until the grant is ready.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { VnfmConfig } from '../config.ts';
import { vnfmError } from '../errors.ts';

/** SOL003 GrantRequest (the attributes we produce). */
export interface GrantRequest {
  vnfInstanceId: string;
  vnfLcmOpOccId: string;
  vnfdId: string;
  flavourId?: string;
  operation: string;
  isAutomaticInvocation: boolean;
  instantiationLevelId?: string;
  addResources?: ResourceDefinition[];
  removeResources?: ResourceDefinition[];
  additionalParams?: Record<string, unknown>;
  _links: { vnfLcmOpOcc: { href: string }; vnfInstance: { href: string } };
}

/** SOL003 ResourceDefinition. */
export interface ResourceDefinition {
  id: string;
  type: 'COMPUTE' | 'VL' | 'STORAGE' | 'LINKPORT';
  vduId?: string;
  resourceTemplateId: string;
  resource?: { vimConnectionId?: string; resourceProviderId?: string; resourceId: string; vimLevelResourceType?: string };
}

/** Issues grants. */
export interface GrantClient {
  /** `signal` aborts the request (and the polling of an asynchronous grant) when the op must stop. */
  grant(req: GrantRequest, opts?: { signal?: AbortSignal }): Promise<Record<string, unknown>>;
}

/** A request deadline that also ends when `signal` aborts. */
function deadline(ms: number, signal?: AbortSignal): AbortSignal {
  return signal ? AbortSignal.any([AbortSignal.timeout(ms), signal]) : AbortSignal.timeout(ms);
}

/** Grants everything at once. */
export class LocalNfvo implements GrantClient {
  async grant(req: GrantRequest): Promise<Record<string, unknown>> {
    return {
      id: randomUUID(),
      vnfInstanceId: req.vnfInstanceId,
      vnfLcmOpOccId: req.vnfLcmOpOccId,
      ...(req.addResources?.length ? { addResources: req.addResources.map((r) => ({ resourceDefinitionId: r.id })) } : {}),
      ...(req.removeResources?.length ? { removeResources: req.removeResources.map((r) => ({ resourceDefinitionId: r.id })) } : {}),
      _links: { self: { href: 'local' }, vnfLcmOpOcc: req._links.vnfLcmOpOcc, vnfInstance: req._links.vnfInstance },
    };
  }
}

/** Calls an external NFVO. */
export class ExternalNfvo implements GrantClient {
  private token: { value: string; expires: number } | undefined;
  private readonly fetch: typeof fetch;
  constructor(
    private readonly cfg: VnfmConfig['grants'],
    /** HTTP client: the outbound-rule-checking fetch of the VNFM (checked again at each request). @default global fetch */
    fetchImpl?: typeof fetch,
  ) {
    this.fetch = fetchImpl ?? globalThis.fetch;
  }

  private async authHeader(signal?: AbortSignal): Promise<Record<string, string>> {
    const { clientId, clientSecret, tokenEndpoint, basicAuth } = this.cfg;
    if (!clientId || !clientSecret) return {};
    const basic = `Basic ${Buffer.from(`${clientId}:${clientSecret}`).toString('base64')}`;
    if (basicAuth || !tokenEndpoint) return { authorization: basic };
    if (this.token && this.token.expires > Date.now() + 5000) return { authorization: `Bearer ${this.token.value}` };
    const res = await this.fetch(tokenEndpoint, { method: 'POST', headers: { authorization: basic, 'content-type': 'application/x-www-form-urlencoded' }, body: 'grant_type=client_credentials', signal: deadline(20_000, signal) }).catch((e: Error) => {
      if (signal?.aborted) throw signal.reason;
      throw vnfmError('VNFM_ERR_GRANT_FAILED', `NFVO token endpoint unreachable: ${e.message}`);
    });
    if (!res.ok) throw vnfmError('VNFM_ERR_GRANT_FAILED', `NFVO token endpoint answered ${res.status}`);
    const body = (await res.json()) as { access_token?: string; expires_in?: number };
    if (!body.access_token) throw vnfmError('VNFM_ERR_GRANT_FAILED', 'NFVO token endpoint returned no access_token');
    this.token = { value: body.access_token, expires: Date.now() + (body.expires_in ?? 300) * 1000 };
    return { authorization: `Bearer ${this.token.value}` };
  }

  private async call(url: string, init: RequestInit, signal?: AbortSignal): Promise<Response> {
    try {
      return await this.fetch(url, { ...init, headers: { ...(init.headers as Record<string, string>), ...(await this.authHeader(signal)), version: '1.4.0', accept: 'application/json' }, signal: deadline(30_000, signal) });
    } catch (e) {
      if (signal?.aborted) throw signal.reason;
      if ((e as { code?: string }).code?.startsWith('VNFM_ERR')) throw e;
      throw vnfmError('VNFM_ERR_GRANT_FAILED', `NFVO unreachable at ${new URL(url).origin}: ${(e as Error).message}`);
    }
  }

  async grant(req: GrantRequest, opts: { signal?: AbortSignal } = {}): Promise<Record<string, unknown>> {
    const { signal } = opts;
    const url = `${this.cfg.endpoint?.replace(/\/+$/, '')}/grant/v1/grants`;
    const res = await this.call(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(req) }, signal);
    if (res.status === 201 || res.status === 200) return (await res.json()) as Record<string, unknown>;
    if (res.status === 202) {
      const loc = res.headers.get('location');
      if (!loc) throw vnfmError('VNFM_ERR_GRANT_FAILED', 'NFVO answered 202 without Location');
      const deadline = Date.now() + this.cfg.asyncTimeoutMs;
      let wait = 100;
      while (Date.now() < deadline) {
        await sleep(wait, undefined, signal ? { signal } : undefined).catch(() => {
          throw signal?.reason;
        });
        wait = Math.min(wait * 2, 2000);
        const p = await this.call(new URL(loc, url).toString(), { method: 'GET' }, signal);
        if (p.status === 200 || p.status === 201) return (await p.json()) as Record<string, unknown>;
        if (p.status === 202) continue;
        if (p.status === 403) throw vnfmError('VNFM_ERR_GRANT_REJECTED', `NFVO rejected the grant: ${await p.text()}`);
        throw vnfmError('VNFM_ERR_GRANT_FAILED', `NFVO answered ${p.status} while polling the grant`);
      }
      throw vnfmError('VNFM_ERR_GRANT_FAILED', `grant not ready after ${this.cfg.asyncTimeoutMs} ms`);
    }
    const text = (await res.text()).slice(0, 500);
    if (res.status === 403) throw vnfmError('VNFM_ERR_GRANT_REJECTED', `NFVO rejected the grant: ${text}`);
    throw vnfmError('VNFM_ERR_GRANT_FAILED', `NFVO answered ${res.status}: ${text}`, { retryable: res.status >= 500 });
  }
}

/** The grant client the config asks for. */
export function createGrantClient(cfg: VnfmConfig, fetchImpl?: typeof fetch): GrantClient {
  return cfg.grants.mode === 'external' ? new ExternalNfvo(cfg.grants, fetchImpl) : new LocalNfvo();
}
