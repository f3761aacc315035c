import assert from 'node:assert/strict';
import { test } from 'node:test';
import Fastify from 'fastify';
import cron from 'node-cron';
import type { Registry } from 'prom-client';
import { contextFields } from '../../../src/obs/features/logging/logging.ts';
import {
  createObs,
  currentObsContext,
  instrumentCron,
  isObsError,
  type JobScheduler,
  type Obs,
  type ObsConfigInput,
} from '../../../src/obs/index.ts';
import { MAX_JOBS } from '../../../src/obs/integrations/jobs.ts';
import { quietFor, until } from '../../helpers/runtime.ts';
import { capturingLogger, startObsApp } from '../helpers.ts';

/**
 * Background-job observability: `obs.job` (metrics, context, errors), `obs.every` (no overlap),
 * `instrumentCron` with the real node-cron, the `jobs` health component with an injected clock.
 */

function core(t: { after(fn: () => void): void }, config: ObsConfigInput = {}) {
  const logger = capturingLogger();
  const obs = createObs({ env: {}, logger, config });
  t.after(() => obs.close());
  return { obs, logger };
}

async function sample(registry: Registry, name: string, labels: Record<string, string>): Promise<number> {
  const metric = await registry.getSingleMetric(name)?.get();
  const found = metric?.values.find((v) =>
    Object.entries(labels).every(([k, value]) => String((v.labels as Record<string, unknown>)[k]) === value),
  );
  return found?.value ?? 0;
}

function isInvalidJob(error: unknown): boolean {
  return isObsError(error) && error.code === 'OBS_ERR_INVALID_JOB';
}

test('jobs – the wrapper keeps arguments, return values and errors; runs are counted by outcome', async (t) => {
  const { obs, logger } = core(t);
  const add = obs.job('add', (a: number, b: number) => a + b);
  assert.equal(add(2, 3), 5, 'sync return unchanged');
  const later = obs.job('later', async (x: string) => `${x}!`);
  const pending = later('hi');
  assert.equal(await pending, 'hi!', 'async return unchanged');
  const boom = new Error('boom');
  const fails = obs.job('fails', () => {
    throw boom;
  });
  assert.throws(
    () => fails(),
    (e) => e === boom,
    'a sync error is rethrown as it is',
  );
  const rejects = obs.job('rejects', async () => {
    throw boom;
  });
  await assert.rejects(rejects(), (e) => e === boom, 'an async error is rethrown as it is');
  await new Promise((resolve) => setImmediate(resolve));

  const r = obs.registry;
  assert.equal(await sample(r, 'obs_jobs_executions_total', { job: 'add', outcome: 'success' }), 1);
  assert.equal(await sample(r, 'obs_jobs_executions_total', { job: 'later', outcome: 'success' }), 1);
  assert.equal(await sample(r, 'obs_jobs_executions_total', { job: 'fails', outcome: 'failure' }), 1);
  assert.equal(await sample(r, 'obs_jobs_executions_total', { job: 'rejects', outcome: 'failure' }), 1);
  assert.equal(await sample(r, 'obs_jobs_executions_total', { job: 'add', outcome: 'failure' }), 0);
  const text = await r.metrics();
  assert.match(text, /obs_jobs_duration_seconds_count\{job="rejects"\} 1/);
  assert.match(text, /obs_jobs_in_flight\{job="add"\} 0/);
  const failure = logger.lines.find((l) => (l.object as { job?: string }).job === 'rejects');
  assert.equal(failure?.level, 'warn');
  const logged = failure?.object as { err?: string; request_id?: string } | undefined;
  assert.match(String(logged?.err), /Error: boom/);
  assert.match(String(logged?.request_id), /^job:rejects:/);
});

