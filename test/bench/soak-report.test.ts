import assert from 'node:assert/strict';
import { test } from 'node:test';
import { verdict } from '../../bench/lib.ts';
import {
  attribute,
  describeAttribution,
  KEPT_LINES,
  LogScan,
  levelOf,
  loopDelayDuring,
  loopDelayMaxMs,
  NORMAL_ONLY,
  type Phase,
  type Probe,
  probeFigures,
  probesByPhase,
  rssAfterWarmup,
  rssByPhase,
  slowestProbes,
  soakTargets,
} from '../../bench/soak-report.ts';

/**
 * The pure part of `npm run soak` (issue #30's "Done when"): reading the server's log, placing probes
 * in the attack that ran, the summaries and the verdicts, on made-up runs. Nothing here starts a
 * server or measures a time.
 */

const phases: Phase[] = [
  { name: 'glob', startMs: 1_000, endMs: 5_000 },
  { name: 'history', startMs: 8_000, endMs: 9_000 },
];
const probe = (atMs: number, ms: number, ok = true): Probe => ({ atMs, ms, ok });

test('levelOf: pino lines by their prefix, other JSON by parsing, the rest undefined', () => {
  assert.equal(levelOf('{"level":30,"time":"2026-11-27T10:00:00Z","msg":"x"}'), 30);
  assert.equal(levelOf('{"msg":"x","level":50}'), 50);
  assert.equal(levelOf('{"msg":"no level"}'), undefined);
  assert.equal(levelOf('    at Object.<anonymous> (/x.js:1:1)'), undefined);
  assert.equal(levelOf('(node:123) Warning: something'), undefined);
  assert.equal(levelOf('42'), undefined);
});

test('LogScan counts levels, keeps the first error lines and reads lines cut across chunks', () => {
  const scan = new LogScan();
  scan.feed('{"level":30,"msg":"a"}\n{"level":5');
  scan.feed('0,"msg":"boom"}\n{"level":40,"msg":"w"}\n\n');
  scan.feed('not json at all\n{"level":60,"msg":"fatal"}');
  scan.end();
  assert.equal(scan.lines, 5);
  assert.deepEqual(
    [...scan.byLevel].sort((a, b) => a[0] - b[0]),
    [
      [30, 1],
      [40, 1],
      [50, 1],
      [60, 1],
    ],
  );
  assert.equal(scan.errorCount, 2);
  assert.deepEqual(scan.errors, ['{"level":50,"msg":"boom"}', '{"level":60,"msg":"fatal"}']);
  assert.equal(scan.notJsonCount, 1);
  assert.deepEqual(scan.notJson, ['not json at all']);
});

test('LogScan keeps only the first few error lines, each cut short, but counts them all', () => {
  const scan = new LogScan();
  for (let i = 0; i < KEPT_LINES + 3; i++)
    scan.feed(`{"level":50,"msg":"e${i}","stack":"${'x'.repeat(1000)}"}\n`);
  assert.equal(scan.errorCount, KEPT_LINES + 3);
  assert.equal(scan.errors.length, KEPT_LINES);
  assert.ok(scan.errors.every((l) => l.length <= 400));
  assert.ok(scan.errors[0]?.startsWith('{"level":50,"msg":"e0"'));
});

test('attribute: a probe is placed in every attack it overlapped, else after the last one that ended', () => {
  assert.deepEqual(attribute(probe(2_000, 10), phases), { during: ['glob'] });
  // Sent before the attack started, answered after: the attack held it.
  assert.deepEqual(attribute(probe(500, 700), phases), { during: ['glob'] });
  assert.deepEqual(attribute(probe(4_900, 3_500), phases), { during: ['glob', 'history'] });
  assert.deepEqual(attribute(probe(6_000, 5), phases), {
    during: [],
    after: { name: 'glob', agoMs: 1_000 },
  });
  assert.deepEqual(attribute(probe(100, 5), phases), { during: [] });
  assert.equal(describeAttribution(attribute(probe(2_000, 10), phases)), 'during glob');
  assert.equal(
    describeAttribution(attribute(probe(6_500, 5), phases)),
    'normal traffic only, 1.5 s after glob',
  );
  assert.equal(describeAttribution(attribute(probe(100, 5), phases)), 'normal traffic only');
});

test('probeFigures: count, failures, nearest-rank percentiles, max and the probes over the limit', () => {
  const probes = [probe(0, 1), probe(1, 2), probe(2, 3), probe(3, 150), probe(4, 3000, false)];
  assert.deepEqual(probeFigures(probes, 100), {
    count: 5,
    failures: 1,
    p50Ms: 3,
    p99Ms: 3000,
    maxMs: 3000,
    over: 2,
  });
  const none = probeFigures([], 100);
  assert.equal(none.count, 0);
  assert.ok(Number.isNaN(none.maxMs) && Number.isNaN(none.p99Ms));
});

test('probesByPhase groups by attack in the listed order, the rest as normal traffic only', () => {
  const probes = [probe(2_000, 900), probe(2_500, 5), probe(6_000, 4), probe(8_500, 200)];
  const groups = probesByPhase(probes, phases, ['glob', 'history', 'downloads'], 100);
  assert.deepEqual(
    groups.map((g) => [g.name, g.figures.count, g.figures.maxMs, g.figures.over]),
    [
      ['glob', 2, 900, 1],
      ['history', 1, 200, 1],
      ['downloads', 0, Number.NaN, 0],
      [NORMAL_ONLY, 1, 4, 0],
    ],
  );
});

