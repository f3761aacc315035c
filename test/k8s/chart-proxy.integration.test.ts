/**
 * The chart as a fault proxy (issue #32): `proxy.upstream` sets ECHO_UPSTREAM (with
 * `proxy.timeout` and `proxy.hostHeader`) on the echo container, real `helm template` renders, and
 * the service loads what it renders; without it the pod is the plain echo service.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { DURATION_PATTERN } from '@echo-chaos/obs/internal';
import { loadConfig } from '../../src/echo/config.ts';
import { helm, helmSkip } from '../helpers/helm.ts';
import { loadYamlDocuments } from './crd-schema.ts';
import { kubernetesProblems } from './k8s-models.ts';

const CHART = join(import.meta.dirname, '..', '..', 'charts', 'echo-chaos');
const UPSTREAM = 'http://orders.default.svc:8080';

// biome-ignore lint/suspicious/noExplicitAny: rendered YAML is walked field by field below.
type Any = any;

/** The echo Deployment and Service of `helm template RELEASE` with `args`. */
function render(release: string, ...args: string[]): { deployment: Any; service: Any } {
  const docs = loadYamlDocuments(helm(['template', release, CHART, ...args])) as Any[];
  const deployment = docs.find((d) => d.kind === 'Deployment');
  const service = docs.find((d) => d.kind === 'Service');
  return { deployment, service };
}

function echoEnv(deployment: Any): Record<string, string> {
  const [echo] = deployment.spec.template.spec.containers;
  return Object.fromEntries(echo.env.map((e: Any) => [e.name, e.value]));
}

const PROXY_VARIABLES = ['ECHO_UPSTREAM', 'ECHO_UPSTREAM_TIMEOUT', 'ECHO_UPSTREAM_HOST_HEADER'];

