/**
 * The simulated service-account token controller: a Secret of type
 * `kubernetes.io/service-account-token` annotated with `kubernetes.io/service-account.name` gets
 * `data.token` (a signed JWT naming the account and the Secret), `data.ca.crt` (the cluster CA)
 * and `data.namespace`, once its ServiceAccount exists, like the legacy token controller of a real
 * cluster (what clients do since Kubernetes 1.24 to get a long-lived token). Deleting the
 * ServiceAccount deletes its token Secrets.
 *
 * {@link ServiceAccountTokenController.authenticate} accepts such a token as a bearer token as long
 * as the Secret still holds it: deleting the Secret (or its account) revokes it. The signing key
 * derives from the cluster's serving key, so tokens stay valid across a restart from saved state.
 * The simulator enforces no RBAC: an accepted token has full access.
 */
import { createHash, createHmac, randomUUID, timingSafeEqual } from 'node:crypto';
import { R } from '../resource-registry.ts';
import type { KubeObject } from '../types.ts';
import type { ControllerContext } from './context.ts';

/** Secret type of service-account tokens. */
export const SA_TOKEN_TYPE = 'kubernetes.io/service-account-token';
/** Annotation naming the token's ServiceAccount. */
export const SA_NAME_ANNOTATION = 'kubernetes.io/service-account.name';
/** Annotation holding the ServiceAccount's uid (set by the controller). */
export const SA_UID_ANNOTATION = 'kubernetes.io/service-account.uid';

const b64url = (v: string | Buffer): string => Buffer.from(v).toString('base64url');

interface Claims {
  iss?: string;
  /** Unique per issued token: a Secret created again under the same name gets a new token. */
  jti?: string;
  sub?: string;
  'kubernetes.io/serviceaccount/namespace'?: string;
  'kubernetes.io/serviceaccount/secret.name'?: string;
  'kubernetes.io/serviceaccount/service-account.name'?: string;
  'kubernetes.io/serviceaccount/service-account.uid'?: string;
}

function isTokenSecret(o: KubeObject | undefined): o is KubeObject {
  return !!o && o.type === SA_TOKEN_TYPE && typeof o.metadata.annotations?.[SA_NAME_ANNOTATION] === 'string';
}

/** Fills service-account token Secrets and authenticates their tokens. */
export class ServiceAccountTokenController {
  private readonly key: Buffer;

  constructor(
    private readonly ctx: ControllerContext,
    private readonly caCertPem: string,
    signingSeed: string,
  ) {
    this.key = createHash('sha256').update('healvnfm-sim-sa-token\0').update(signingSeed).digest();
    ctx.store.subscribe((ev) => {
      if (ev.def === R.secrets && ev.type !== 'DELETED' && isTokenSecret(ev.obj) && !ev.obj.metadata.deletionTimestamp && !this.holdsValidToken(ev.obj)) {
        const ns = ev.obj.metadata.namespace as string;
        const name = ev.obj.metadata.name as string;
        ctx.queue.add(`sa-token:${ns}/${name}`, () => this.fill(ns, name));
      }
      if (ev.def === R.serviceaccounts) {
        const ns = ev.obj.metadata.namespace as string;
        const sa = ev.obj.metadata.name as string;
        if (ev.type === 'ADDED') ctx.queue.add(`sa-token-sa:${ns}/${sa}`, () => this.fillFor(ns, sa));
        if (ev.type === 'DELETED') ctx.queue.add(`sa-token-gc:${ns}/${sa}`, () => this.deleteFor(ns, sa, ev.obj.metadata.uid as string));
      }
    });
  }

  /** Fills the token Secrets of an account created after them, and those left unfilled at a restart. */
  private fillFor(ns: string, sa: string): void {
    for (const s of this.ctx.store.list(R.secrets, ns)) {
      if (isTokenSecret(s) && s.metadata.annotations?.[SA_NAME_ANNOTATION] === sa && !this.holdsValidToken(s)) this.fill(ns, s.metadata.name as string);
    }
  }

