import assert from 'node:assert/strict';
import { connect } from 'node:http2';
import { test } from 'node:test';
import { FaultGate, faultHeader } from '../../src/echo/applied.ts';
import { startEcho } from '../helpers/echo-server.ts';
import { countDelta, faultCounts, scrapeValue } from '../helpers/metrics.ts';
import { until } from '../helpers/runtime.ts';

/**
 * Fault telemetry that proves a fault was applied: `echo_faults_injected_total{kind}`, the
 * `X-Echo-Fault` header, `X-Echo-Applied` (with `X-Echo-Explain: true`) and the history entry all
 * say the same; the safety valve (`ECHO_MAX_ACTIVE_FAULTS`) and the master switch
 * (`ECHO_FAULTS_ENABLED`, `PUT /control/faults`).
 */

type Applied = Array<{ kind: string; control: string; source: string; value: string | number }>;

test('FaultGate – takes slots up to the cap, refuses past it, and frees them', () => {
  const gate = new FaultGate(true, 2);
  assert.equal(gate.acquire(), true);
  assert.equal(gate.acquire(), true);
  assert.equal(gate.acquire(), false, 'the third is past the cap');
  assert.equal(gate.active, 2);
  gate.release();
  assert.equal(gate.active, 1);
  assert.equal(gate.acquire(), true);
  gate.release();
  gate.release();
  gate.release();
  assert.equal(gate.active, 0, 'never below zero');
});

test('faultHeader – each kind once, in the order applied', () => {
  const f = (kind: 'delay' | 'status' | 'scenario') => ({
    kind,
    control: 'c',
    source: 'header' as const,
    value: 1,
  });
  assert.equal(faultHeader([]), '');
  assert.equal(faultHeader([f('scenario'), f('delay'), f('delay'), f('status')]), 'scenario,delay,status');
});

test('applied faults – counters, X-Echo-Fault, X-Echo-Applied and history agree for each kind', async (t) => {
  const echo = await startEcho();
  t.after(() => echo.close());
  const cases: Array<{ headers: Record<string, string>; kinds: string; applied: Applied }> = [
    {
      headers: { 'X-Echo-Delay': '20ms', 'X-Echo-Status': '503' },
      kinds: 'delay,status',
      applied: [
        { kind: 'delay', control: 'X-Echo-Delay', source: 'header', value: 20 },
        { kind: 'status', control: 'X-Echo-Status', source: 'header', value: 503 },
      ],
    },
    {
      headers: { 'X-Echo-Error': 'bad-gateway' },
      kinds: 'error',
      applied: [{ kind: 'error', control: 'X-Echo-Error', source: 'header', value: 502 }],
    },
    {
      headers: { 'X-Echo-Chaos': '100' },
      kinds: 'chaos',
      applied: [{ kind: 'chaos', control: 'X-Echo-Chaos', source: 'header', value: -1 }],
    },
    {
      headers: { 'X-Echo-Jitter': '30,0' },
      kinds: 'delay',
      applied: [{ kind: 'delay', control: 'X-Echo-Jitter', source: 'header', value: 30 }],
    },
  ];
  for (const c of cases) {
    const before = await faultCounts(echo.url);
    const r = await fetch(`${echo.url}/applied`, { headers: { ...c.headers, 'X-Echo-Explain': 'true' } });
    await r.arrayBuffer();
    assert.equal(r.headers.get('x-echo-fault'), c.kinds, JSON.stringify(c.headers));
    const applied = JSON.parse(r.headers.get('x-echo-applied') ?? 'null') as Applied;
    // A chaos draw picks its status: take it from the response.
    const expected = c.applied.map((a) => (a.value === -1 ? { ...a, value: r.status } : a));
    assert.deepEqual(applied, expected);
    const delta = countDelta(before, await faultCounts(echo.url));
    const wanted: Record<string, number> = {};
    for (const a of c.applied) wanted[a.kind] = (wanted[a.kind] ?? 0) + 1;
    assert.deepEqual(delta, wanted, `counters for ${JSON.stringify(c.headers)}`);
    const history = (await (await fetch(`${echo.url}/history`)).json()) as Array<{
      request_id: string;
      faults: Applied;
    }>;
    const entry = history.find((e) => e.request_id === r.headers.get('x-request-id'));
    assert.deepEqual(entry?.faults, expected, 'the history entry lists the same faults');
  }

  const plain = await fetch(`${echo.url}/plain`, { headers: { 'X-Echo-Explain': 'true' } });
  assert.equal(plain.headers.get('x-echo-fault'), null);
  assert.equal(plain.headers.get('x-echo-applied'), null, 'nothing applied, nothing to explain');
  const unexplained = await fetch(`${echo.url}/quiet`, { headers: { 'X-Echo-Status': '418' } });
  assert.equal(unexplained.headers.get('x-echo-fault'), 'status');
  assert.equal(unexplained.headers.get('x-echo-applied'), null, 'X-Echo-Applied only when asked');
  const bad = await fetch(`${echo.url}/x`, { headers: { 'X-Echo-Explain': 'yes' } });
  assert.equal(bad.status, 400);
});