test('jobs – in flight while running; the snapshot shows the live figures', async (t) => {
  const { obs } = core(t);
  let release = () => {};
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  const slow = obs.job('slow', () => held);
  const running = slow();
  assert.equal(await sample(obs.registry, 'obs_jobs_in_flight', { job: 'slow' }), 1);
  const section = () =>
    (obs.snapshot().sections.jobs as { jobs: Record<string, Record<string, unknown>> }).jobs.slow;
  assert.equal(section()?.in_flight, 1);
  release();
  await running;
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(await sample(obs.registry, 'obs_jobs_in_flight', { job: 'slow' }), 0);
  assert.equal(section()?.runs, 1);
  assert.equal(section()?.successes, 1);
  assert.equal(section()?.status, 'UP');
  assert.equal(typeof section()?.last_success, 'string');
});

test('jobs – a run has a context of its own, which never leaks into its caller', async (t) => {
  const { obs } = core(t);
  const seen: Array<string | undefined> = [];
  const job = obs.job('ctx', async () => {
    seen.push(currentObsContext()?.requestId);
    await new Promise((resolve) => setImmediate(resolve)); // an async hop: the context crosses it
    seen.push(currentObsContext()?.requestId);
    return contextFields();
  });
  assert.equal(currentObsContext(), undefined);
  const fields = await job();
  await job();
  assert.equal(currentObsContext(), undefined, 'the caller has no context after');
  assert.match(seen[0] ?? '', /^job:ctx:[0-9a-f-]{36}$/);
  assert.equal(seen[0], seen[1], 'one id through the run');
  assert.notEqual(seen[0], seen[2], 'a new id per run');
  assert.equal(fields.request_id, seen[0], 'log lines carry the run request id');
  assert.equal(fields.job, 'ctx');
  assert.equal(fields.priority, undefined, 'priority is off by default');
  assert.equal(currentObsContext()?.timeoutBudget, undefined);
});

test('jobs – an outbound call from a job carries the request id and the context headers, and is counted', async (t) => {
  const downstream = Fastify();
  const received: Array<Record<string, unknown>> = [];
  downstream.get('/ping', async (request) => {
    received.push(request.headers);
    return 'pong';
  });
  await downstream.listen({ port: 0, host: '127.0.0.1' });
  t.after(() => downstream.close());
  const address = downstream.server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;

  const running = await startObsApp({ config: { priority: { enabled: true }, retry: { enabled: true } } });
  t.after(() => running.close());
  const obs = running.app.obs;
  let id: string | undefined;
  const call = obs.job('caller', async () => {
    id = currentObsContext()?.requestId;
    const response = await fetch(`http://127.0.0.1:${port}/ping`);
    return response.text();
  });
  assert.equal(await call(), 'pong');
  // outside a job, nothing is stamped
  await (await fetch(`http://127.0.0.1:${port}/ping`)).text();
  const [inJob, outside] = received;
  assert.equal(inJob?.['x-request-id'], id);
  assert.equal(inJob?.['obs-priority'], 'background');
  assert.equal(inJob?.['obs-retry-depth'], '0');
  assert.equal(outside?.['x-request-id'], undefined);
  const figures = (obs.snapshot().sections.jobs as { jobs: Record<string, Record<string, unknown>> }).jobs;
  assert.equal(figures.caller?.outbound_calls, 1);
});

