/**
 * Secrets out of remote output, and SSH host key fingerprints.
 *
 * Everything the SSH executor hands back (command output, streamed lines, error messages) passes
 * through {@link redact}: every occurrence of each secret (password, key passphrase, private key
 * text, tokens the caller names) becomes `***`. Output that was cut (the tail kept of a long
 * stream, a very long streamed line split in pieces) may begin with the end of a secret or end
 * with its beginning; {@link redactCut} also masks such fragments at the cut edges.
 *
 * {@link fingerprintOf} computes the fingerprint `ssh-keygen -lf` prints for a host key
 * (`SHA256:` + unpadded base64 of the SHA-256 of the key blob), the form host keys are pinned in.
 */
import { createHash } from 'node:crypto';

/** What a secret is replaced by. */
export const MASK = '***';

/** Secrets shorter than this are not redacted (they would mask ordinary text everywhere). */
export const MIN_SECRET_LENGTH = 4;

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** The distinct secrets worth redacting, longest first. */
function usable(secrets: readonly string[]): string[] {
  const set = new Set<string>();
  for (const s of secrets) if (typeof s === 'string' && s.length >= MIN_SECRET_LENGTH) set.add(s);
  return [...set].sort((a, b) => b.length - a.length);
}

/**
 * A compiled set of secrets: one regular expression (longest alternative first, so a secret that
 * contains another is masked whole) applied in a single pass.
 */
export class Redactor {
  private readonly re: RegExp | undefined;
  readonly secrets: readonly string[];

  constructor(secrets: readonly string[]) {
    this.secrets = usable(secrets);
    this.re = this.secrets.length ? new RegExp(this.secrets.map(escapeRegExp).join('|'), 'g') : undefined;
  }

  /** `text` with every occurrence of every secret replaced by `***`. */
  redact(text: string): string {
    if (!this.re || !text) return text;
    return text.replace(this.re, MASK);
  }

  /**
   * Like {@link redact}, for a piece of a longer text: when `cutStart`, a leading fragment that is
   * the end of a secret is masked too; when `cutEnd`, a trailing fragment that is the beginning of
   * one.
   */
  redactCut(text: string, cutStart: boolean, cutEnd: boolean): string {
    let out = this.redact(text);
    if (!this.re) return out;
    if (cutStart) {
      let best = 0;
      for (const s of this.secrets) {
        for (let k = Math.min(s.length - 1, out.length); k > best; k--) {
          if (out.startsWith(s.slice(s.length - k))) {
            best = k;
            break;
          }
        }
      }
      if (best > 0) out = MASK + out.slice(best);
    }
    if (cutEnd) {
      let best = 0;
      for (const s of this.secrets) {
        for (let k = Math.min(s.length - 1, out.length); k > best; k--) {
          if (out.endsWith(s.slice(0, k))) {
            best = k;
            break;
          }
        }
      }
      if (best > 0) out = out.slice(0, out.length - best) + MASK;
    }
    return out;
  }
}

/**
 * Replaces every occurrence of each secret (ignoring those shorter than 4 characters) by `***`;
 * where secrets overlap, the longest wins.
 */
export function redact(text: string, secrets: readonly string[]): string {
  return new Redactor(secrets).redact(text);
}

/**
 * The strings to redact for a private key: the whole text, and each line of its body (output may
 * show the key re-wrapped, or a single line of it).
 */
export function privateKeySecrets(privateKey: string | Buffer | undefined): string[] {
  if (privateKey === undefined) return [];
  const text = Buffer.isBuffer(privateKey) ? privateKey.toString('utf8') : privateKey;
  const out = [text, text.trim()];
  for (const line of text.split(/\r?\n/)) {
    const l = line.trim();
    if (l.length >= 16 && !l.startsWith('-----')) out.push(l);
  }
  return out;
}

/** `SHA256:<base64 without padding>` of a raw SSH host key blob, as `ssh-keygen -lf` prints it. */
export function fingerprintOf(hostKey: Buffer): string {
  return `SHA256:${createHash('sha256').update(hostKey).digest('base64').replace(/=+$/, '')}`;
}

/** A fingerprint in the canonical form (tolerates base64 padding and surrounding blanks). */
export function normalizeFingerprint(fp: string): string {
  const t = fp.trim();
  const m = /^sha256:(.*)$/i.exec(t);
  return `SHA256:${(m ? (m[1] as string) : t).replace(/=+$/, '')}`;
}
