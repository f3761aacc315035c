import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { helm, helmSkip } from '../helpers/helm.ts';
import { loadYamlDocuments } from './crd-schema.ts';
import { kubernetesProblems } from './k8s-models.ts';

const CHART = join(import.meta.dirname, '..', '..', 'charts', 'echo-chaos');

// biome-ignore lint/suspicious/noExplicitAny: rendered YAML is walked field by field below.
type Any = any;

function deployments(...args: string[]): Any[] {
  const docs = loadYamlDocuments(helm(['template', 'echo-chaos', CHART, ...args])) as Any[];
  return docs.filter((d) => d?.kind === 'Deployment');
}

describe('chart echo-chaos – admin token', { skip: helmSkip() }, () => {
  test('chart – adminToken.existingSecret mounts the Secret and sets ECHO_ADMIN_TOKEN_FILE in the echo and operator pods', () => {
    const args = [
      '--set',
      'operator.enabled=true',
      '--set',
      'adminToken.existingSecret=echo-admin',
      '--set',
      'adminToken.key=bearer',
    ];
    const found = deployments(...args);
    assert.equal(found.length, 2, 'the echo and the operator Deployments');
    for (const deployment of found) {
      const pod = deployment.spec.template.spec;
      const container = pod.containers[0];
      const env = container.env.find((e: Any) => e.name === 'ECHO_ADMIN_TOKEN_FILE');
      assert.equal(env?.value, '/etc/echo-chaos-admin/bearer', deployment.metadata.name);
      assert.equal(
        container.env.find((e: Any) => e.name === 'ECHO_ADMIN_TOKEN'),
        undefined,
        'never the token itself',
      );
      const mount = container.volumeMounts.find((m: Any) => m.name === 'admin-token');
      assert.deepEqual(mount, { name: 'admin-token', mountPath: '/etc/echo-chaos-admin', readOnly: true });
      const volume = pod.volumes.find((v: Any) => v.name === 'admin-token');
      assert.deepEqual(volume.secret, {
        secretName: 'echo-admin',
        items: [{ key: 'bearer', path: 'bearer' }],
      });
      assert.deepEqual(kubernetesProblems(deployment), []);
    }
  });

  test('chart – by default no Secret is mounted and the admin routes stay open', () => {
    for (const deployment of deployments('--set', 'operator.enabled=true')) {
      const pod = deployment.spec.template.spec;
      assert.equal(
        pod.volumes.find((v: Any) => v.name === 'admin-token'),
        undefined,
      );
      assert.equal(
        pod.containers[0].env.find((e: Any) => e.name === 'ECHO_ADMIN_TOKEN_FILE'),
        undefined,
      );
    }
  });

  test('chart – values.schema.json refuses a malformed Secret name or an empty key', () => {
    for (const bad of [
      ['--set', 'adminToken.existingSecret=Not_A_Name'],
      ['--set', 'adminToken.key='],
      ['--set', 'adminToken.secret=x'],
    ]) {
      assert.throws(
        () => helm(['template', 'x', CHART, ...bad]),
        /values don't meet the specifications/,
        bad.join(' '),
      );
    }
  });
});
