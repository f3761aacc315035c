import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import {
  cpuSecondsOfStat,
  formatApart,
  formatValue,
  halvesMax,
  median,
  parseH2load,
  parseWrk,
  peakDuring,
  percentile,
  roundRatio,
  sampleUntil,
  slope,
  statusKb,
  targetsSection,
  verdict,
  wrkDurationMs,
} from '../../bench/lib.ts';

/**
 * The pure part of `npm run bench`: reading the load generators' output (captured from wrk 4.1.0 and
 * h2load 1.52.0 on loopback), the median and ratio math and the verdict on each target. Nothing here
 * runs a load generator or asserts a time.
 */

const WRK_OK = `Running 5s test @ http://127.0.0.1:41234/bench/path?x=1
  2 threads and 50 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     2.31ms    1.87ms  41.22ms   93.10%
    Req/Sec    11.02k     1.21k   13.40k    71.00%
  Latency Distribution
     50%    1.92ms
     75%    2.40ms
     90%    3.11ms
     99%  812.00us
  109712 requests in 5.00s, 33.12MB read
  Non-2xx or 3xx responses: 17
Requests/sec:  21938.45
Transfer/sec:      6.62MB
`;

const WRK_TIMEOUTS = `Running 10s test @ http://127.0.0.1:41235/bench/path?x=1
  2 threads and 1000 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency   140.12ms   90.40ms   1.99s    96.00%
    Req/Sec     3.10k   400.00     4.00k    70.00%
  Latency Distribution
     50%  140.00ms
     75%  160.00ms
     90%  200.00ms
     99%    1.20s
  62000 requests in 10.01s, 12.00MB read
  Socket errors: connect 3, read 4, write 5, timeout 157
Requests/sec:   6193.81
Transfer/sec:      1.20MB
`;

const WRK_NOTHING = `Running 1s test @ http://127.0.0.1:31116/x
  2 threads and 4 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     0.00us    0.00us   0.00us    -nan%
    Req/Sec     0.00      0.00     0.00      -nan%
  Latency Distribution
     50%    0.00us
     75%    0.00us
     90%    0.00us
     99%    0.00us
  0 requests in 1.00s, 0.00B read
  Socket errors: connect 0, read 2387, write 0, timeout 0
Requests/sec:      0.00
Transfer/sec:       0.00B
`;

const H2LOAD = `starting benchmark...
spawning thread #0: 2 total client(s). 10 total requests
spawning thread #1: 2 total client(s). 10 total requests
Application protocol: h2c
progress: 100% done

finished in 54.07ms, 369.90 req/s, 77.66KB/s
requests: 20 total, 20 started, 18 done, 16 succeeded, 2 failed, 1 errored, 3 timeout
status codes: 14 2xx, 0 3xx, 1 4xx, 1 5xx
traffic: 4.20KB (4300) total, 228B (228) headers (space savings 85.75%), 3.38KB (3460) data
                     min         max         mean         sd        +/- sd
time for request:     1.74ms     22.66ms      9.73ms      7.69ms    65.00%
`;

test('wrk durations in every unit it prints', () => {
  assert.equal(wrkDurationMs('812.00us'), 0.812);
  assert.equal(wrkDurationMs('1.92ms'), 1.92);
  assert.equal(wrkDurationMs('1.20s'), 1200);
  assert.equal(wrkDurationMs('1.50m'), 90_000);
  assert.throws(() => wrkDurationMs('fast'));
});

test('wrk: rate, count, percentiles, non-2xx; no socket-errors line means none', () => {
  assert.deepEqual(parseWrk(WRK_OK), {
    rps: 21938.45,
    requests: 109712,
    p50Ms: 1.92,
    p99Ms: 0.812,
    errors: 0,
    timeouts: 0,
    non2xx: 17,
  });
});

test('wrk: connect, read and write errors add up; timeouts apart', () => {
  const s = parseWrk(WRK_TIMEOUTS);
  assert.equal(s.errors, 12);
  assert.equal(s.timeouts, 157);
  assert.equal(s.p50Ms, 140);
  assert.equal(s.p99Ms, 1200);
  assert.equal(s.rps, 6193.81);
  assert.equal(parseWrk(WRK_NOTHING).errors, 2387);
  assert.equal(parseWrk(WRK_NOTHING).requests, 0);
});

test('wrk: output without a rate is an error, not a zero', () => {
  assert.throws(() => parseWrk('unable to connect to 127.0.0.1:1 Connection refused\n'), /cannot read wrk/);
});

