import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import {
  MANIFESTS_PATH,
  OPERATOR_MANIFESTS_PATH,
  renderManifests,
  renderOperatorManifests,
} from '../../scripts/gen-manifests.ts';
import { validateScenarios } from '../../src/scenario/index.ts';
import { helmSkip } from '../helpers/helm.ts';
import { compileEchoScenarioValidator, readYamlDocuments } from './crd-schema.ts';
import { kubernetesProblems } from './k8s-models.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const EXAMPLES = join(ROOT, 'manifests', 'examples');

// biome-ignore lint/suspicious/noExplicitAny: example YAML is walked field by field below.
type Any = any;

const skipHelm = helmSkip();

function examples(): Any[] {
  return readdirSync(EXAMPLES)
    .filter((f) => f.endsWith('.yaml'))
    .sort()
    .flatMap((f) => readYamlDocuments(join(EXAMPLES, f)));
}

describe('manifests', () => {
  test('manifests – the checked-in render equals the chart rendered with defaults', {
    skip: skipHelm,
  }, () => {
    assert.equal(
      readFileSync(join(ROOT, MANIFESTS_PATH), 'utf8'),
      renderManifests(),
      `${MANIFESTS_PATH} is stale: run npx node scripts/gen-manifests.ts --write`,
    );
  });

  test('manifests – every rendered object validates against the API schema, field names included', () => {
    const docs = readYamlDocuments(join(ROOT, MANIFESTS_PATH));
    assert.ok(docs.some((d) => d['kind'] === 'CustomResourceDefinition'));
    assert.deepEqual(
      docs.flatMap((d) => kubernetesProblems(d)),
      [],
    );
  });

  test('manifests – the checked-in operator render equals the chart rendered with operator.enabled', {
    skip: skipHelm,
  }, () => {
    assert.equal(
      readFileSync(join(ROOT, OPERATOR_MANIFESTS_PATH), 'utf8'),
      renderOperatorManifests(),
      `${OPERATOR_MANIFESTS_PATH} is stale: run npx node scripts/gen-manifests.ts --write`,
    );
  });

  test('manifests – manifests/operator/ adds the operator only: valid, nothing twice, all for namespace default', () => {
    const echo = readYamlDocuments(join(ROOT, MANIFESTS_PATH));
    const operator = readYamlDocuments(join(ROOT, OPERATOR_MANIFESTS_PATH)) as Any[];
    assert.deepEqual(
      operator.flatMap((d) => kubernetesProblems(d)),
      [],
    );
    assert.deepEqual(operator.map((d) => d.kind).sort(), [
      'Deployment',
      'Role',
      'Role',
      'RoleBinding',
      'RoleBinding',
      'ServiceAccount',
    ]);
    const ids = (docs: Any[]) => docs.map((d) => `${d.kind}/${d.metadata.name}`);
    const both = ids(echo).filter((id) => ids(operator).includes(id));
    assert.deepEqual(both, [], 'an object in both files');
    const deployment = operator.find((d) => d.kind === 'Deployment');
    const env = Object.fromEntries(
      deployment.spec.template.spec.containers[0].env.map((e: Any) => [e.name, e.value]),
    );
    assert.equal(env.WATCH_NAMESPACE, 'default');
    assert.equal(deployment.spec.template.spec.serviceAccountName, 'echo-chaos-operator');
    for (const binding of operator.filter((d) => d.kind === 'RoleBinding')) {
      assert.deepEqual(binding.subjects, [
        { kind: 'ServiceAccount', name: 'echo-chaos-operator', namespace: 'default' },
      ]);
    }
    // The operator pushes to the Service the example EchoScenario targets, in the same namespace.
    const byService = examples().find(
      (d) => d.kind === 'EchoScenario' && d.spec.target.service !== undefined,
    );
    assert.equal(byService.metadata.namespace ?? 'default', 'default');
  });

  test('manifests – the example EchoScenarios pass the CRD schema and the echo service', () => {
    const validate = compileEchoScenarioValidator();
    const scenarios = examples().filter((d) => d.kind === 'EchoScenario');
    // Both forms of target: a Service (the chart's, or a proxy sidecar's) and a selector.
    assert.deepEqual([...new Set(scenarios.map((s) => Object.keys(s.spec.target).sort().join()))].sort(), [
      'port,selector',
      'port,service',
    ]);
    for (const scenario of scenarios) {
      assert.deepEqual(validate(scenario), [], scenario.metadata.name);
      const { target: _, ...fields } = scenario.spec;
      assert.equal(validateScenarios([fields]).ok, true, scenario.metadata.name);
    }
  });

  test('manifests – the sidecar example is a valid Deployment the selector example targets', () => {
    const docs = examples();
    const deployments = docs.filter((d) => d.kind === 'Deployment');
    assert.deepEqual(
      deployments.flatMap((d) => kubernetesProblems(d)),
      [],
    );
    const bySelector = docs.find((d) => d.kind === 'EchoScenario' && d.spec.target.selector !== undefined);
    const [app] = deployments;
    const labels = app.spec.template.metadata.labels;
    for (const [key, value] of Object.entries(bySelector.spec.target.selector.matchLabels)) {
      assert.equal(labels[key], value, `pod label ${key}`);
    }
    const ports = app.spec.template.spec.containers.flatMap((c: Any) =>
      (c.ports ?? []).map((p: Any) => p.name),
    );
    assert.ok(ports.includes(bySelector.spec.target.port), 'the selector names a port of the sidecar');
    const byService = docs.find((d) => d.kind === 'EchoScenario' && d.spec.target.service !== undefined);
    const service = readYamlDocuments(join(ROOT, MANIFESTS_PATH)).find((d) => d['kind'] === 'Service') as Any;
    assert.equal(byService.spec.target.service, service.metadata.name);
  });
});