test('slowestProbes: slowest first, with what ran', () => {
  const slowest = slowestProbes([probe(2_000, 900), probe(6_000, 4), probe(8_500, 200)], phases, 2);
  assert.deepEqual(
    slowest.map((s) => [s.probe.ms, describeAttribution(s.attribution)]),
    [
      [900, 'during glob'],
      [200, 'during history'],
    ],
  );
});

test('rssAfterWarmup is the median of the last samples of the warm-up; NaN without any', () => {
  const samples = [
    { atMs: 0, rssMb: 100 },
    { atMs: 50_000, rssMb: 150 },
    { atMs: 55_000, rssMb: 400 },
    { atMs: 60_000, rssMb: 160 },
    { atMs: 61_000, rssMb: 900 },
  ];
  assert.equal(rssAfterWarmup(samples, 60_000, 10_000), 160);
  assert.ok(Number.isNaN(rssAfterWarmup(samples, 30_000, 10_000)));
});

test('rssByPhase: the highest RSS sampled during each attack, and in between', () => {
  const samples = [
    { atMs: 500, rssMb: 999 }, // warm-up: left out
    { atMs: 2_000, rssMb: 300 },
    { atMs: 4_000, rssMb: 350 },
    { atMs: 6_000, rssMb: 200 },
    { atMs: 8_500, rssMb: 260 },
  ];
  assert.deepEqual(
    [...rssByPhase(samples, phases, 1_000)],
    [
      ['glob', 350],
      [NORMAL_ONLY, 200],
      ['history', 260],
    ],
  );
});

test('soakTargets: the verdicts of issue #30 from the run own numbers', () => {
  const good = soakTargets({
    probes: { count: 2900, failures: 0, p50Ms: 2, p99Ms: 20, maxMs: 60, over: 0 },
    probeSpan: 'from the first attack on',
    probeLimitMs: 100,
    rssBaselineMb: 200,
    rssMaxMb: 280,
    rssFactorLimit: 1.5,
    errorLines: 0,
    stderrLines: 0,
  });
  assert.deepEqual(
    good.map((t) => verdict(t).met),
    [true, true, true, true],
  );
  assert.equal(good[2]?.measured, 1.4);
  assert.match(
    good[0]?.name ?? '',
    /never slower than 100 ms from the first attack on \(slowest of 2900 probes\)/,
  );
  assert.equal(good[2]?.note, 'highest 280 MB');

  const bad = soakTargets({
    probes: { count: 2900, failures: 3, p50Ms: 2, p99Ms: 900, maxMs: 3000, over: 12 },
    probeSpan: 'after warm-up',
    probeLimitMs: 100,
    rssBaselineMb: 200,
    rssMaxMb: 320,
    rssNote: '2.00x of the RSS after normal traffic alone (160 MB)',
    rssFactorLimit: 1.5,
    errorLines: 2,
    stderrLines: 1,
  });
  assert.deepEqual(
    bad.map((t) => verdict(t).met),
    [false, false, false, false],
  );
  assert.equal(bad[0]?.note, '12 probes over 100 ms');
  assert.equal(bad[3]?.measured, 3);
  assert.equal(bad[2]?.note, 'highest 320 MB; 2.00x of the RSS after normal traffic alone (160 MB)');

  // A run that measured nothing after warm-up has no verdict, rather than a met one.
  const empty = soakTargets({
    probes: probeFigures([], 100),
    probeSpan: 'after warm-up',
    probeLimitMs: 100,
    rssBaselineMb: Number.NaN,
    rssMaxMb: Number.NaN,
    rssFactorLimit: 1.5,
    errorLines: 0,
    stderrLines: 0,
  });
  assert.deepEqual(
    empty.map((t) => verdict(t).met),
    [undefined, undefined, undefined, true],
  );
});

test('loopDelayMaxMs: the gauge of a prom-client exposition, in ms; NaN without it', () => {
  const text = [
    '# HELP nodejs_eventloop_lag_max_seconds The maximum recorded event loop delay.',
    '# TYPE nodejs_eventloop_lag_max_seconds gauge',
    'nodejs_eventloop_lag_max_seconds 0.012738559',
    'nodejs_eventloop_lag_max_seconds_other 9',
  ].join('\n');
  assert.equal(loopDelayMaxMs(text), 12.738559);
  assert.equal(loopDelayMaxMs('nodejs_eventloop_lag_max_seconds{app="x"} 0.5\n'), 500);
  assert.ok(Number.isNaN(loopDelayMaxMs('nodejs_eventloop_lag_p99_seconds 0.01\n')));
});

test('loopDelayDuring: the largest reading from the first after the probe was sent to the first after its answer', () => {
  const readings = [
    { atMs: 1_000, maxMs: 90 },
    { atMs: 3_000, maxMs: 12 },
    { atMs: 5_000, maxMs: 40 },
    { atMs: 7_000, maxMs: 11 },
  ];
  // Sent at 2.9 s, answered at 3.2 s: the readings of 3 s and 5 s cover it, not that of 1 s.
  assert.equal(loopDelayDuring(probe(2_900, 300), readings), 40);
  // Sent and answered between two readings: the one after it.
  assert.equal(loopDelayDuring(probe(5_500, 100), readings), 11);
  // Sent before the first reading: that reading covers it.
  assert.equal(loopDelayDuring(probe(500, 100), readings), 90);
  // Answered after the last reading: nothing covers it yet.
  assert.ok(Number.isNaN(loopDelayDuring(probe(6_900, 200), readings)));
});
