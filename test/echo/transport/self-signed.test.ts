import assert from 'node:assert/strict';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { once } from 'node:events';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { connect } from 'node:tls';
import { selfSignedCertificate } from '../../../src/echo/transport/self-signed.ts';
import { generateSelfSigned } from '../../../src/echo/transport/tls-material.ts';

const DAY = 86_400_000;

test('self-signed – node reads it: subject, issuer, names, validity, not a CA, server auth, signed by its own key', () => {
  const notBefore = new Date('2026-01-02T03:04:05Z');
  const notAfter = new Date('2027-01-02T03:04:05Z');
  const pems = selfSignedCertificate({
    commonName: 'localhost',
    dnsNames: ['localhost', 'echo.example'],
    ipAddresses: ['127.0.0.1', '::1', '2001:db8::42', '::ffff:192.0.2.1', 'fe80:0:0:0:0:0:0:7'],
    notBefore,
    notAfter,
  });
  const cert = new X509Certificate(pems.cert);
  assert.equal(cert.subject, 'CN=localhost');
  assert.equal(cert.issuer, 'CN=localhost');
  assert.equal(
    cert.subjectAltName,
    'DNS:localhost, DNS:echo.example, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1, IP Address:2001:DB8:0:0:0:0:0:42, IP Address:0:0:0:0:0:FFFF:C000:201, IP Address:FE80:0:0:0:0:0:0:7',
  );
  assert.equal(new Date(cert.validFrom).getTime(), notBefore.getTime());
  assert.equal(new Date(cert.validTo).getTime(), notAfter.getTime());
  assert.equal(cert.ca, false);
  assert.deepEqual(cert.keyUsage, ['1.3.6.1.5.5.7.3.1']);
  assert.ok(cert.verify(cert.publicKey), 'signed by its own key');
  assert.ok(cert.checkPrivateKey(createPrivateKey(pems.key)), 'the key is the certificate’s');
  assert.equal(cert.checkHost('echo.example'), 'echo.example');
  assert.equal(cert.checkIP('2001:db8::42'), '2001:db8::42');
  assert.equal(cert.checkHost('other.example'), undefined);
  assert.match(cert.serialNumber, /^[0-9A-F]+$/);
});

test('self-signed – a date from 2050 is a GeneralizedTime; long names take multi-byte lengths', () => {
  const long = `${'a'.repeat(60)}.${'b'.repeat(60)}.${'c'.repeat(60)}.example`;
  const notAfter = new Date('2051-06-01T00:00:00Z');
  const pems = selfSignedCertificate({
    commonName: long,
    dnsNames: [long, ...Array.from({ length: 20 }, (_, i) => `host-${i}.${long}`)],
    ipAddresses: [],
    notBefore: new Date('2049-12-31T23:59:59Z'),
    notAfter,
  });
  const cert = new X509Certificate(pems.cert);
  assert.ok(cert.raw.length > 4096, 'the certificate needs two-byte lengths');
  assert.equal(cert.subject, `CN=${long}`);
  assert.equal(new Date(cert.validTo).getTime(), notAfter.getTime());
  assert.equal(new Date(cert.validFrom).getTime(), Date.parse('2049-12-31T23:59:59Z'));
  assert.ok(cert.verify(cert.publicKey));
  assert.equal(cert.checkHost(`host-19.${long}`), `host-19.${long}`);
});

test('self-signed – each certificate has a key and a serial of its own', () => {
  const options = {
    commonName: 'localhost',
    dnsNames: ['localhost'],
    ipAddresses: [],
    notBefore: new Date(),
    notAfter: new Date(Date.now() + DAY),
  };
  const a = new X509Certificate(selfSignedCertificate(options).cert);
  const b = new X509Certificate(selfSignedCertificate(options).cert);
  assert.notEqual(a.serialNumber, b.serialNumber);
  assert.notEqual(a.fingerprint256, b.fingerprint256);
  assert.ok(!a.verify(b.publicKey), 'one is not signed by the other’s key');
});

test('self-signed – the generated certificate passes a verifying TLS client that trusts it, for localhost and 127.0.0.1', async (t) => {
  const material = await generateSelfSigned('echo-host');
  assert.equal(material.generated, true);
  assert.equal(material.fingerprint256, new X509Certificate(material.cert).fingerprint256);
  const server = createServer({ key: material.key, cert: material.cert }, (_req, res) => res.end('ok'));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => server.close());
  const { port } = server.address() as AddressInfo;
  for (const servername of ['localhost', 'echo-host', undefined]) {
    const socket = connect({
      host: '127.0.0.1',
      port,
      ca: material.cert,
      servername,
      rejectUnauthorized: true,
    });
    await once(socket, 'secureConnect');
    assert.equal(socket.authorized, true, `authorized as ${servername ?? '127.0.0.1'}`);
    assert.equal(socket.getPeerX509Certificate()?.fingerprint256, material.fingerprint256);
    socket.destroy();
  }
  // A name the certificate does not hold is refused by the same client.
  const wrong = connect({ host: '127.0.0.1', port, ca: material.cert, servername: 'other.example' });
  const [error] = (await once(wrong, 'error')) as [NodeJS.ErrnoException];
  assert.equal(error.code, 'ERR_TLS_CERT_ALTNAME_INVALID');
});
