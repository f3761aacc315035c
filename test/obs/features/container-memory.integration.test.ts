import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import { readContainerMemory } from '../../../src/obs/features/container-memory.ts';
import type { ContainerMemoryReading, ObsConfigInput } from '../../../src/obs/index.ts';
import { startObsApp } from '../helpers.ts';

const FIXTURES = fileURLToPath(new URL('../fixtures/cgroup/', import.meta.url));
const fixture = (name: string) => `${FIXTURES}${name}`;
// A file that names no cgroup: fixture trees are then read at their root.
const NO_SELF = fixture('no-such-self-cgroup');

const MIB = 1024 * 1024;

function metricsRoute(app: FastifyInstance) {
  app.get('/metrics', async (_request, reply) =>
    reply.type(app.obs.registry.contentType).send(await app.obs.registry.metrics()),
  );
}

/** An app whose container memory reads `root`; `/metrics` scrapes its registry. */
async function appOn(root: string, extra: NonNullable<ObsConfigInput['container-memory']> = {}) {
  return startObsApp({ config: { 'container-memory': { 'cgroup-root': root, ...extra } } }, metricsRoute);
}

/** The sample value of an unlabelled series in a scrape (`+Inf` as a number), undefined without one. */
function sample(text: string, name: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  if (line === undefined) return undefined;
  const raw = line.slice(name.length + 1).trim();
  return raw === '+Inf' ? Number.POSITIVE_INFINITY : Number(raw);
}

test('container memory – cgroup v2 with a limit: used, limit, headroom and OOM kills from the files', () => {
  const reading = readContainerMemory({ root: fixture('v2-limited'), selfCgroupFile: NO_SELF });
  assert.deepEqual(reading, {
    version: 'v2',
    directory: fixture('v2-limited'),
    usedBytes: 768 * MIB,
    limitBytes: 1024 * MIB,
    unlimited: false,
    headroomRatio: 0.25,
    oomKills: 0,
  });
});

test('container memory – cgroup v2 without a limit ("max") is unlimited, with no headroom ratio', () => {
  const reading = readContainerMemory({ root: fixture('v2-unlimited'), selfCgroupFile: NO_SELF });
  assert.equal(reading.version, 'v2');
  assert.equal(reading.usedBytes, 100 * MIB);
  assert.equal(reading.limitBytes, undefined);
  assert.equal(reading.unlimited, true);
  assert.equal(reading.headroomRatio, undefined);
});

test('container memory – cgroup v2 OOM kills are read from memory.events', () => {
  const reading = readContainerMemory({ root: fixture('v2-oom-kills'), selfCgroupFile: NO_SELF });
  assert.equal(reading.oomKills, 3);
  assert.equal(reading.headroomRatio, 0.03125);
});

test('container memory – a host view: the process cgroup from /proc/self/cgroup, limited by an ancestor', () => {
  const root = fixture('v2-host');
  const reading = readContainerMemory({ root, selfCgroupFile: `${root}/self-cgroup` });
  assert.equal(reading.version, 'v2');
  assert.equal(reading.directory, `${root}/kubepods/pod-a/app`);
  assert.equal(reading.usedBytes, 128 * MIB);
  assert.equal(reading.limitBytes, 512 * MIB, "the pod's limit, tighter than the container's max");
  assert.equal(reading.headroomRatio, 0.75);
  assert.equal(reading.oomKills, 1);
  assert.equal(
    readContainerMemory({ root, selfCgroupFile: NO_SELF }).version,
    undefined,
    'the root of a host has no memory.current',
  );
});

test('container memory – cgroup v1 under memory/: usage, limit and oom_control', () => {
  assert.deepEqual(readContainerMemory({ root: fixture('v1-limited'), selfCgroupFile: NO_SELF }), {
    version: 'v1',
    directory: `${fixture('v1-limited')}/memory`,
    usedBytes: 256 * MIB,
    limitBytes: 512 * MIB,
    unlimited: false,
    headroomRatio: 0.5,
    oomKills: 2,
  });
  const unlimited = readContainerMemory({ root: fixture('v1-unlimited'), selfCgroupFile: NO_SELF });
  assert.equal(unlimited.version, 'v1');
  assert.equal(unlimited.usedBytes, 50 * MIB);
  assert.equal(unlimited.unlimited, true, '9223372036854771712 is no limit');
  assert.equal(unlimited.limitBytes, undefined);
  assert.equal(unlimited.oomKills, undefined, 'an older kernel does not report oom_kill');
});

