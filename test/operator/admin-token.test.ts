/**
 * Echo pods locked with `ECHO_ADMIN_TOKEN`: the operator pushes with `Authorization: Bearer` and
 * the pods take its scenarios; an operator without the token gets 401s and says so in the status.
 */
import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'node:test';
import { type Fixture, spec, startFixture, until } from './fixture.ts';

const TOKEN = 'operator-test-token-7d1e';

describe('operator – echo pods that need an admin token', () => {
  let f: Fixture;
  afterEach(() => f?.close());

  test('operator – a pod requiring a token gets the scenarios when the operator has the token', async () => {
    f = await startFixture(0);
    const locked = await f.addEchoPod('locked-0', { app: 'echo' }, { ECHO_ADMIN_TOKEN: TOKEN });
    await f.startOperator({ adminToken: TOKEN });
    await f.createScenario('slow', spec('/slow'));
    await until('/slow on the locked pod', async () =>
      ((await f.scenariosOf('locked-0')) as Array<{ path: string }>).some((s) => s.path === '/slow'),
    );
    await until('Synced', async () => (await f.readiness('slow')).ready?.reason === 'Synced');
    // The pod is locked indeed: the same push without the token is refused.
    const res = await fetch(`${locked.url}/scenario`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '[]',
    });
    assert.equal(res.status, 401);
  });

  test('operator – without the token the push is refused, reported as PushFailed, and nothing changes on the pod', async () => {
    f = await startFixture(0);
    await f.addEchoPod('locked-0', { app: 'echo' }, { ECHO_ADMIN_TOKEN: TOKEN });
    await f.startOperator();
    await f.createScenario('slow', spec('/slow'));
    await until('PushFailed', async () => (await f.readiness('slow')).ready?.reason === 'PushFailed');
    const ready = (await f.readiness('slow')).ready;
    assert.match(ready?.message ?? '', /401/);
    assert.doesNotMatch(ready?.message ?? '', new RegExp(TOKEN));
    assert.deepEqual(await f.scenariosOf('locked-0'), []);
  });
});