test('h2load: the rate and counts from its report, percentiles from its per-request log', () => {
  // start µs, status, µs to the end of the response; a torn last line is skipped
  const log = [
    ...Array.from({ length: 99 }, (_, i) => `1795520142873015\t200\t${(i + 1) * 1000}`),
    '179\t200\t500000',
    '17955',
  ].join('\n');
  const s = parseH2load(H2LOAD, log);
  assert.equal(s.rps, 369.9);
  assert.equal(s.requests, 18);
  assert.equal(s.errors, 1);
  assert.equal(s.timeouts, 3);
  assert.equal(s.non2xx, 2);
  assert.equal(s.p50Ms, 50);
  assert.equal(s.p99Ms, 99);
  assert.throws(() => parseH2load('finished nothing', ''), /cannot read h2load/);
});

test('percentile by nearest rank; median of odd and even counts; NaN of nothing', () => {
  assert.equal(percentile([5, 1, 3, 2, 4], 50), 3);
  assert.equal(percentile([5, 1, 3, 2, 4], 99), 5);
  assert.equal(percentile([7], 1), 7);
  assert.ok(Number.isNaN(percentile([], 50)));
  assert.equal(median([3, 1, 2]), 2);
  assert.equal(median([4, 1, 3, 2]), 2.5);
  assert.equal(median([Number.NaN, 1, 3]), 2);
  assert.ok(Number.isNaN(median([])));
});

test('the ratio is the median of per-round ratios, not the ratio of medians', () => {
  // Round 2 ran while the machine was busy: both servers slower, the round's ratio still 0.5.
  const baseline = [1000, 400, 1000];
  const candidate = [500, 200, 900];
  assert.equal(roundRatio(candidate, baseline), 0.5);
  // a zero baseline round is left out rather than dividing by zero
  assert.equal(roundRatio([1, 2, 3], [0, 4, 6]), 0.5);
  assert.ok(Number.isNaN(roundRatio([], [])));
});

test('least-squares slope', () => {
  assert.equal(slope([0, 1, 2, 3], [10, 12, 14, 16]), 2);
  assert.equal(slope([0, 1, 2], [5, 5, 5]), 0);
  assert.equal(slope([1], [1]), 0);
  assert.equal(slope([2, 2], [1, 9]), 0);
});

test('verdicts say met, or by how much a target is missed, or that it was not measured', () => {
  assert.deepEqual(verdict({ name: 'a', op: '>=', limit: 0.8, measured: 0.85, unit: 'ratio' }), {
    met: true,
    text: 'met',
  });
  assert.equal(verdict({ name: 'a', op: '>=', limit: 0.8, measured: 0.8, unit: 'ratio' }).met, true);
  assert.deepEqual(verdict({ name: 'a', op: '>=', limit: 0.8, measured: 0.44, unit: 'ratio' }), {
    met: false,
    text: 'not met: 0.36 short (45% below the target)',
  });
  assert.deepEqual(verdict({ name: 'b', op: '<=', limit: 150, measured: 368, unit: 'MB' }), {
    met: false,
    text: 'not met: 2.45 times the limit (218 MB over)',
  });
  assert.deepEqual(verdict({ name: 'c', op: '<=', limit: 0, measured: 157, unit: 'count' }), {
    met: false,
    text: 'not met: 157 instead of none',
  });
  assert.deepEqual(verdict({ name: 'd', op: '<=', limit: 1.5, measured: Number.NaN, unit: 'x' }), {
    met: undefined,
    text: 'not measured',
  });
});

test('the targets section counts what was met and what was not measured', () => {
  const text = targetsSection([
    { name: 'GET ratio', op: '>=', limit: 0.8, measured: 0.9, unit: 'ratio' },
    { name: 'RSS', op: '<=', limit: 600, measured: 700, unit: 'MB', note: '9,850 of each' },
    { name: 'obs', op: '>=', limit: 0.9, measured: Number.NaN, unit: 'ratio' },
  ]);
  assert.match(text, /^1 of 3 targets met, 1 not measured in this run\./);
  assert.match(text, /\| GET ratio \| ≥ 0\.80 \| 0\.90 \| met \|/);
  assert.match(
    text,
    /\| RSS \| ≤ 600 MB \| 700 MB \| not met: 1\.17 times the limit \(100 MB over\) \(9,850 of each\) \|/,
  );
  assert.match(text, /\| obs \| ≥ 0\.90 \| n\/a \| not measured \|/);
});

