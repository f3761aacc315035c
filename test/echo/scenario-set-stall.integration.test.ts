import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MAX_SET_NODES } from '../../src/scenario/index.ts';
import { assertLive, type EchoProcess, probeLiveness, startEchoProcess } from '../helpers/liveness.ts';

/**
 * Issue #30: a scenario set is work for the event loop in proportion to what it holds. A valid set
 * of 1,000 scenarios of 1,000 responses (14 MiB) held `/health` for 1.6 s, a JSON array of 8 million
 * numbers for 0.3 s before it was refused, a 12 MiB YAML set for 0.24 s. Now a JSON body's values
 * are counted as it arrives (more than MAX_SET_NODES is refused before it is parsed), a set within
 * the bound is checked in tens of milliseconds, and YAML is taken up to 1 MiB; `/health`, probed from
 * this process, stays under 100 ms p99 throughout, and a refused set leaves the old one in place.
 */

async function post(
  echo: EchoProcess,
  body: string,
  type = 'application/json',
): Promise<{ status: number; code?: string; message?: string }> {
  try {
    const res = await fetch(`${echo.url}/scenario`, {
      method: 'POST',
      headers: { 'Content-Type': type },
      body,
      signal: AbortSignal.timeout(20_000),
    });
    const json = (await res.json()) as { error?: { code: string; message: string } };
    return { status: res.status, code: json.error?.code, message: json.error?.message };
  } catch (error) {
    // A server refusing a large body early may close the connection while it is being sent.
    return { status: 0, message: String(error) };
  }
}

/** `count` scenarios of `responses` responses each: `count * (4 + 2 * responses)` values. */
function manyResponses(count: number, responses: number): string {
  return JSON.stringify(
    Array.from({ length: count }, (_, i) => ({
      name: `s${i}`,
      path: `/many/${i}`,
      responses: Array.from({ length: responses }, () => ({ status: 201 })),
    })),
  );
}

test('scenario sets – crowded, huge and YAML sets are taken or refused without holding /health; the old set stays', async () => {
  const echo = await startEchoProcess();
  try {
    // At the bound: 1,000 scenarios of 14 responses are 32,000 values.
    const atBound = manyResponses(1000, 14);
    assert.ok(1000 * (4 + 2 * 14) <= MAX_SET_NODES);
    const bigBodies = JSON.stringify(
      Array.from({ length: 12 }, (_, i) => ({
        name: `big-${i}`,
        path: `/big/${i}`,
        responses: [{ status: 200, body: 'b'.repeat(1_048_576) }],
      })),
    );
    const crowded = manyResponses(1000, 1000);
    const numbers = `[${Array(8_000_000).fill(0).join(',')}]`;
    const yaml = Array.from(
      { length: 12 },
      (_, i) =>
        `- name: y${i}\n  path: /y/${i}\n  responses:\n    - status: 200\n      body: ${'y'.repeat(1_000_000)}\n`,
    ).join('');

    const report = await assertLive('while scenario sets are posted', async () => {
      const prober = probeLiveness(echo.port, { timeoutMs: 5_000 });
      const answers = {
        atBound: await post(echo, atBound),
        bigBodies: await post(echo, bigBodies),
        kept: await post(echo, atBound),
        crowded: await post(echo, crowded),
        numbers: await post(echo, numbers),
        yaml: await post(echo, yaml, 'application/yaml'),
      };
      const liveness = await prober.stop();
      assert.equal(answers.atBound.status, 200, JSON.stringify(answers.atBound));
      assert.equal(answers.bigBodies.status, 200, JSON.stringify(answers.bigBodies));
      assert.equal(answers.kept.status, 200, JSON.stringify(answers.kept));
      for (const refused of [answers.crowded, answers.numbers]) {
        assert.equal(refused.status, 400, JSON.stringify(refused));
        assert.equal(refused.code, 'ECHO_ERR_BODY_TOO_COMPLEX');
        assert.equal(refused.message, `request body holds more than ${MAX_SET_NODES} values`);
      }
      // Refused from its Content-Length, before it is read; the connection may close under the client.
      if (answers.yaml.status !== 0) {
        assert.equal(answers.yaml.status, 413, JSON.stringify(answers.yaml));
        assert.equal(answers.yaml.code, 'ECHO_ERR_SCENARIO_YAML_TOO_LARGE');
        assert.match(answers.yaml.message ?? '', /at most 1048576 bytes .*send a larger set as JSON/);
      }
      return liveness;
    });
    assert.ok(report.samplesMs.length > 0);
    // The set at the bound stayed through the refusals, and answers.
    const kept = await fetch(`${echo.url}/many/999`);
    assert.equal(kept.status, 201);
    const list = (await (await fetch(`${echo.url}/scenario`)).json()) as unknown[];
    assert.equal(list.length, 1000);
    // A small YAML set is still taken.
    const small = await post(echo, '- path: /yaml\n  responses:\n    - status: 202\n', 'application/yaml');
    assert.equal(small.status, 200, JSON.stringify(small));
    assert.equal((await fetch(`${echo.url}/yaml`)).status, 202);
  } finally {
    await echo.stop();
  }
});
