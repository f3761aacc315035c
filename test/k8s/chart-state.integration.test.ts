/**
 * The chart's shared state (issue #33): `state.redis.url` or `state.redis.existingSecret` sets
 * ECHO_STATE_URL on the echo container, real `helm template` renders, the service loads what it
 * renders, and a bad or doubled value stops the render naming it.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { loadConfig } from '../../src/echo/config.ts';
import { helm, helmSkip } from '../helpers/helm.ts';
import { loadYamlDocuments } from './crd-schema.ts';
import { kubernetesProblems } from './k8s-models.ts';

const CHART = join(import.meta.dirname, '..', '..', 'charts', 'echo-chaos');
const URL_VALUE = 'redis://redis.default.svc:6379/2';

// biome-ignore lint/suspicious/noExplicitAny: rendered YAML is walked field by field below.
type Any = any;

function echoContainer(...args: string[]): { deployment: Any; env: Any[] } {
  const docs = loadYamlDocuments(helm(['template', 'echo-chaos', CHART, ...args])) as Any[];
  const deployment = docs.find(
    (d) => d.kind === 'Deployment' && !String(d.metadata.name).endsWith('operator'),
  );
  const [echo] = deployment.spec.template.spec.containers;
  return { deployment, env: echo.env };
}

function refuses(args: string[], named: RegExp): void {
  assert.throws(
    () => helm(['template', 'x', CHART, ...args]),
    (err: Any) => {
      assert.match(String(err.stderr), named, args.join(' '));
      return true;
    },
    args.join(' '),
  );
}

describe('chart echo-chaos – shared state', { skip: helmSkip() }, () => {
  test('chart – state.redis.url sets ECHO_STATE_URL, and the service loads it', () => {
    const { deployment, env } = echoContainer(
      '--set',
      `state.redis.url=${URL_VALUE}`,
      '--set',
      'replicaCount=3',
    );
    const state = env.find((e: Any) => e.name === 'ECHO_STATE_URL');
    assert.equal(state?.value, URL_VALUE);
    assert.deepEqual(kubernetesProblems(deployment), []);
    assert.equal(loadConfig({ ECHO_STATE_URL: state.value }).stateUrl?.href, URL_VALUE);
  });

  test('chart – state.redis.existingSecret takes ECHO_STATE_URL from the Secret, by its key', () => {
    const { env } = echoContainer('--set', 'state.redis.existingSecret=redis-url,state.redis.key=uri');
    const state = env.find((e: Any) => e.name === 'ECHO_STATE_URL');
    assert.deepEqual(state?.valueFrom, { secretKeyRef: { name: 'redis-url', key: 'uri' } });
    assert.equal(state?.value, undefined);
  });

  test('chart – without state.redis the pods keep their own state: no ECHO_STATE_URL', () => {
    const { env } = echoContainer();
    assert.equal(
      env.some((e: Any) => e.name === 'ECHO_STATE_URL'),
      false,
    );
  });

  test('chart – state.redis.deploy runs a Redis for the release, reachable from the echo pods only, and points them at it', () => {
    const docs = loadYamlDocuments(
      helm(['template', 'trial', CHART, '--set', 'state.redis.deploy=true,replicaCount=3']),
    ) as Any[];
    const redis = docs.find((d) => d.kind === 'Deployment' && d.metadata.name === 'trial-echo-chaos-redis');
    const service = docs.find((d) => d.kind === 'Service' && d.metadata.name === 'trial-echo-chaos-redis');
    const policy = docs.find(
      (d) => d.kind === 'NetworkPolicy' && d.metadata.name === 'trial-echo-chaos-redis',
    );
    assert.ok(
      redis && service && policy,
      'a Deployment, a Service and a NetworkPolicy named trial-echo-chaos-redis',
    );
    for (const doc of [redis, service, policy]) assert.deepEqual(kubernetesProblems(doc), [], doc.kind);
    const [container] = redis.spec.template.spec.containers;
    assert.deepEqual(container.args.slice(0, 4), ['--save', '', '--appendonly', 'no']);
    assert.ok(container.readinessProbe && container.livenessProbe && container.resources.limits.memory);
    // The Service reaches the Redis pod; the policy admits the echo pods, on 6379 only.
    assert.deepEqual(service.spec.selector, redis.spec.selector.matchLabels);
    assert.deepEqual(policy.spec.podSelector.matchLabels, redis.spec.selector.matchLabels);
    const echo = docs.find((d) => d.kind === 'Deployment' && d.metadata.name === 'trial-echo-chaos');
    assert.deepEqual(policy.spec.ingress[0].from[0].podSelector.matchLabels, echo.spec.selector.matchLabels);
    assert.deepEqual(policy.spec.ingress[0].ports, [{ port: 6379, protocol: 'TCP' }]);
    const url = echo.spec.template.spec.containers[0].env.find(
      (e: Any) => e.name === 'ECHO_STATE_URL',
    )?.value;
    assert.equal(url, 'redis://trial-echo-chaos-redis:6379');
    assert.equal(loadConfig({ ECHO_STATE_URL: url }).stateUrl?.hostname, service.metadata.name);
    // Without deploy, nothing of it.
    const plain = loadYamlDocuments(helm(['template', 'trial', CHART])) as Any[];
    assert.equal(
      plain.some((d) => String(d?.metadata?.name).endsWith('-redis')),
      false,
    );
  });

  test('chart – a bad or doubled state value stops the render, naming it', () => {
    refuses(
      ['--set', `state.redis.deploy=true,state.redis.url=${URL_VALUE}`],
      /state\.redis\.deploy and state\.redis\.url \(or existingSecret\) are both set/,
    );
    refuses(
      ['--set', 'state.redis.deploy=true,state.redis.maxmemory=lots'],
      /at '\/state\/redis\/maxmemory'/,
    );
    refuses(['--set', 'state.redis.url=http://redis:6379'], /at '\/state\/redis\/url'/);
    refuses(['--set', 'state.redis.url=redis://redis/16'], /at '\/state\/redis\/url'/);
    refuses(['--set', 'state.redis.uri=redis://redis'], /at '\/state\/redis'.*uri/);
    refuses(
      ['--set', `state.redis.url=${URL_VALUE},state.redis.existingSecret=s`],
      /state\.redis\.url and state\.redis\.existingSecret are both set/,
    );
    refuses(
      ['--set', `state.redis.url=${URL_VALUE},env.ECHO_STATE_URL=redis://other`],
      /env\.ECHO_STATE_URL and state\.redis both set ECHO_STATE_URL/,
    );
  });
});