test('jobs – every runs on its interval, never overlapping: a tick during a run is skipped', async (t) => {
  const { obs, logger } = core(t);
  let tick: (() => void) | undefined;
  let cleared = false;
  const scheduler: JobScheduler = {
    setInterval(callback, ms) {
      assert.equal(ms, 1000);
      tick = callback;
      return 'handle';
    },
    clearInterval(handle) {
      assert.equal(handle, 'handle');
      cleared = true;
    },
  };
  const releases: Array<() => void> = [];
  let runs = 0;
  const handle = obs.every(
    'poll',
    1000,
    () => {
      runs += 1;
      if (runs === 3) throw new Error('third fails');
      return new Promise<void>((resolve) => releases.push(resolve));
    },
    { scheduler },
  );
  tick?.();
  assert.equal(handle.running, true);
  tick?.();
  tick?.();
  assert.equal(runs, 1, 'no overlap');
  releases[0]?.();
  await until('the first run ends', () => !handle.running, 20_000);
  tick?.();
  releases[1]?.();
  await until('the second run ends', () => !handle.running, 20_000);
  tick?.();
  await new Promise((resolve) => setImmediate(resolve));
  const r = obs.registry;
  assert.equal(await sample(r, 'obs_jobs_executions_total', { job: 'poll', outcome: 'success' }), 2);
  assert.equal(await sample(r, 'obs_jobs_executions_total', { job: 'poll', outcome: 'skipped' }), 2);
  assert.equal(await sample(r, 'obs_jobs_executions_total', { job: 'poll', outcome: 'failure' }), 1);
  assert.ok(logger.lines.some((l) => (l.object as { job?: string }).job === 'poll'));
  handle.stop();
  handle.stop();
  assert.equal(cleared, true);
  assert.throws(() => obs.every('poll2', 0, () => {}), isInvalidJob);
  assert.throws(() => obs.every('poll2', 1.5, () => {}), isInvalidJob);
});

test('jobs – every with the real timer runs and stops', async (t) => {
  const { obs } = core(t);
  let runs = 0;
  const handle = obs.every(
    'tick',
    5,
    () => {
      runs += 1;
    },
    { unref: true },
  );
  t.after(() => handle.stop());
  await until('two runs', () => runs >= 2, 20_000);
  handle.stop();
  const stoppedAt = runs;
  await quietFor(50, 'ten periods of the stopped 5 ms job');
  assert.equal(runs, stoppedAt, 'no run after stop');
});

test('jobs – node-cron: a scheduled job runs as an obs job', async (t) => {
  const { obs } = core(t);
  const ids: string[] = [];
  const task = instrumentCron(cron, obs).schedule('cron-job', '* * * * * *', () => {
    ids.push(currentObsContext()?.requestId ?? 'none');
  });
  t.after(() => task.destroy());
  await until('two cron runs', () => ids.length >= 2, 20_000);
  await task.stop();
  assert.ok(ids.every((id) => id.startsWith('job:cron-job:')));
  await until(
    'two successes counted',
    async () =>
      (await sample(obs.registry, 'obs_jobs_executions_total', { job: 'cron-job', outcome: 'success' })) >= 2,
    20_000,
  );
  assert.throws(() => instrumentCron(cron, obs).schedule('bad name', '* * * * * *', () => {}), isInvalidJob);
  assert.throws(() => instrumentCron(cron, {}), isInvalidJob, 'not an obs instance');
});

test('jobs – health: DOWN after the grace period without a success, UP again after one', async (t) => {
  const running = await startObsApp({ config: { jobs: { 'failure-grace-period': '1m' } } });
  t.after(() => running.close());
  const obs: Obs = running.app.obs;
  let now = Date.parse('2026-01-01T00:00:00Z');
  let fail = true;
  const job = obs.job(
    'nightly',
    () => {
      if (fail) throw new Error('db unreachable');
    },
    { nowMs: () => now },
  );
  interface Health {
    components: { jobs: { status: string; details: Record<string, Record<string, unknown>> } };
  }
  const health = async () => {
    const response = await fetch(`${running.url}/actuator/health`);
    return { status: response.status, body: (await response.json()) as Health };
  };
  let h = await health();
  assert.equal(h.status, 200, 'within the grace period of its registration');
  assert.equal(h.body.components.jobs.status, 'UP');
  assert.equal(h.body.components.jobs.details.nightly?.last_success, null);

  assert.throws(() => job());
  now += 30_000;
  assert.equal((await health()).status, 200, 'a failure alone within the grace period');
  now += 31_000;
  h = await health();
  assert.equal(h.status, 503);
  assert.equal(h.body.components.jobs.status, 'DOWN');
  assert.deepEqual(h.body.components.jobs.details.nightly, {
    status: 'DOWN',
    last_success: null,
    last_failure: '2026-01-01T00:00:00.000Z',
    last_error: 'Error: db unreachable',
  });
  const readiness = await obs.readiness();
  assert.equal(
    readiness.ready,
    true,
    'a job that stopped succeeding does not take the instance out of traffic',
  );
  assert.ok(!('jobs' in readiness.checks), JSON.stringify(readiness.checks));

  fail = false;
  job();
  h = await health();
  assert.equal(h.status, 200);
  assert.equal(h.body.components.jobs.details.nightly?.status, 'UP');
  assert.equal(h.body.components.jobs.details.nightly?.last_success, '2026-01-01T00:01:01.000Z');
  now += 61_000;
  assert.equal((await health()).status, 503, 'and DOWN again when it stops succeeding');
});

