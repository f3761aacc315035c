import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isEchoError } from '../../src/echo/errors.ts';
import {
  effectiveAddress,
  parseAllowedTargets,
  ReplayGuard,
  type ReplayResolver,
  type TargetRule,
} from '../../src/echo/replay-guard.ts';

/** A resolver that answers from a table and records every name it was asked; never real DNS. */
function table(entries: Record<string, string[]>): ReplayResolver & { asked: string[] } {
  const asked: string[] = [];
  const resolve = async (name: string) => {
    asked.push(name);
    const addresses = entries[name];
    if (addresses === undefined)
      throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${name}`), { code: 'ENOTFOUND' });
    return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
  return Object.assign(resolve, { asked });
}

function rules(text: string): TargetRule[] {
  const parsed = parseAllowedTargets(text);
  assert.ok(parsed !== undefined, `${text} does not parse`);
  return parsed;
}

async function verdict(guard: ReplayGuard, host: string, port = 80): Promise<string> {
  try {
    return `dial ${(await guard.resolveChecked(host, port)).join(',')}`;
  } catch (err) {
    assert.ok(isEchoError(err), String(err));
    return `${err.code}: ${err.message}`;
  }
}

test('replay guard – ECHO_REPLAY_ALLOWED_TARGETS parses hosts, addresses, ports and CIDRs, IPv4 and IPv6', () => {
  for (const good of [
    '*',
    'api.internal',
    'API.Internal:8443',
    '10.0.0.0/8',
    '192.168.1.7',
    '192.168.1.7:9000',
    '::1',
    '[::1]',
    '[fd00::1]:8080',
    'fd00::/8',
    '169.254.169.254, *',
    'svc.ns.svc.cluster.local.',
    '*.svc.cluster.local',
    '*.example.com:8443',
  ]) {
    assert.ok(parseAllowedTargets(good) !== undefined, good);
  }
  for (const bad of [
    '',
    'a,,b',
    '10.0.0.0/33',
    '::/129',
    'host:0',
    'host:65536',
    'host:port',
    'http://x',
    '[host]:1',
    '*.',
    '**.x',
    'a.*.b',
    'a b',
    '10.0.0.1/8x',
  ]) {
    assert.equal(parseAllowedTargets(bad), undefined, bad);
  }
});

test('replay guard – mapped and NAT64 IPv6 addresses are checked as the IPv4 address they carry', () => {
  assert.deepEqual(effectiveAddress('::ffff:169.254.169.254'), {
    address: '169.254.169.254',
    family: 'ipv4',
  });
  assert.deepEqual(effectiveAddress('::ffff:a9fe:a9fe'), { address: '169.254.169.254', family: 'ipv4' });
  assert.deepEqual(effectiveAddress('64:ff9b::a9fe:a9fe'), { address: '169.254.169.254', family: 'ipv4' });
  // IPv4-translated (RFC 2765) and the local-use NAT64 prefix (RFC 8215), as a black-box test found.
  assert.deepEqual(effectiveAddress('::ffff:0:a9fe:a9fe'), { address: '169.254.169.254', family: 'ipv4' });
  assert.deepEqual(effectiveAddress('64:ff9b:1::a9fe:a9fe'), { address: '169.254.169.254', family: 'ipv4' });
  assert.deepEqual(effectiveAddress('fe80::1'), { address: 'fe80::1', family: 'ipv6' });
  assert.deepEqual(effectiveAddress('10.1.2.3'), { address: '10.1.2.3', family: 'ipv4' });
});

test('replay guard – by default any address but link-local and metadata ones, whatever form they are written in', async () => {
  const guard = new ReplayGuard(rules('*'), table({}));
  for (const ok of ['127.0.0.1', '10.0.0.5', '::1', '2001:db8::1', '100.100.100.199']) {
    assert.equal(await verdict(guard, ok), `dial ${ok}`);
  }
  for (const refused of [
    '169.254.169.254',
    '169.254.0.1',
    '[::ffff:169.254.169.254]',
    '::ffff:a9fe:a9fe',
    '64:ff9b::a9fe:a9fe',
    '::ffff:0:a9fe:a9fe',
    '64:ff9b:1::a9fe:a9fe',
    'fe80::1',
    'fe80::1%lo',
    'febf::1',
    'fd00:ec2::254',
    '100.100.100.200',
    '168.63.129.16',
  ]) {
    assert.match(
      await verdict(guard, refused),
      /^ECHO_ERR_REPLAY_TARGET_REFUSED: .*link-local or cloud metadata/,
      refused,
    );
  }
});

test('replay guard – a name is judged by every address it resolves to, and the checked one is dialled', async () => {
  const resolver = table({
    'app.test': ['127.0.0.1', '::1'],
    'rebind.test': ['127.0.0.1', '169.254.169.254'],
    'v6meta.test': ['::1', 'fd00:ec2::254'],
  });
  const guard = new ReplayGuard(rules('*'), resolver);
  assert.equal(await verdict(guard, 'app.test'), 'dial 127.0.0.1,::1');
  assert.match(
    await verdict(guard, 'rebind.test', 8080),
    /refused: it resolves to 169\.254\.169\.254: a link-local/,
  );
  assert.match(await verdict(guard, 'rebind.test', 8080), /replay target rebind\.test:8080 refused/);
  assert.match(await verdict(guard, 'v6meta.test'), /it resolves to fd00:ec2::254/);
});

test('replay guard – metadata names are refused before they are even resolved', async () => {
  const resolver = table({ 'metadata.google.internal': ['127.0.0.1'] });
  const guard = new ReplayGuard(rules('*'), resolver);
  for (const name of ['metadata.google.internal', 'METADATA.google.internal.', 'metadata', 'instance-data']) {
    assert.match(await verdict(guard, name), /names a cloud metadata service/, name);
  }
  assert.deepEqual(resolver.asked, []);
});

test('replay guard – a list allows only what it names; naming a metadata address or name allows it', async () => {
  const resolver = table({
    'app.test': ['127.0.0.1'],
    'other.test': ['10.1.1.1'],
    'metadata.google.internal': ['169.254.169.254'],
  });
  const only = new ReplayGuard(rules('10.0.0.0/8, [::1]:8080'), resolver);
  assert.equal(await verdict(only, 'other.test'), 'dial 10.1.1.1');
  assert.match(
    await verdict(only, 'app.test'),
    /it resolves to 127\.0\.0\.1: not in ECHO_REPLAY_ALLOWED_TARGETS/,
  );
  assert.equal(await verdict(only, '::1', 8080), 'dial ::1');
  assert.match(await verdict(only, '::1', 8081), /not in ECHO_REPLAY_ALLOWED_TARGETS/);
  assert.match(await verdict(only, '169.254.169.254'), /not in ECHO_REPLAY_ALLOWED_TARGETS/);

  const metadata = new ReplayGuard(rules('*, 169.254.169.254'), resolver);
  assert.equal(await verdict(metadata, '169.254.169.254'), 'dial 169.254.169.254');
  assert.match(await verdict(metadata, '169.254.169.253'), /link-local/);
  const byName = new ReplayGuard(rules('metadata.google.internal:80'), resolver);
  assert.equal(await verdict(byName, 'metadata.google.internal'), 'dial 169.254.169.254');
  assert.match(await verdict(byName, 'metadata.google.internal', 443), /not in ECHO_REPLAY_ALLOWED_TARGETS/);
});

test('replay guard – *.domain trusts its subdomains (not the domain itself), on the port given', async () => {
  const resolver = table({
    'echo.ns.svc.cluster.local': ['10.96.0.7'],
    'svc.cluster.local': ['10.96.0.1'],
    'evilsvc.cluster.local': ['10.96.0.2'],
  });
  const guard = new ReplayGuard(rules('*.svc.cluster.local:8080'), resolver);
  assert.equal(await verdict(guard, 'echo.ns.svc.cluster.local', 8080), 'dial 10.96.0.7');
  assert.match(await verdict(guard, 'echo.ns.svc.cluster.local', 80), /not in ECHO_REPLAY_ALLOWED_TARGETS/);
  assert.match(await verdict(guard, 'svc.cluster.local', 8080), /not in ECHO_REPLAY_ALLOWED_TARGETS/);
  assert.match(await verdict(guard, 'evilsvc.cluster.local', 8080), /not in ECHO_REPLAY_ALLOWED_TARGETS/);
});