test('container memory – no cgroup at all is no error: every figure unknown', () => {
  for (const root of [fixture('empty'), fixture('does-not-exist')]) {
    assert.deepEqual(readContainerMemory({ root, selfCgroupFile: NO_SELF }), {
      version: undefined,
      directory: undefined,
      usedBytes: undefined,
      limitBytes: undefined,
      unlimited: false,
      headroomRatio: undefined,
      oomKills: undefined,
    } satisfies ContainerMemoryReading);
  }
});

test("container memory – this machine's /sys/fs/cgroup: a positive usage and a sane reading, whatever the version", async (t) => {
  const reading = readContainerMemory();
  if (process.platform === 'linux' && existsSync('/sys/fs/cgroup')) {
    assert.ok(reading.version === 'v1' || reading.version === 'v2', `version ${reading.version}`);
    assert.ok(reading.usedBytes !== undefined && reading.usedBytes > 0, `used ${reading.usedBytes}`);
  }
  if (reading.limitBytes !== undefined) {
    assert.ok(reading.limitBytes > 0);
    assert.equal(reading.unlimited, false);
    assert.ok(
      reading.headroomRatio !== undefined && reading.headroomRatio >= 0 && reading.headroomRatio <= 1,
    );
  } else {
    assert.equal(reading.headroomRatio, undefined);
  }
  if (reading.oomKills !== undefined) assert.ok(Number.isInteger(reading.oomKills) && reading.oomKills >= 0);

  // The same through the plugin's defaults and a real scrape.
  const obs = await startObsApp({}, metricsRoute);
  t.after(() => obs.close());
  const text = await (await fetch(`${obs.url}/metrics`)).text();
  const used = sample(text, 'obs_container_memory_used_bytes');
  if (reading.usedBytes !== undefined) assert.ok(used !== undefined && used > 0, `scraped ${used}`);
  const limit = sample(text, 'obs_container_memory_limit_bytes');
  assert.ok(limit === undefined || limit > 0, `limit ${limit}`);
});