test('jobs – health-indicator-enabled=false: no jobs check', async (t) => {
  const { obs } = core(t, { jobs: { 'health-indicator-enabled': false, 'failure-grace-period': '1ms' } });
  let now = 0;
  obs.job('x', () => {}, { nowMs: () => now });
  now = 10_000;
  const report = await obs.health();
  assert.equal(report.components.jobs, undefined);
  assert.equal(report.status, 'UP');
});

test('jobs – a job’s own failureGracePeriodMs overrides obs.jobs.failure-grace-period; a bad one throws', async (t) => {
  const { obs } = core(t, { jobs: { 'failure-grace-period': '1m' } });
  let now = 0;
  obs.job('nightly', () => {}, { nowMs: () => now, failureGracePeriodMs: 26 * 3_600_000 });
  obs.job('minutely', () => {}, { nowMs: () => now });
  now = 2 * 3_600_000;
  let report = await obs.health();
  const details = () => report.components.jobs?.details as Record<string, { status: string }>;
  assert.equal(details().nightly?.status, 'UP', 'within its own 26h');
  assert.equal(details().minutely?.status, 'DOWN', 'past the configured minute');
  now = 26 * 3_600_000 + 1;
  report = await obs.health();
  assert.equal(details().nightly?.status, 'DOWN');
  for (const bad of [999, 30 * 24 * 3_600_000 + 1, 1.5, '1h']) {
    assert.throws(
      () =>
        obs.job(`bad-${String(bad).replace(/\W/g, '')}`, () => {}, { failureGracePeriodMs: bad as number }),
      (error: { code?: string; message?: string }) =>
        error.code === 'OBS_ERR_INVALID_JOB' && /failureGracePeriodMs/.test(error.message ?? ''),
      String(bad),
    );
  }
});

test('jobs – names are validated and bounded at registration', (t) => {
  const { obs } = core(t);
  for (const bad of ['', 'a b', 'x'.repeat(65), 'émoji', 'a/b', 42 as unknown as string]) {
    assert.throws(() => obs.job(bad, () => {}), isInvalidJob, String(bad));
  }
  assert.throws(() => obs.job('ok', 'nope' as unknown as () => void), isInvalidJob);
  obs.job('A-z_0.9:x', () => {});
  obs.job('A-z_0.9:x', () => {}, {}); // the same job again is fine
  for (let i = 1; i < MAX_JOBS; i += 1) obs.job(`job-${i}`, () => {});
  assert.throws(() => obs.job('one-too-many', () => {}), isInvalidJob);
  obs.job('job-1', () => {}); // a known one still registers
});

test('jobs – obs.jobs.enabled=false: the function runs as it is and nothing is recorded', async (t) => {
  const { obs } = core(t, { jobs: { enabled: false } });
  const fn = (x: number) => x * 2;
  const wrapped = obs.job('off', fn);
  assert.equal(wrapped, fn);
  assert.equal(wrapped(2), 4);
  assert.equal(obs.registry.getSingleMetric('obs_jobs_executions_total'), undefined);
  assert.deepEqual((obs.snapshot().sections.jobs as { enabled: boolean; jobs: object }).jobs, {});
  assert.equal((await obs.readiness()).checks.jobs, undefined);
  assert.throws(() => obs.job('bad name', fn), isInvalidJob, 'names are still checked');
});
