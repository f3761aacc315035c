/**
 * The operator's behaviour as a user of the API sees it, through EchoScenario status only, so the
 * same tests run against a real cluster. With `KUBECONFIG` set they talk to that cluster, where
 * echo-chaos and its operator must already run (see src/operator/README.md); without it they run
 * against the in-process API double, five echo servers as pods and an in-process operator.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { CustomObjectsApi, KubeConfig, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { GROUP, PLURAL, VERSION } from '../../src/operator/plan.ts';
import { type Fixture, NS, startFixture, until } from './fixture.ts';

const CLUSTER = process.env['KUBECONFIG'] !== undefined && process.env['KUBECONFIG'] !== '';
const NAMESPACE = CLUSTER ? (process.env['ECHO_CHAOS_TEST_NAMESPACE'] ?? 'default') : NS;
const SERVICE = CLUSTER ? (process.env['ECHO_CHAOS_TEST_SERVICE'] ?? 'echo-chaos') : 'echo';
const PORT = CLUSTER ? (process.env['ECHO_CHAOS_TEST_PORT'] ?? 'http') : 'http';
/** A real cluster schedules, pulls and reconciles at its own pace; the double is held to two seconds. */
const TIMEOUT_MS = CLUSTER ? 30_000 : 2000;
const RUN = randomBytes(3).toString('hex');

interface Status {
  observedGeneration?: number;
  syncedEndpoints?: number;
  totalEndpoints?: number;
  conditions?: Array<{ type: string; status: string; reason: string }>;
}

describe(`operator against ${CLUSTER ? 'the KUBECONFIG cluster' : 'the API double'}`, () => {
  let fixture: Fixture | undefined;
  let custom: CustomObjectsApi;
  const created: string[] = [];
  const base = { group: GROUP, version: VERSION, namespace: NAMESPACE, plural: PLURAL };

  before(async () => {
    if (CLUSTER) {
      const kc = new KubeConfig();
      kc.loadFromDefault();
      custom = kc.makeApiClient(CustomObjectsApi);
    } else {
      fixture = await startFixture();
      await fixture.startOperator();
      custom = fixture.custom;
    }
  });
  after(async () => {
    for (const name of created) {
      await custom.deleteNamespacedCustomObject({ ...base, name }).catch(() => {});
    }
    await fixture?.close();
  });

  async function create(name: string, path: string, extra: object = {}): Promise<string> {
    const full = `e2e-${RUN}-${name}`;
    await custom.createNamespacedCustomObject({
      ...base,
      body: {
        apiVersion: `${GROUP}/${VERSION}`,
        kind: 'EchoScenario',
        metadata: { name: full },
        spec: { target: { service: SERVICE, port: PORT }, path, responses: [{ status: 503 }], ...extra },
      },
    });
    created.push(full);
    return full;
  }

  async function status(name: string): Promise<Status & { reason?: string; generation?: number }> {
    const obj = await custom.getNamespacedCustomObject({ ...base, name });
    const s = (obj.status ?? {}) as Status;
    return {
      ...s,
      reason: s.conditions?.find((c) => c.type === 'Ready')?.reason,
      generation: obj.metadata.generation,
    };
  }

  test('operator e2e – a new EchoScenario is Synced on every endpoint, and an update is observed', async () => {
    const name = await create('sync', `/e2e-${RUN}/sync`);
    await until('Synced', async () => (await status(name)).reason === 'Synced', TIMEOUT_MS);
    const synced = await status(name);
    assert.ok((synced.totalEndpoints ?? 0) > 0);
    assert.equal(synced.syncedEndpoints, synced.totalEndpoints);
    await custom.patchNamespacedCustomObject(
      { ...base, name, body: { spec: { responses: [{ status: 429 }] } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await until(
      'the update Synced',
      async () => {
        const s = await status(name);
        return s.observedGeneration === s.generation && s.generation === 2 && s.reason === 'Synced';
      },
      TIMEOUT_MS,
    );
  });

  test('operator e2e – conflicting, invalid and target-less EchoScenarios get their reason', async () => {
    const path = `/e2e-${RUN}/same`;
    // Creation times are kept to the second and ties go by name, so the names agree with the order.
    const older = await create('a-older', path);
    await until('older Synced', async () => (await status(older)).reason === 'Synced', TIMEOUT_MS);
    const newer = await create('b-newer', path);
    const invalid = await create('invalid', `/e2e-${RUN}/invalid`, {
      responses: [{ status: 200, headers: { Connection: 'close' } }],
    });
    const lost = await create('lost', `/e2e-${RUN}/lost`, {
      target: { service: `missing-${RUN}`, port: PORT },
    });
    await until('Conflict', async () => (await status(newer)).reason === 'Conflict', TIMEOUT_MS);
    await until('Invalid', async () => (await status(invalid)).reason === 'Invalid', TIMEOUT_MS);
    await until('TargetNotFound', async () => (await status(lost)).reason === 'TargetNotFound', TIMEOUT_MS);
    assert.equal((await status(older)).reason, 'Synced');
  });
});
