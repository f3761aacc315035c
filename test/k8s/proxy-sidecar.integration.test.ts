/**
 * manifests/examples/proxy-sidecar.yaml (issue #32): echo-chaos in the application's pod, on the
 * port the Service targets, forwarding to the application container on 127.0.0.1. Its structure is
 * checked as the cluster and the operator would read it, then the echo-chaos container's environment
 * and the example EchoScenario run in a real echo-chaos in front of a stand-in application.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { loadConfig } from '../../src/echo/config.ts';
import { resolvePort, selects } from '../../src/operator/endpoints.ts';
import { validateScenarios } from '../../src/scenario/index.ts';
import { startEcho } from '../helpers/echo-server.ts';
import { compileEchoScenarioValidator, readYamlDocuments } from './crd-schema.ts';
import { kubernetesProblems } from './k8s-models.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const EXAMPLE = join(ROOT, 'manifests', 'examples', 'proxy-sidecar.yaml');

// biome-ignore lint/suspicious/noExplicitAny: example YAML is walked field by field below.
type Any = any;

function example(): { deployment: Any; service: Any; scenario: Any } {
  const docs = readYamlDocuments(EXAMPLE) as Any[];
  assert.deepEqual(
    docs.map((d) => d.kind),
    ['Deployment', 'Service', 'EchoScenario'],
  );
  const [deployment, service, scenario] = docs;
  return { deployment, service, scenario };
}

/** The pod, its two containers and echo-chaos's environment. */
function pod(deployment: Any): { spec: Any; app: Any; proxy: Any; env: Record<string, string> } {
  const spec = deployment.spec.template.spec;
  assert.equal(spec.containers.length, 2, 'the application and echo-chaos');
  const proxy = spec.containers.find((c: Any) => c.name === 'echo-chaos');
  const app = spec.containers.find((c: Any) => c !== proxy);
  assert.ok(proxy !== undefined && app !== undefined);
  const env = Object.fromEntries(proxy.env.map((e: Any) => [e.name, String(e.value)]));
  return { spec, app, proxy, env };
}

/** A container's port named or numbered `port`. */
function portOf(container: Any, port: string | number): number | undefined {
  return container.ports?.find((p: Any) => p.name === port || p.containerPort === port)?.containerPort;
}

describe('manifests – proxy sidecar example', () => {
  test('proxy sidecar – a valid Deployment and Service, field names included', () => {
    const { deployment, service } = example();
    assert.deepEqual([...kubernetesProblems(deployment), ...kubernetesProblems(service)], []);
  });

  test('proxy sidecar – the Service targets echo-chaos, which forwards to the application on 127.0.0.1', () => {
    const { deployment, service } = example();
    const { spec, app, proxy, env } = pod(deployment);
    const template = { metadata: deployment.spec.template.metadata, spec };
    assert.ok(selects(service.spec.selector, template), 'the Service selects the pod');
    const [servicePort] = service.spec.ports;
    const echoPort = portOf(proxy, servicePort.targetPort);
    assert.ok(echoPort !== undefined, `targetPort ${servicePort.targetPort} is a port of echo-chaos`);
    assert.equal(portOf(app, servicePort.targetPort), undefined, 'and not of the application');
    assert.equal(env['PORT'], String(echoPort), 'echo-chaos listens on the port the Service targets');
    const upstream = new URL(env['ECHO_UPSTREAM']!);
    assert.equal(upstream.hostname, '127.0.0.1');
    const [appPort] = app.ports;
    assert.equal(Number(upstream.port), appPort.containerPort, "ECHO_UPSTREAM is the application's port");
    assert.notEqual(appPort.containerPort, echoPort);
    assert.ok(app.args.includes(`-listen=:${appPort.containerPort}`), 'the application listens there');
    assert.equal(proxy.image, 'ghcr.io/echo-chaos/echo-chaos:0.1.0', 'the image of manifests/');
  });

  test('proxy sidecar – probes on echo-chaos /health and /ready; shutdown inside the grace period', () => {
    const { spec, app, proxy, env } = pod(example().deployment);
    const echoPort = portOf(proxy, 'http');
    assert.equal(proxy.livenessProbe.httpGet.path, '/health');
    assert.equal(proxy.readinessProbe.httpGet.path, '/ready');
    assert.equal(portOf(proxy, proxy.livenessProbe.httpGet.port), echoPort);
    assert.equal(portOf(proxy, proxy.readinessProbe.httpGet.port), echoPort);
    const config = loadConfig(env);
    assert.ok(spec.terminationGracePeriodSeconds * 1000 > config.drainDelayMs + config.drainTimeoutMs);
    // The application outlives echo-chaos's drain delay, while echo-chaos still accepts and forwards.
    assert.ok(app.lifecycle.preStop.sleep.seconds * 1000 > config.drainDelayMs);
    for (const container of spec.containers) {
      assert.equal(container.securityContext.readOnlyRootFilesystem, true, container.name);
      assert.deepEqual(container.securityContext.capabilities.drop, ['ALL'], container.name);
    }
  });

  test('proxy sidecar – the EchoScenario reaches the echo-chaos container through the Service', () => {
    const { deployment, service, scenario } = example();
    const { spec, proxy } = pod(deployment);
    assert.equal(scenario.spec.target.service, service.metadata.name);
    assert.deepEqual(compileEchoScenarioValidator()(scenario), []);
    const { target: _, ...fields } = scenario.spec;
    assert.equal(validateScenarios([fields]).ok, true);
    // As the operator resolves target.port: a container port of the pod, by name or number.
    assert.equal(resolvePort({ spec }, scenario.spec.target.port), portOf(proxy, 'http'));
  });

  test('proxy sidecar – echo-chaos with the example environment and EchoScenario, in front of an application', async (t) => {
    const { deployment, scenario } = example();
    const { env } = pod(deployment);
    const hosts: string[] = [];
    const app = createServer((req, res) => {
      hosts.push(req.headers.host ?? '');
      res.end('an order\n');
    });
    await new Promise<void>((resolve) => app.listen(0, '127.0.0.1', resolve));
    t.after(() => app.close());
    const upstream = new URL(env['ECHO_UPSTREAM']!);
    upstream.port = String((app.address() as AddressInfo).port);
    const { PORT: _, ...rest } = env;
    const { target: __, ...fields } = scenario.spec;
    const echo = await startEcho(
      { ...rest, ECHO_UPSTREAM: upstream.href },
      { scenarios: [{ name: scenario.metadata.name, ...fields }] },
    );
    t.after(() => echo.close());
    const get = async (path: string) => {
      const res = await fetch(`${echo.url}${path}`);
      return `${res.status} ${(await res.text()).trim()}`;
    };
    // The scenario answers its first `times` requests, then the application does.
    const outage = Array.from({ length: fields.times }, () => `503 ${fields.responses[0].body}`);
    const answers = [];
    for (let i = 0; i <= fields.times; i++) answers.push(await get('/orders/42'));
    assert.deepEqual(answers, [...outage, '200 an order']);
    assert.equal(await get('/catalog'), '200 an order', 'what no scenario matches is forwarded');
    assert.match(await get('/ready'), /^200 /, 'echo-chaos answers its own probes');
    assert.deepEqual(hosts, [new URL(echo.url).host, new URL(echo.url).host], 'the Host the client sent');
  });
});