test('CPU seconds of a /proc stat line: utime plus stime, counted from the last parenthesis', () => {
  // pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime ...
  const line = '4242 (node (a) b) R 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 11 0\n';
  assert.equal(cpuSecondsOfStat(line, 100), 3);
  assert.equal(cpuSecondsOfStat(line, 1000), 0.3);
  assert.throws(() => cpuSecondsOfStat('no parenthesis here', 100), /not a \/proc stat line/);
  assert.throws(() => cpuSecondsOfStat('1 (x) R 1', 100), /no utime and stime/);
  // This process's own line parses, and its CPU time does not go back while it works.
  const self = () => cpuSecondsOfStat(readFileSync('/proc/self/stat', 'utf8'), 100);
  const before = self();
  let x = 0;
  for (let i = 0; i < 2e7; i++) x += i % 7;
  assert.ok(x > 0);
  assert.ok(self() >= before && before > 0);
});

const STATUS = `Name:\tnode
State:\tS (sleeping)
VmPeak:\t 9894056 kB
VmHWM:\t  229896 kB
VmRSS:\t  222476 kB
RssAnon:\t  180000 kB
`;

test('kB lines of /proc/<pid>/status by name; NaN when absent', () => {
  assert.equal(statusKb(STATUS, 'VmRSS'), 222476);
  assert.equal(statusKb(STATUS, 'VmHWM'), 229896);
  assert.ok(Number.isNaN(statusKb(STATUS, 'VmSwap')));
  assert.ok(Number.isNaN(statusKb('', 'VmRSS')));
  assert.equal(formatValue(115.4, 'MiB'), '115 MiB');
});

test('sampling until a transfer ends: one at the start, one per interval, one after the end (fake clock)', async () => {
  let now = 0;
  let finish: (value: string) => void = () => {};
  const done = new Promise<string>((resolve) => {
    finish = resolve;
  });
  const waits: number[] = [];
  // Each wait moves the clock; the transfer ends during the fourth.
  const wait = async (ms: number) => {
    waits.push(ms);
    now += ms;
    if (now >= 200) finish('1073741824 200');
  };
  const { result, samples } = await sampleUntil(done, () => 100 + now, wait, 50);
  assert.equal(result, '1073741824 200');
  assert.deepEqual(waits, [50, 50, 50, 50]);
  assert.deepEqual(samples, [100, 150, 200, 250, 300]);
});

test('sampling stops when the transfer fails, and the failure comes through', async () => {
  let calls = 0;
  const failed = Promise.reject(new Error('curl exited 28'));
  await assert.rejects(
    sampleUntil(
      failed,
      () => ++calls,
      () => new Promise<void>(() => {}),
      50,
    ),
    /curl exited 28/,
  );
  assert.ok(calls >= 1 && calls <= 2);
});

test('the peak during a transfer: VmHWM when it rose, else the highest sample (startup peaked higher)', () => {
  assert.equal(peakDuring(150_000, 240_000, [150_000, 200_000, 230_000]), 240_000);
  assert.equal(peakDuring(260_000, 260_000, [150_000, 210_000, Number.NaN, 190_000]), 210_000);
  assert.ok(Number.isNaN(peakDuring(1, 1, [])));
});

test('the highest sample of each half: a bounded RSS stops rising', () => {
  assert.deepEqual(halvesMax([100, 180, 170, 175, 178, 160]), [180, 178]);
  assert.deepEqual(halvesMax([100, 120, 140, 160, 180]), [140, 180]);
  const [first, second] = halvesMax([5]);
  assert.equal(first, 5);
  assert.ok(Number.isNaN(second));
});

test('a measured value just over its limit is printed with the decimal that shows it over', () => {
  assert.equal(formatApart(150.4, 150, 'MB'), '150.4 MB');
  assert.equal(formatApart(150, 150, 'MB'), '150 MB');
  assert.equal(formatApart(149.6, 150, 'MB'), '149.6 MB');
  assert.equal(formatApart(163.2, 150, 'MB'), '163 MB');
  assert.equal(formatApart(1.504, 1.5, 'x'), '1.504×');
  assert.equal(formatApart(0.598, 0.6, 'ratio'), '0.598');
  assert.equal(formatApart(30.04, 30, 'us'), '30.04 µs');
  const text = targetsSection([
    { name: 'RSS after a million requests, defaults', op: '<=', limit: 150, measured: 150.4, unit: 'MB' },
  ]);
  assert.match(text, /\| ≤ 150 MB \| 150\.4 MB \| not met: 1\.00 times the limit \(0\.4 MB over\) \|/);
});