test('applied faults – ECHO_DELAY and ECHO_CHAOS are named with source env', async (t) => {
  const echo = await startEcho({ ECHO_DELAY: '15ms', ECHO_CHAOS: '100' });
  t.after(() => echo.close());
  const r = await fetch(`${echo.url}/env`, { headers: { 'X-Echo-Explain': 'true' } });
  assert.equal(r.headers.get('x-echo-fault'), 'delay,chaos');
  assert.deepEqual(JSON.parse(r.headers.get('x-echo-applied') ?? 'null'), [
    { kind: 'delay', control: 'ECHO_DELAY', source: 'env', value: 15 },
    { kind: 'chaos', control: 'ECHO_CHAOS', source: 'env', value: r.status },
  ]);
});

test('safety valve – past ECHO_MAX_ACTIVE_FAULTS new faults are skipped, served plainly and counted', async (t) => {
  const echo = await startEcho({ ECHO_MAX_ACTIVE_FAULTS: '5' });
  t.after(() => echo.close());
  const active = () => scrapeValue(echo.url, 'echo_active_faults');
  const held = Array.from({ length: 5 }, () =>
    fetch(`${echo.url}/held`, { headers: { 'X-Echo-Delay': '60s' } }).catch(() => undefined),
  );
  // Wait until the five hold their slots (the gauge says so), with a generous bound.
  await until('the five held delays hold their slots', async () => (await active()) >= 5, 30_000);

  const burst = await Promise.all(
    Array.from({ length: 20 }, () =>
      fetch(`${echo.url}/burst`, { headers: { 'X-Echo-Delay': '60s', 'X-Echo-Status': '500' } }),
    ),
  );
  for (const r of burst) {
    assert.equal(r.status, 200, 'served plainly: no delay, no status');
    assert.equal(r.headers.get('x-echo-fault'), null);
    await r.arrayBuffer();
  }
  assert.equal(await scrapeValue(echo.url, 'echo_faults_overflow_total'), 20);
  assert.equal(await scrapeValue(echo.url, 'echo_active_faults'), 5, 'the cap held');
  const info = (await (await fetch(`${echo.url}/info`)).json()) as { server: { faults: unknown } };
  assert.deepEqual(info.server.faults, { enabled: true, active: 5, max_active: 5 });

  // Closing ends the held delays (the drain answers them); their slots come free.
  await echo.close();
  await Promise.all(held);
});

test('safety valve – a slot comes free when its response ends, and a client that leaves frees it too', async (t) => {
  const echo = await startEcho({ ECHO_MAX_ACTIVE_FAULTS: '1' });
  t.after(() => echo.close());
  const active = () => scrapeValue(echo.url, 'echo_active_faults');
  const leaving = new AbortController();
  const gone = fetch(`${echo.url}/held`, {
    headers: { 'X-Echo-Delay': '60s' },
    signal: leaving.signal,
  }).catch(() => 'aborted');
  await until('the held delay holds its slot', async () => (await active()) >= 1, 30_000);
  leaving.abort();
  assert.equal(await gone, 'aborted');
  await until('the slot comes free when the client leaves', async () => (await active()) === 0, 30_000);
  const next = await fetch(`${echo.url}/next`, { headers: { 'X-Echo-Status': '503' } });
  assert.equal(next.status, 503, 'the freed slot is taken by the next fault');
  assert.equal(await scrapeValue(echo.url, 'echo_faults_overflow_total'), 0);
});

