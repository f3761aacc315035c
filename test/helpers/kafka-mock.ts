/**
 * A real Kafka wire protocol for tests: librdkafka's mock cluster, started by Debian's `kcat`
 * (`.ci/run` installs it). `kcat -b 127.0.0.1:1 -X test.mock.num.brokers=N -d mock -P -t warmup`
 * starts a producer whose librdkafka runs an in-process mock cluster and logs
 * `bootstrap.servers=127.0.0.1:PORT[,...]`. The cluster lives as long as kcat, and kcat as long as
 * its stdin is open: ending stdin stops it, and so does the death of the test process (EOF).
 *
 * What the mock does (kcat 1.7.1, librdkafka 2.0.2 on Debian 12) with kafkajs 2.2.4:
 * - Topics are created (4 partitions, all led by broker 1) by the first Metadata request naming them:
 *   a producer's send or a consumer's subscribe. There is no CreateTopics/DeleteTopics, and Metadata
 *   names controller 0, which does not exist, so `admin.createTopics` fails ("Broker 0 not found in
 *   the cached metadata"). `describeGroups`/`listGroups` are not served either; `listTopics`,
 *   `fetchTopicMetadata`, `fetchTopicOffsets` and `fetchOffsets` work.
 * - Served APIs: Produce ≤7, Fetch ≤11, ListOffsets ≤5, Metadata ≤2, OffsetCommit ≤7,
 *   OffsetFetch ≤5, FindCoordinator ≤2, JoinGroup ≤5, Heartbeat ≤3, LeaveGroup ≤1, SyncGroup ≤3,
 *   ApiVersions ≤2, InitProducerId ≤4 and the transaction APIs. No SASL, no TLS.
 * - Consumer groups work (join, sync, heartbeat, commit, leave), but the coordinator holds the first
 *   JoinGroup of an empty group for 3 s, and a later rebalance for `sessionTimeout - 1000` ms.
 *   kafkajs' `consumer.run()` resolves after the join, so each fresh group costs >= 3 s: run
 *   tests with separate groups concurrently, and use {@link MOCK_CONSUMER_SETTINGS}.
 * - Keys, values (binary, null), headers (repeated ones too) and CreateTime timestamps come back as
 *   produced; kafkajs hands header values over as Buffers. The Produce response's logAppendTime is
 *   a constant 1234 (meaningless).
 * - Disconnect kafkajs clients before stop(): a consumer that crashed on the lost broker and is
 *   restarting when `disconnect()` is called goes on restarting forever and keeps the test process
 *   alive. Tests that take the broker away should set `retry.restartOnFailure: async () => false`.
 * - kafkajs 2.2.4 on Node 24 prints one TimeoutNegativeWarning per process (its request queue calls
 *   setTimeout with -Date.now() when not throttled); it is harmless.
 * - `-d mock` logs every request, so only the last 64 KiB of kcat's output is kept.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import type { TestContext } from 'node:test';

/**
 * kafkajs consumer settings that suit the mock group coordinator: a rebalance after the first join
 * is held `sessionTimeout - 1000` ms (kafkajs' default 30 s would stall a test); kafkajs gives a
 * JoinGroup `rebalanceTimeout` + 5 s to answer, well above what the mock holds it; and a short
 * fetch wait keeps `disconnect()` quick.
 */
export const MOCK_CONSUMER_SETTINGS = {
  sessionTimeout: 6_000,
  rebalanceTimeout: 10_000,
  heartbeatInterval: 500,
  maxWaitTimeInMs: 250,
} as const;

/** The kcat executable (Debian package kcat). */
export const KCAT = 'kcat';

/** What a test says when kcat is missing. */
export const KCAT_MISSING =
  'kcat not found on PATH: install the Debian package kcat (apt-get install -y kcat)';

let kcatFound: boolean | undefined;

/** Whether kcat can be run (probed once). */
export function hasKcat(): boolean {
  kcatFound ??= spawnSync(KCAT, ['-V'], { stdio: 'ignore', timeout: 10_000 }).status === 0;
  return kcatFound;
}

/**
 * True when the test can use kcat. When it is missing the test fails under CI (`CI` set) and is
 * skipped elsewhere, saying how to install it.
 */
