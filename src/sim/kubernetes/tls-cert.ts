/**
 * Self-signed TLS certificate for the simulated API server, built with node:crypto only (EC P-256,
 * minimal DER encoder). kubectl (client-go) never sends bearer tokens over plain HTTP, so the
 * simulator serves HTTPS; the certificate carries IP/DNS subject alternative names for loopback and
 * the listen host, and is put in the kubeconfig as the trusted CA so clients verify it normally.
 */
import { generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import { isIP } from 'node:net';

/** PEM-encoded certificate and private key. */
export interface SelfSignedCert {
  certPem: string;
  keyPem: string;
}

function len(n: number): Buffer {
  if (n < 0x80) return Buffer.from([n]);
  const bytes: number[] = [];
  while (n > 0) {
    bytes.unshift(n & 0xff);
    n >>= 8;
  }
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

function tlv(tag: number, ...content: Buffer[]): Buffer {
  const body = Buffer.concat(content);
  return Buffer.concat([Buffer.from([tag]), len(body.length), body]);
}

const seq = (...c: Buffer[]) => tlv(0x30, ...c);
const set = (...c: Buffer[]) => tlv(0x31, ...c);
const octets = (b: Buffer) => tlv(0x04, b);
const bitString = (b: Buffer) => tlv(0x03, Buffer.from([0]), b);
const utf8 = (s: string) => tlv(0x0c, Buffer.from(s, 'utf8'));
const bool = (v: boolean) => tlv(0x01, Buffer.from([v ? 0xff : 0]));

function oid(dotted: string): Buffer {
  const parts = dotted.split('.').map(Number);
  const out: number[] = [40 * (parts[0] as number) + (parts[1] as number)];
  for (const p of parts.slice(2)) {
    const stack: number[] = [p & 0x7f];
    let v = p >> 7;
    while (v > 0) {
      stack.unshift((v & 0x7f) | 0x80);
      v >>= 7;
    }
    out.push(...stack);
  }
  return tlv(0x06, Buffer.from(out));
}

function utcTime(d: Date): Buffer {
  const p = (n: number) => String(n).padStart(2, '0');
  const s = `${p(d.getUTCFullYear() % 100)}${p(d.getUTCMonth() + 1)}${p(d.getUTCDate())}${p(d.getUTCHours())}${p(d.getUTCMinutes())}${p(d.getUTCSeconds())}Z`;
  return tlv(0x17, Buffer.from(s, 'ascii'));
}

function ipBytes(ip: string): Buffer {
  if (isIP(ip) === 4) return Buffer.from(ip.split('.').map(Number));
  // IPv6: expand '::'.
  const [head, tail] = ip.split('::') as [string, string | undefined];
  const h = head ? head.split(':') : [];
  const t = tail !== undefined && tail ? tail.split(':') : [];
  const groups = tail === undefined ? h : [...h, ...Array(8 - h.length - t.length).fill('0'), ...t];
  const buf = Buffer.alloc(16);
  groups.forEach((g, i) => {
    buf.writeUInt16BE(Number.parseInt(g || '0', 16), i * 2);
  });
  return buf;
}

function extension(id: string, critical: boolean, value: Buffer): Buffer {
  return critical ? seq(oid(id), bool(true), octets(value)) : seq(oid(id), octets(value));
}

/** Creates a self-signed server certificate valid for ten years for the given host names / IPs. */
export function createSelfSignedCert(hosts: string[], commonName = 'kubernetes-sim'): SelfSignedCert {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const spki = publicKey.export({ type: 'spki', format: 'der' });
  const sigAlg = seq(oid('1.2.840.10045.4.3.2'));
  const name = seq(set(seq(oid('2.5.4.3'), utf8(commonName))));
  const serial = randomBytes(16);
  serial[0] = ((serial[0] as number) & 0x7f) | 0x01;
  const now = Date.now();
  const names = [...new Set(['localhost', '127.0.0.1', '::1', ...hosts.filter((h) => h && h !== '0.0.0.0' && h !== '::')])];
  const san = seq(...names.map((h) => (isIP(h) ? tlv(0x87, ipBytes(h)) : tlv(0x82, Buffer.from(h, 'ascii')))));
  const extensions = tlv(
    0xa3,
    seq(
      extension('2.5.29.15', true, tlv(0x03, Buffer.from([0x02, 0x84]))),
      extension('2.5.29.37', false, seq(oid('1.3.6.1.5.5.7.3.1'))),
      extension('2.5.29.19', true, seq(bool(true))),
      extension('2.5.29.17', false, san),
    ),
  );
  const tbs = seq(
    tlv(0xa0, tlv(0x02, Buffer.from([2]))),
    tlv(0x02, serial),
    sigAlg,
    name,
    seq(utcTime(new Date(now - 86_400_000)), utcTime(new Date(now + 10 * 365 * 86_400_000))),
    name,
    spki,
    extensions,
  );
  const signature = sign('sha256', tbs, { key: privateKey, dsaEncoding: 'der' });
  const der = seq(tbs, sigAlg, bitString(signature));
  const b64 = der.toString('base64').replace(/(.{64})/g, '$1\n').trimEnd();
  return {
    certPem: `-----BEGIN CERTIFICATE-----\n${b64}\n-----END CERTIFICATE-----\n`,
    keyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
  };
}