  /** A deleted ServiceAccount takes its token Secrets along (as the real controller does). */
  private deleteFor(ns: string, sa: string, uid: string): void {
    for (const s of this.ctx.store.list(R.secrets, ns)) {
      if (!isTokenSecret(s) || s.metadata.annotations?.[SA_NAME_ANNOTATION] !== sa) continue;
      const boundUid = s.metadata.annotations?.[SA_UID_ANNOTATION];
      if (boundUid !== undefined && boundUid !== uid) continue;
      try {
        this.ctx.api.delete(R.secrets, ns, s.metadata.name as string, {});
      } catch {
        // already gone
      }
    }
  }

  private fill(ns: string, name: string): void {
    const { store, api } = this.ctx;
    const secret = store.get(R.secrets, ns, name);
    if (!isTokenSecret(secret) || secret.metadata.deletionTimestamp || this.holdsValidToken(secret)) return;
    const saName = secret.metadata.annotations?.[SA_NAME_ANNOTATION] as string;
    const sa = store.get(R.serviceaccounts, ns, saName);
    if (!sa) return; // filled when the account appears
    const uid = sa.metadata.uid as string;
    const token = this.sign({
      iss: 'kubernetes/serviceaccount',
      'kubernetes.io/serviceaccount/namespace': ns,
      'kubernetes.io/serviceaccount/secret.name': name,
      'kubernetes.io/serviceaccount/service-account.name': saName,
      'kubernetes.io/serviceaccount/service-account.uid': uid,
      sub: `system:serviceaccount:${ns}:${saName}`,
      jti: randomUUID(),
    });
    api.mutate(R.secrets, ns, name, (d) => {
      d.metadata.annotations = { ...(d.metadata.annotations ?? {}), [SA_UID_ANNOTATION]: uid };
      d.data = {
        ...(d.data ?? {}),
        'ca.crt': Buffer.from(this.caCertPem).toString('base64'),
        namespace: Buffer.from(ns).toString('base64'),
        token: Buffer.from(token).toString('base64'),
      };
    });
  }

  private sign(claims: Claims): string {
    const head = `${b64url(JSON.stringify({ alg: 'HS256', kid: 'sim' }))}.${b64url(JSON.stringify(claims))}`;
    return `${head}.${createHmac('sha256', this.key).update(head).digest('base64url')}`;
  }

  /** The claims of a token signed by this cluster, else undefined. */
  private verify(token: string): Claims | undefined {
    const parts = token.split('.');
    if (parts.length !== 3) return undefined;
    const [h, p, sig] = parts as [string, string, string];
    const want = createHmac('sha256', this.key).update(`${h}.${p}`).digest();
    const got = Buffer.from(sig, 'base64url');
    if (got.length !== want.length || !timingSafeEqual(got, want)) return undefined;
    try {
      const claims = JSON.parse(Buffer.from(p, 'base64url').toString('utf8')) as Claims;
      return claims && typeof claims === 'object' ? claims : undefined;
    } catch {
      return undefined;
    }
  }

  private holdsValidToken(secret: KubeObject): boolean {
    const raw = secret.data?.token;
    if (typeof raw !== 'string' || raw === '') return false;
    const claims = this.verify(Buffer.from(raw, 'base64').toString('utf8'));
    if (claims === undefined) return false;
    return (
      claims['kubernetes.io/serviceaccount/secret.name'] === secret.metadata.name &&
      claims['kubernetes.io/serviceaccount/namespace'] === secret.metadata.namespace &&
      claims['kubernetes.io/serviceaccount/service-account.name'] === secret.metadata.annotations?.[SA_NAME_ANNOTATION]
    );
  }

  /**
   * Whether `token` is a service-account token of this cluster whose Secret still exists and
   * still holds exactly this token.
   */
  authenticate(token: string): boolean {
    const claims = this.verify(token);
    const ns = claims?.['kubernetes.io/serviceaccount/namespace'];
    const name = claims?.['kubernetes.io/serviceaccount/secret.name'];
    if (typeof ns !== 'string' || typeof name !== 'string') return false;
    const secret = this.ctx.store.get(R.secrets, ns, name);
    if (!isTokenSecret(secret) || secret.metadata.deletionTimestamp || typeof secret.data?.token !== 'string') return false;
    const stored = Buffer.from(secret.data.token, 'base64');
    const given = Buffer.from(token);
    return stored.length === given.length && timingSafeEqual(stored, given);
  }
}