export function requireKcat(t: TestContext): boolean {
  if (hasKcat()) return true;
  if (process.env['CI']) assert.fail(`${KCAT_MISSING}: required in CI`);
  t.skip(KCAT_MISSING);
  return false;
}

export interface KafkaMock {
  /** `host:port` of the mock cluster's bootstrap broker(s), comma-separated. */
  readonly bootstrap: string;
  /** The brokers as an array, as kafkajs wants them. */
  readonly brokers: string[];
  /** kcat's process id. */
  readonly pid: number;
  /** The last part of kcat's output (its mock debug log), for failure messages. */
  output(): string;
  /** Ends kcat (stdin closed, then SIGTERM, then SIGKILL) and waits for it; always resolves. */
  stop(): Promise<void>;
}

export interface KafkaMockOptions {
  /** Number of mock brokers (default 1). */
  brokers?: number;
  /** How long to wait for the bootstrap line (default 20 s). */
  startTimeoutMs?: number;
}

const BOOTSTRAP_LINE = /Mock cluster \S+ bootstrap\.servers=(\S+)/;
/** How much of kcat's output is kept (the mock log grows with every request). */
const OUTPUT_KEPT = 64 * 1024;

/** Starts a librdkafka mock cluster through kcat. Rejects with kcat's output on timeout or exit. */
export function startKafkaMock(options: KafkaMockOptions = {}): Promise<KafkaMock> {
  const brokers = options.brokers ?? 1;
  const startTimeoutMs = options.startTimeoutMs ?? 20_000;
  const child = spawn(
    KCAT,
    ['-b', '127.0.0.1:1', '-X', `test.mock.num.brokers=${brokers}`, '-d', 'mock', '-P', '-t', 'warmup'],
    { stdio: ['pipe', 'pipe', 'pipe'] },
  );
  let output = '';
  const exited = new Promise<void>((resolve) => {
    child.once('close', () => resolve());
  });

  return new Promise<KafkaMock>((resolve, reject) => {
    let settled = false;
    const fail = (why: string): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      void stopChild(child, exited).then(() =>
        reject(new Error(`${why}; kcat said:\n${output.slice(-8192)}`)),
      );
    };
    const onData = (chunk: Buffer): void => {
      output += chunk.toString('utf8');
      if (output.length > 2 * OUTPUT_KEPT) output = output.slice(-OUTPUT_KEPT);
      if (settled) return;
      const match = BOOTSTRAP_LINE.exec(output);
      if (!match) return;
      settled = true;
      clearTimeout(timer);
      const bootstrap = match[1]!;
      resolve({
        bootstrap,
        brokers: bootstrap.split(','),
        pid: child.pid!,
        output: () => output.slice(-OUTPUT_KEPT),
        stop: () => stopChild(child, exited),
      });
    };
    // Both streams are always read, so a chatty kcat never blocks on a full pipe.
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    // stdin stays open: kcat -P produces until end of input, and the cluster lives as long as kcat.
    child.stdin.on('error', () => {});
    child.once('error', (err) => fail(`kcat could not be started (${err.message})`));
    child.once('exit', (code, signal) =>
      fail(`kcat exited (code ${code}, signal ${signal}) before the mock cluster was up`),
    );
    const timer = setTimeout(
      () => fail(`no "bootstrap.servers=" line from kcat within ${startTimeoutMs} ms`),
      startTimeoutMs,
    );
  });
}

async function stopChild(child: ChildProcess, exited: Promise<void>, boundMs = 5_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return exited;
  const waitFor = (ms: number): Promise<boolean> =>
    Promise.race([
      exited.then(() => true),
      new Promise<boolean>((resolve) => setTimeout(() => resolve(false), ms).unref()),
    ]);
  child.stdin?.end();
  if (await waitFor(boundMs)) return;
  child.kill('SIGTERM');
  if (await waitFor(boundMs)) return;
  child.kill('SIGKILL');
  await waitFor(boundMs);
}

/** Resolves with the first `count` items pushed (in arrival order); later ones are kept in `items` too. */
export function collector<T>(count: number): { items: T[]; push(item: T): void; done: Promise<T[]> } {
  const items: T[] = [];
  let resolve!: (items: T[]) => void;
  const done = new Promise<T[]>((r) => {
    resolve = r;
  });
  return {
    items,
    push(item) {
      items.push(item);
      if (items.length === count) resolve(items.slice());
    },
    done,
  };
}
