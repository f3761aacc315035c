/**
 * A self-signed X.509 certificate made with node's own crypto: an EC P-256 key, the certificate
 * written in DER (RFC 5280) and signed with ECDSA over SHA-256. node can read, check and use
 * certificates but not make one; the packages that do (`selfsigned` and the x509 stack behind it)
 * are 23 packages and about 20 MB of resident memory for the one certificate a run without
 * `CERT_FILE` needs (ADR 0013, docs/adr/0049-self-signed-without-a-package.md).
 *
 * What is written is what such a server certificate holds and nothing more: version 3, a random
 * positive serial, issuer and subject `CN=<common name>`, the validity, the public key, and the
 * extensions basic constraints (not a CA), key usage (critical: digital signature), extended key usage (server authentication) and the subject alternative names.
 */
import { generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import { isIPv4, isIPv6 } from 'node:net';

/** What {@link selfSignedCertificate} makes the certificate for. */
export interface SelfSignedOptions {
  readonly commonName: string;
  /** DNS names of the subject alternative names. */
  readonly dnsNames: readonly string[];
  /** IP addresses (v4 or v6) of the subject alternative names. */
  readonly ipAddresses: readonly string[];
  readonly notBefore: Date;
  readonly notAfter: Date;
}

/** A generated key and certificate, both PEM. */
export interface SelfSignedPems {
  /** The private key, PKCS #8. */
  readonly key: string;
  readonly cert: string;
}

// --- DER (X.690), the few types a certificate uses ---

function length(n: number): Buffer {
  if (n < 0x80) return Buffer.from([n]);
  const bytes: number[] = [];
  for (let rest = n; rest > 0; rest = Math.floor(rest / 256)) bytes.unshift(rest % 256);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

function tlv(tag: number, ...content: Buffer[]): Buffer {
  const body = Buffer.concat(content);
  return Buffer.concat([Buffer.from([tag]), length(body.length), body]);
}

const sequence = (...items: Buffer[]) => tlv(0x30, ...items);
const set = (...items: Buffer[]) => tlv(0x31, ...items);
/** A context-specific constructed tag (`[n] EXPLICIT`). */
const explicit = (n: number, item: Buffer) => tlv(0xa0 | n, item);
const octetString = (content: Buffer) => tlv(0x04, content);
const utf8String = (text: string) => tlv(0x0c, Buffer.from(text, 'utf8'));
const TRUE = Buffer.from([0x01, 0x01, 0xff]);

/** A non-negative INTEGER from its big-endian bytes (a leading zero keeps it positive). */
function unsignedInteger(bytes: Buffer): Buffer {
  let start = 0;
  while (start < bytes.length - 1 && bytes[start] === 0) start++;
  const trimmed = bytes.subarray(start);
  return tlv(0x02, (trimmed[0] ?? 0) & 0x80 ? Buffer.concat([Buffer.from([0]), trimmed]) : trimmed);
}

function objectIdentifier(dotted: string): Buffer {
  const [first = 0, second = 0, ...rest] = dotted.split('.').map(Number);
  const bytes = [40 * first + second];
  for (const arc of rest) {
    const base128 = [arc & 0x7f];
    for (let v = Math.floor(arc / 128); v > 0; v = Math.floor(v / 128)) base128.unshift(0x80 | (v & 0x7f));
    bytes.push(...base128);
  }
  return tlv(0x06, Buffer.from(bytes));
}

/** A BIT STRING of whole bytes, or of `bits` with `unused` trailing bits. */
function bitString(content: Buffer, unused = 0): Buffer {
  return tlv(0x03, Buffer.from([unused]), content);
}

/** UTCTime through 2049, GeneralizedTime after (RFC 5280 4.1.2.5). */
function time(date: Date): Buffer {
  const iso = date.toISOString(); // 2026-11-28T12:00:00.000Z
  const digits = iso.slice(0, 19).replace(/[-T:]/g, ''); // 20261128120000
  const year = date.getUTCFullYear();
  return year < 2050
    ? tlv(0x17, Buffer.from(`${digits.slice(2)}Z`, 'ascii'))
    : tlv(0x18, Buffer.from(`${digits}Z`, 'ascii'));
}

function ipBytes(address: string): Buffer {
  if (isIPv4(address)) return Buffer.from(address.split('.').map(Number));
  if (!isIPv6(address)) throw new TypeError(`not an IP address: ${address}`);
  // A trailing dotted quad (`::ffff:192.0.2.1`) is the last two groups.
  const v4 = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(address);
  const text = v4
    ? `${address.slice(0, v4.index)}${((Number(v4[1]) << 8) | Number(v4[2])).toString(16)}:${((Number(v4[3]) << 8) | Number(v4[4])).toString(16)}`
    : address;
  const [head = '', tail = ''] = text.split('::');
  const groups = (part: string) => (part === '' ? [] : part.split(':').map((g) => Number.parseInt(g, 16)));
  const left = groups(head);
  const right = text.includes('::') ? groups(tail) : [];
  const all = [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
  const out = Buffer.alloc(16);
  for (const [i, group] of all.entries()) out.writeUInt16BE(group, i * 2);
  return out;
}

// --- the certificate ---

const OID = {
  commonName: '2.5.4.3',
  ecdsaWithSha256: '1.2.840.10045.4.3.2',
  basicConstraints: '2.5.29.19',
  keyUsage: '2.5.29.15',
  extKeyUsage: '2.5.29.37',
  subjectAltName: '2.5.29.17',
  serverAuth: '1.3.6.1.5.5.7.3.1',
} as const;

function extension(oid: string, critical: boolean, value: Buffer): Buffer {
  return sequence(objectIdentifier(oid), ...(critical ? [TRUE] : []), octetString(value));
}

function pem(label: string, der: Buffer): string {
  const lines = der.toString('base64').match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${label}-----\n${lines.join('\n')}\n-----END ${label}-----\n`;
}

/** A new EC P-256 key and a certificate for it, signed by itself. */
export function selfSignedCertificate(options: SelfSignedOptions): SelfSignedPems {
  const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const name = sequence(set(sequence(objectIdentifier(OID.commonName), utf8String(options.commonName))));
  const algorithm = sequence(objectIdentifier(OID.ecdsaWithSha256));
  const altNames = [
    ...options.dnsNames.map((dns) => tlv(0x82, Buffer.from(dns, 'ascii'))),
    ...options.ipAddresses.map((ip) => tlv(0x87, ipBytes(ip))),
  ];
  const extensions = sequence(
    extension(OID.basicConstraints, false, sequence()),
    // digitalSignature (bit 0) alone: 1000 0000, seven unused bits. An EC key signs; it must not
    // claim keyEncipherment (RFC 5480 section 3).
    extension(OID.keyUsage, true, bitString(Buffer.from([0x80]), 7)),
    extension(OID.extKeyUsage, false, sequence(objectIdentifier(OID.serverAuth))),
    extension(OID.subjectAltName, false, sequence(...altNames)),
  );
  const tbs = sequence(
    explicit(0, unsignedInteger(Buffer.from([2]))), // v3
    unsignedInteger(randomBytes(16)),
    algorithm,
    name,
    sequence(time(options.notBefore), time(options.notAfter)),
    name,
    publicKey.export({ type: 'spki', format: 'der' }),
    explicit(3, extensions),
  );
  const signature = sign('sha256', tbs, privateKey); // DER-encoded ECDSA (r, s)
  const certificate = sequence(tbs, algorithm, bitString(signature));
  return {
    key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    cert: pem('CERTIFICATE', certificate),
  };
}
