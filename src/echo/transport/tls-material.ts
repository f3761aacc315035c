import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import type { Logger } from 'pino';
import { EchoConfigError } from '../errors.ts';
import { HOSTNAME } from '../version.ts';
import { selfSignedCertificate } from './self-signed.ts';

/** What the HTTPS server is given: PEM key and certificate (chain), and where they came from. */
export interface TlsMaterial {
  readonly key: string;
  readonly cert: string;
  /** True when neither file existed and a self-signed certificate was made for this process. */
  readonly generated: boolean;
  /** SHA-256 fingerprint of the (first) certificate, colon-separated hex. */
  readonly fingerprint256: string;
}

/** Where `CERT_FILE` and `KEY_FILE` point. */
export interface TlsFiles {
  readonly certFile: string;
  readonly keyFile: string;
}

/** Validity of a generated certificate; it lives in memory only, for one process. */
const GENERATED_VALIDITY_DAYS = 365;
/** Backdating of a generated certificate, so a client whose clock is a little behind accepts it. */
const GENERATED_BACKDATE_MS = 60 * 60 * 1000;

/**
 * Loads `CERT_FILE` and `KEY_FILE`. When neither exists, generates an in-memory self-signed
 * certificate (CN localhost; SANs localhost, 127.0.0.1, ::1 and the host name) and logs a warning
 * with its fingerprint. One file without the other, an unreadable file, a file that is not PEM or a
 * key that does not match the certificate is an `EchoConfigError` (`ECHO_ERR_CONFIG`) listing each
 * problem on one line.
 */
export async function loadTls(files: TlsFiles, logger: Logger): Promise<TlsMaterial> {
  const certFile = { variable: 'CERT_FILE', path: files.certFile, what: 'a PEM certificate' };
  const keyFile = { variable: 'KEY_FILE', path: files.keyFile, what: 'a PEM private key' };
  const [certExists, keyExists] = await Promise.all([exists(certFile.path), exists(keyFile.path)]);

  if (!certExists && !keyExists) {
    const material = await generateSelfSigned();
    logger.warn(
      { cert_file: certFile.path, key_file: keyFile.path, fingerprint_sha256: material.fingerprint256 },
      `ENABLE_TLS=true but neither CERT_FILE nor KEY_FILE exists: serving a generated self-signed certificate, SHA-256 fingerprint ${material.fingerprint256}`,
    );
    return material;
  }
  if (certExists !== keyExists) {
    const [missing, present] = certExists ? [keyFile, certFile] : [certFile, keyFile];
    throw new EchoConfigError([
      `${missing.variable}=${JSON.stringify(missing.path)} is invalid: the file does not exist; expected ${missing.what} beside ${present.variable}=${JSON.stringify(present.path)} (or neither file, for a generated self-signed certificate)`,
    ]);
  }

  const problems: string[] = [];
  const [certRead, keyRead] = await Promise.all([read(certFile.path), read(keyFile.path)]);
  const certText = certRead.text;
  const keyText = keyRead.text;
  let certificate: X509Certificate | undefined;
  if (certText === undefined) problems.push(invalid(certFile, certRead.problem));
  else {
    certificate = parseCertificate(certText);
    if (certificate === undefined) problems.push(invalid(certFile, 'the file holds no PEM certificate'));
  }
  let keyValid = false;
  if (keyText === undefined) problems.push(invalid(keyFile, keyRead.problem));
  else {
    const keyProblem = checkKey(keyText);
    if (keyProblem === undefined) keyValid = true;
    else problems.push(invalid(keyFile, keyProblem));
  }
  if (certificate !== undefined && keyValid && keyText !== undefined) {
    if (!certificate.checkPrivateKey(createPrivateKey(keyText))) {
      problems.push(
        invalid(
          keyFile,
          `the key does not belong to the certificate in CERT_FILE=${JSON.stringify(certFile.path)}`,
        ),
      );
    }
  }
  if (problems.length > 0 || certText === undefined || keyText === undefined || certificate === undefined) {
    throw new EchoConfigError(problems);
  }

  if (Date.parse(certificate.validTo) < Date.now()) {
    logger.warn(
      { cert_file: certFile.path, valid_to: certificate.validTo },
      'the certificate in CERT_FILE has expired: clients will refuse it',
    );
  }
  return { key: keyText, cert: certText, generated: false, fingerprint256: certificate.fingerprint256 };
}

/** A self-signed certificate for this host, made in memory (EC P-256, SHA-256; self-signed.ts). */
export async function generateSelfSigned(hostname: string = HOSTNAME): Promise<TlsMaterial> {
  const dnsNames = ['localhost', ...(hostname !== '' && hostname !== 'localhost' ? [hostname] : [])];
  const notBefore = new Date(Date.now() - GENERATED_BACKDATE_MS);
  const pems = selfSignedCertificate({
    commonName: 'localhost',
    dnsNames,
    ipAddresses: ['127.0.0.1', '::1'],
    notBefore,
    notAfter: new Date(notBefore.getTime() + GENERATED_VALIDITY_DAYS * 24 * 60 * 60 * 1000),
  });
  const fingerprint256 = new X509Certificate(pems.cert).fingerprint256;
  return { key: pems.key, cert: pems.cert, generated: true, fingerprint256 };
}

interface TlsFile {
  readonly variable: string;
  readonly path: string;
  readonly what: string;
}

function invalid(file: TlsFile, problem: string): string {
  return `${file.variable}=${JSON.stringify(file.path)} is invalid: ${problem}; expected ${file.what}`;
}

/** Whether something is at `path`; a path that cannot even be looked at counts as existing (read says why). */
async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code !== 'ENOENT';
  }
}

async function read(
  path: string,
): Promise<{ text: string; problem?: never } | { text?: never; problem: string }> {
  try {
    return { text: await readFile(path, 'utf8') };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return { problem: `the file cannot be read (${code ?? (err as Error).message})` };
  }
}

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/;

function parseCertificate(text: string): X509Certificate | undefined {
  const pem = PEM_CERTIFICATE.exec(text)?.[0];
  if (pem === undefined) return undefined;
  try {
    return new X509Certificate(pem);
  } catch {
    return undefined;
  }
}

/** Why a key file is unusable, or `undefined` when it holds one usable PEM private key. */
function checkKey(text: string): string | undefined {
  if (!/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(text)) return 'the file holds no PEM private key';
  try {
    createPrivateKey(text);
    return undefined;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ERR_MISSING_PASSPHRASE') return 'the private key is encrypted (no passphrase is supported)';
    return `the private key cannot be parsed (${code ?? (err as Error).message})`;
  }
}