test('container memory – the four meters over real HTTP: v2 limited, unlimited, OOM kills and v1', async (t) => {
  const cases = [
    ['v2-limited', 768 * MIB, 1024 * MIB, 0.25, 0],
    ['v2-unlimited', 100 * MIB, Number.POSITIVE_INFINITY, undefined, 0],
    ['v2-oom-kills', 992 * MIB, 1024 * MIB, 0.03125, 3],
    ['v1-limited', 256 * MIB, 512 * MIB, 0.5, 2],
    ['v1-unlimited', 50 * MIB, Number.POSITIVE_INFINITY, undefined, undefined],
    ['empty', undefined, undefined, undefined, undefined],
  ] as const;
  for (const [name, used, limit, headroom, kills] of cases) {
    const obs = await appOn(fixture(name));
    t.after(() => obs.close());
    const response = await fetch(`${obs.url}/metrics`);
    assert.equal(response.status, 200, name);
    const text = await response.text();
    assert.deepEqual(
      [
        sample(text, 'obs_container_memory_used_bytes'),
        sample(text, 'obs_container_memory_limit_bytes'),
        sample(text, 'obs_container_memory_headroom_ratio'),
        sample(text, 'obs_container_oom_kills_total'),
      ],
      [used, limit, headroom, kills],
      name,
    );
    assert.match(text, /^# TYPE obs_container_oom_kills_total counter$/m, 'a _total is a counter');
    // An unknown figure has no sample: never prom-client's `Nan` (nor a NaN in any spelling).
    assert.doesNotMatch(text, /^obs_container_\S+ nan$/im, name);
  }
});

test('container memory – a scrape reads afresh: the figures follow the files', async (t) => {
  const { mkdtempSync, writeFileSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const root = mkdtempSync(`${tmpdir()}/cgroup-`);
  writeFileSync(`${root}/memory.current`, '100\n');
  writeFileSync(`${root}/memory.max`, '1000\n');
  writeFileSync(`${root}/memory.events`, 'oom_kill 0\n');
  const obs = await appOn(root);
  t.after(() => obs.close());
  const scrape = async () => (await fetch(`${obs.url}/metrics`)).text();
  assert.equal(sample(await scrape(), 'obs_container_memory_headroom_ratio'), 0.9);
  writeFileSync(`${root}/memory.current`, '950\n');
  writeFileSync(`${root}/memory.events`, 'oom_kill 1\n');
  const text = await scrape();
  assert.equal(sample(text, 'obs_container_memory_headroom_ratio'), 0.05);
  assert.equal(sample(text, 'obs_container_oom_kills_total'), 1);
});

test('container memory – the opt-in readiness check fails below the critical headroom', async (t) => {
  const health = async (url: string) => {
    const response = await fetch(`${url}/actuator/health`);
    return {
      status: response.status,
      body: (await response.json()) as { components: Record<string, { status: string; details?: unknown }> },
    };
  };
  const off = await appOn(fixture('v2-oom-kills'));
  t.after(() => off.close());
  const plain = await health(off.url);
  assert.equal(plain.status, 200, 'readiness is opt-in');
  assert.equal(plain.body.components['container-memory'], undefined);

  const low = await appOn(fixture('v2-oom-kills'), { 'readiness-enabled': true });
  t.after(() => low.close());
  const down = await health(low.url);
  assert.equal(down.status, 503);
  const component = down.body.components['container-memory'] as {
    status: string;
    details: Record<string, unknown>;
  };
  assert.equal(component.status, 'DOWN');
  assert.equal(component.details.headroom_ratio, 0.0313);
  assert.equal(component.details.critical_headroom_ratio, 0.1);

  const tolerant = await appOn(fixture('v2-oom-kills'), {
    'readiness-enabled': true,
    'critical-headroom-ratio': 0.02,
  });
  t.after(() => tolerant.close());
  assert.equal((await health(tolerant.url)).status, 200, 'the ratio is configurable');

  for (const name of ['v2-limited', 'v2-unlimited', 'empty']) {
    const fine = await appOn(fixture(name), { 'readiness-enabled': true });
    t.after(() => fine.close());
    const up = await health(fine.url);
    assert.equal(up.status, 200, `${name}: enough headroom, no limit or no data is ready`);
    assert.equal(up.body.components['container-memory']?.status, 'UP', name);
  }
});

test('container memory – the snapshot shows enabled, the effective settings and the reading', async (t) => {
  const obs = await appOn(fixture('v1-limited'), { 'readiness-enabled': true });
  t.after(() => obs.close());
  const snapshot = (await (await fetch(`${obs.url}/actuator/obs`)).json()) as {
    sections: Record<string, Record<string, unknown>>;
    features: Record<string, { enabled: boolean }>;
    runtime: { memory: { container: Record<string, unknown> | null } };
  };
  const section = snapshot.sections['container-memory'];
  assert.equal(section?.enabled, true);
  assert.deepEqual(section?.config, {
    enabled: true,
    'readiness-enabled': true,
    'critical-headroom-ratio': 0.1,
    'cgroup-root': fixture('v1-limited'),
  });
  assert.deepEqual(section?.reading, {
    cgroup: 'v1',
    directory: `${fixture('v1-limited')}/memory`,
    used_bytes: 256 * MIB,
    limit_bytes: 512 * MIB,
    unlimited: false,
    headroom_ratio: 0.5,
    oom_kills: 2,
  });
  assert.equal(snapshot.features['container-memory']?.enabled, true);
  assert.equal(snapshot.runtime.memory.container?.used_bytes, 256 * MIB, 'the runtime shows it too');
});

test('container memory – obs.container-memory.enabled=false: no meters, no check, no reading', async (t) => {
  const obs = await appOn(fixture('v2-oom-kills'), { enabled: false, 'readiness-enabled': true });
  t.after(() => obs.close());
  const text = await (await fetch(`${obs.url}/metrics`)).text();
  assert.doesNotMatch(text, /obs_container_/);
  assert.equal((await fetch(`${obs.url}/actuator/health`)).status, 200);
  assert.equal(obs.app.obs.containerMemory(), undefined);
  const snapshot = (await (await fetch(`${obs.url}/actuator/obs`)).json()) as {
    sections: Record<string, Record<string, unknown>>;
  };
  assert.equal(snapshot.sections['container-memory']?.enabled, false);
  assert.equal(snapshot.sections['container-memory']?.reading, null);
});

test('container memory – promtool check metrics accepts the obs scrape, unknown figures and +Inf included', async (t) => {
  const probe = spawnSync('promtool', ['--version'], { encoding: 'utf8', timeout: 10_000 });
  if (probe.error !== undefined) {
    const why = 'promtool not found on PATH (Debian package prometheus)';
    if (process.env.CI) assert.fail(`${why}: required in CI`);
    t.skip(why);
    return;
  }
  for (const name of ['v2-limited', 'v1-unlimited', 'empty']) {
    const obs = await appOn(fixture(name));
    t.after(() => obs.close());
    const text = await (await fetch(`${obs.url}/metrics`)).text();
    assert.match(text, /^obs_drain_dropped_total 0$/m);
    const result = spawnSync('promtool', ['check', 'metrics'], {
      input: text,
      encoding: 'utf8',
      timeout: 30_000,
    });
    assert.equal(result.status, 0, `${name}: promtool check metrics:\n${result.stdout}${result.stderr}`);
  }
});