describe('chart echo-chaos – fault proxy', { skip: helmSkip() }, () => {
  test('chart – proxy.upstream sets ECHO_UPSTREAM, with the timeout and Host defaults, in front of the Service', () => {
    // The docs' use (docs/kubernetes/index.md): helm install orders-chaos charts/echo-chaos --set proxy.upstream=...
    const { deployment, service } = render('orders-chaos', '--set', `proxy.upstream=${UPSTREAM}`);
    const env = echoEnv(deployment);
    assert.equal(env['ECHO_UPSTREAM'], UPSTREAM);
    assert.equal(env['ECHO_UPSTREAM_TIMEOUT'], '30s');
    assert.equal(env['ECHO_UPSTREAM_HOST_HEADER'], 'upstream');
    assert.deepEqual(kubernetesProblems(deployment), []);
    // Clients call this Service instead of the upstream's; it reaches the proxying container.
    assert.equal(service.metadata.name, 'orders-chaos-echo-chaos');
    const [echo] = deployment.spec.template.spec.containers;
    const target = service.spec.ports[0].targetPort;
    assert.ok(
      echo.ports.some((p: Any) => p.name === target),
      `targetPort ${target} names a port of the echo container`,
    );
    assert.equal(echo.readinessProbe.httpGet.path, '/ready');
    assert.equal(echo.livenessProbe.httpGet.path, '/health');
  });

  test('chart – proxy.timeout and proxy.hostHeader set ECHO_UPSTREAM_TIMEOUT and ECHO_UPSTREAM_HOST_HEADER', () => {
    const { deployment } = render(
      'echo-chaos',
      '--set',
      'proxy.upstream=https://api.example.com/v2,proxy.timeout=2.5s,proxy.hostHeader=preserve',
    );
    const env = echoEnv(deployment);
    assert.equal(env['ECHO_UPSTREAM'], 'https://api.example.com/v2');
    assert.equal(env['ECHO_UPSTREAM_TIMEOUT'], '2.5s');
    assert.equal(env['ECHO_UPSTREAM_HOST_HEADER'], 'preserve');
    assert.deepEqual(kubernetesProblems(deployment), []);
  });

  test('chart – the service loads the proxy settings the chart renders', () => {
    const { deployment } = render(
      'echo-chaos',
      '--set',
      `proxy.upstream=${UPSTREAM},proxy.timeout=10s,proxy.hostHeader=preserve`,
    );
    const env = echoEnv(deployment);
    const config = loadConfig(Object.fromEntries(PROXY_VARIABLES.map((name) => [name, env[name]])));
    assert.equal(config.upstream?.href, `${UPSTREAM}/`);
    assert.equal(config.upstreamTimeoutMs, 10_000);
    assert.equal(config.upstreamHostHeader, 'preserve');
  });

  test('chart – without proxy.upstream the pod is the plain echo service: no ECHO_UPSTREAM*', () => {
    for (const args of [[], ['--set', 'proxy.timeout=5s,proxy.hostHeader=preserve']]) {
      const env = echoEnv(render('echo-chaos', ...args).deployment);
      assert.deepEqual(
        PROXY_VARIABLES.filter((name) => name in env),
        [],
        args.join(' '),
      );
    }
  });

  test('chart – values.schema.json refuses a bad proxy value, naming it', () => {
    for (const [value, named] of [
      ['proxy.upstream=ftp://x', /at '\/proxy\/upstream'.*ftp:\/\/x/],
      ['proxy.upstream=orders:8080', /at '\/proxy\/upstream'/],
      ['proxy.upstream=http://', /at '\/proxy\/upstream'/],
      ['proxy.upstream=http://orders/?debug=1', /at '\/proxy\/upstream'/],
      ['proxy.upstream=http://user:pw@orders', /at '\/proxy\/upstream'/],
      ['proxy.hostHeader=bogus', /at '\/proxy\/hostHeader'.*upstream.*preserve/],
      ['proxy.timeout=soon', /at '\/proxy\/timeout'/],
      // A bare number would be milliseconds: --set makes it a number, which the schema refuses.
      ['proxy.timeout=30', /at '\/proxy\/timeout'/],
      // Zero would be no time at all for the upstream: every forward a 504.
      ['proxy.timeout=0s', /at '\/proxy\/timeout'/],
      ['proxy.timeout=0.0ms', /at '\/proxy\/timeout'/],
      ['proxy.upstrem=http://orders', /at '\/proxy'.*upstrem/],
    ] as const) {
      assert.throws(
        () => helm(['template', 'x', CHART, '--set', value]),
        (err: Any) => {
          const stderr = String(err.stderr);
          assert.match(stderr, /values don't meet the specifications/, value);
          assert.match(stderr, named, value);
          return true;
        },
        value,
      );
    }
  });

  test("chart – the docs' proxy install renders, and its clients' URL is the release's Service", () => {
    const page = readFileSync(join(CHART, '..', '..', 'docs', 'kubernetes', 'index.md'), 'utf8');
    const at = page.indexOf('\n## A fault proxy in front of a Service\n');
    assert.ok(at !== -1, 'docs/kubernetes/index.md has a ## A fault proxy in front of a Service section');
    const section = page.slice(at);
    const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1];
    assert.ok(block !== undefined, 'the section has an sh block');
    const install = /^helm install (\S+) charts\/echo-chaos --set proxy\.upstream=(\S+)$/m.exec(block);
    assert.ok(install !== null, block);
    const [, release, upstream] = install;
    const { deployment, service } = render(release!, '--set', `proxy.upstream=${upstream}`);
    assert.equal(echoEnv(deployment)['ECHO_UPSTREAM'], upstream);
    const clients = /# clients call (\S+) instead of (\S+)$/m.exec(block);
    assert.ok(clients !== null, block);
    const url = new URL(clients[1]!);
    assert.equal(url.hostname, service.metadata.name);
    assert.equal(Number(url.port), service.spec.ports[0].port);
    assert.equal(new URL(clients[2]!).port, new URL(upstream!).port);
  });

  test('chart – ECHO_UPSTREAM* in env beside proxy.upstream is refused in one line naming both', () => {
    for (const name of PROXY_VARIABLES) {
      assert.throws(
        () => helm(['template', 'x', CHART, '--set', `proxy.upstream=${UPSTREAM},env.${name}=x`]),
        (err: Any) => {
          assert.match(String(err.stderr), new RegExp(`env\\.${name} and proxy\\.upstream both set ${name}`));
          return true;
        },
        name,
      );
    }
    // Alone, env still passes anything through (the chart's escape hatch).
    const env = echoEnv(render('x', '--set', `env.ECHO_UPSTREAM=${UPSTREAM}`).deployment);
    assert.equal(env['ECHO_UPSTREAM'], UPSTREAM);
  });

  test('chart – proxy.timeout takes the one duration grammar', () => {
    const schema = JSON.parse(readFileSync(join(CHART, 'values.schema.json'), 'utf8'));
    assert.equal(schema.properties.proxy.properties.timeout.pattern, `^${DURATION_PATTERN}$`);
  });
});