test('master switch – ECHO_FAULTS_ENABLED=false serves every request plainly; PUT /control/faults turns it back on', async (t) => {
  const echo = await startEcho({ ECHO_FAULTS_ENABLED: 'false', ECHO_CHAOS: '100' });
  t.after(() => echo.close());
  const before = await faultCounts(echo.url);
  const off = await fetch(`${echo.url}/off`, {
    headers: { 'X-Echo-Status': '503', 'X-Echo-Error': 'reset' },
  });
  assert.equal(off.status, 200);
  assert.equal(off.headers.get('x-echo-fault'), null);
  assert.deepEqual(countDelta(before, await faultCounts(echo.url)), {}, 'nothing injected, nothing counted');
  assert.equal(
    await scrapeValue(echo.url, 'echo_faults_overflow_total'),
    0,
    'switched off is not an overflow',
  );
  // Bad control headers are still refused: the switch skips faults, not validation.
  assert.equal((await fetch(`${echo.url}/off`, { headers: { 'X-Echo-Status': 'abc' } })).status, 400);

  assert.deepEqual(await (await fetch(`${echo.url}/control/faults`)).json(), { enabled: false });
  const on = await fetch(`${echo.url}/control/faults`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: '{"enabled": true}',
  });
  assert.deepEqual(await on.json(), { previous: { enabled: false }, current: { enabled: true } });
  const chaos = await fetch(`${echo.url}/on`);
  assert.equal(chaos.headers.get('x-echo-fault'), 'chaos', 'ECHO_CHAOS=100 strikes again');

  const badBody = await fetch(`${echo.url}/control/faults`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: '{"enabled": "no"}',
  });
  assert.equal(badBody.status, 400);
  assert.equal(
    ((await badBody.json()) as { error: { code: string } }).error.code,
    'ECHO_ERR_INVALID_CONTROL',
  );
  assert.deepEqual(await (await fetch(`${echo.url}/control/faults`)).json(), { enabled: true }, 'unchanged');

  await fetch(`${echo.url}/control/faults`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: '{"enabled": false}',
  });
  const offAgain = await fetch(`${echo.url}/again`);
  assert.equal(offAgain.headers.get('x-echo-fault'), null);
  assert.equal((await fetch(`${echo.url}/health`)).status, 200, 'the service routes are untouched');
});

test('safety valve – an h2c client that drops its connection frees its slot and is recorded as gone (499)', async (t) => {
  const echo = await startEcho({ ECHO_MAX_ACTIVE_FAULTS: '1' });
  t.after(() => echo.close());
  const active = () => scrapeValue(echo.url, 'echo_active_faults');
  for (const how of ['session', 'socket'] as const) {
    const session = connect(echo.url);
    session.on('error', () => {});
    const stream = session.request({
      ':path': `/dropped-${how}`,
      'x-echo-delay': '60s',
      'x-request-id': how,
    });
    stream.on('error', () => {});
    await until(`${how}: the held delay holds its slot`, async () => (await active()) >= 1, 30_000);
    if (how === 'session') session.destroy();
    else session.socket.destroy();
    // A generous bound: the wait ends when the server notices.
    await until(`${how}: the slot comes free`, async () => (await active()) === 0, 30_000);
    const status = async () => {
      const history = (await (await fetch(`${echo.url}/history`)).json()) as Array<{
        request_id: string;
        status: number;
      }>;
      return history.find((e) => e.request_id === how)?.status;
    };
    await until(`${how}: the client left (499 in the history)`, async () => (await status()) === 499);
  }
});
