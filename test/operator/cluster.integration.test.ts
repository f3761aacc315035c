/**
 * The operator's behaviour as a user of the API sees it, through EchoScenario status only: one fixture
 * (five echo pods behind the Service `echo`, one in-process operator) shared by the tests, against the
 * API double or, with `KUBECONFIG` set, that cluster (see fixture.ts).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { CLUSTER, type Fixture, startFixture, until } from './fixture.ts';

describe(`operator e2e against ${CLUSTER ? 'the KUBECONFIG cluster' : 'the API double'}`, () => {
  let f: Fixture;

  before(async () => {
    f = await startFixture();
    await f.startOperator();
  });
  after(() => f?.close());

  async function create(name: string, path: string, extra: object = {}): Promise<void> {
    await f.createScenario(name, {
      target: { service: 'echo', port: 'http' },
      path,
      responses: [{ status: 503 }],
      ...extra,
    });
  }

  async function reason(name: string): Promise<string | undefined> {
    return (await f.readiness(name)).ready?.reason;
  }

  test('operator e2e – a new EchoScenario is Synced on every endpoint, and an update is observed', async () => {
    await create('sync', '/e2e/sync');
    await until('Synced', async () => (await reason('sync')) === 'Synced');
    const synced = await f.readiness('sync');
    assert.equal(synced.totalEndpoints, 5);
    assert.equal(synced.syncedEndpoints, 5);
    await f.patchScenario('sync', { spec: { responses: [{ status: 429 }] } });
    await until('the update Synced', async () => {
      const s = await f.readiness('sync');
      return s.observedGeneration === s.generation && s.generation === 2 && s.ready?.reason === 'Synced';
    });
  });

  test('operator e2e – conflicting, invalid and target-less EchoScenarios get their reason', async () => {
    // Creation times are kept to the second and ties go by name, so the names agree with the order.
    await create('a-older', '/e2e/same');
    await until('older Synced', async () => (await reason('a-older')) === 'Synced');
    await create('b-newer', '/e2e/same');
    await create('invalid', '/e2e/invalid', {
      responses: [{ status: 200, headers: { Connection: 'close' } }],
    });
    await create('lost', '/e2e/lost', { target: { service: 'missing', port: 'http' } });
    await until('Conflict', async () => (await reason('b-newer')) === 'Conflict');
    await until('Invalid', async () => (await reason('invalid')) === 'Invalid');
    await until('TargetNotFound', async () => (await reason('lost')) === 'TargetNotFound');
    assert.equal(await reason('a-older'), 'Synced');
  });
});
