/**
 * The paced client of bench/run.ts's proxy scenario (issue #32): `GET PATH` at RATE requests a
 * second, open loop (bench/pace.ts: request i goes at i / RATE s whatever became of the others), to
 * each 127.0.0.1 port of PORTS in turn, SLICE_MS at a time; the first WARMUP seconds a port are not
 * counted, then SECONDS a port are measured. Each port gets at most CONNECTIONS keep-alive HTTP/1.1
 * connections; a request waits in this client's queue while all of them are busy, and that wait is
 * in its latency; one not answered within 2 s of its hand-over fails (and its connection is closed),
 * as with wrk's timeout. A connection idle for 4 s is closed (before a server's keep-alive timeout).
 *
 *   node bench/paced-client.ts PORT[,PORT...] PATH RATE SECONDS [WARMUP=1] [CONNECTIONS=50] [SLICE_MS=250]
 *
 * It writes a prepared request and reads answers with {@link Http1Reader} on plain sockets: undici's
 * client took about 110 µs of CPU a request here (user and system), as much as the proxies it
 * measures, on a 2-core machine they share; this takes about 55.
 *
 * Prints one JSON line: per port, the measured part's counts, p50 / p90 / p99 / max latency in ms
 * (hand-over to the end of the answer), p99 / max of how late this process handed requests over
 * against their schedule (its own delay, not the server's), and the warm-up's successes. Bounded: it
 * exits within (WARMUP + SECONDS) × ports + 2 × 3 s.
 */
import { connect, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { percentile } from './lib.ts';
import { Http1Reader, runPaced } from './pace.ts';

const [portsArg = '', path = '/', rateArg, secondsArg, warmupArg, connectionsArg, sliceArg] =
  process.argv.slice(2);
const ports = portsArg.split(',').map(Number);
const rate = Number(rateArg);
const seconds = Number(secondsArg);
const warmup = Number(warmupArg ?? 1);
const maxConnections = Number(connectionsArg ?? 50);
const sliceMs = Number(sliceArg ?? 250);
if (ports.some((p) => !(p > 0)) || !(rate > 0) || !(seconds > 0) || !(sliceMs > 0)) {
  process.stderr.write(
    'usage: node bench/paced-client.ts PORT[,PORT...] PATH RATE SECONDS [WARMUP] [CONNECTIONS] [SLICE_MS]\n',
  );
  process.exit(2);
}

const TIMEOUT_MS = 2000;
const GRACE_MS = 3000;

interface Waiting {
  readonly resolve: (ok: boolean) => void;
  readonly since: number;
}

interface Connection {
  readonly socket: Socket;
  readonly reader: Http1Reader;
  current: Waiting | undefined;
  /** When it last became idle. */
  idleSince: number;
}

/**
 * An idle connection is closed by this client after this long, before a server's keep-alive
 * timeout (node's default: 5 s) closes it: a request written as the server closes would fail. Longer
 * than a target waits for its next turn (the other targets' slices: 2 s for bench/run.ts's five
 * targets of 500 ms), so that a turn goes on with the connections of the last one, as a steady
 * client's would. At 2 s, a turn could start with every connection closed and open up to
 * CONNECTIONS new ones at once, a burst of accepts a steady client never sends: it showed as the
 * first 50 ms of a turn having several times the p99 of the rest.
 */
const IDLE_CLOSE_MS = 4000;
if ((ports.length - 1) * sliceMs >= IDLE_CLOSE_MS) {
  process.stderr.write(
    `paced-client: ${ports.length} targets of ${sliceMs} ms leave each idle for ${(ports.length - 1) * sliceMs} ms, not below the ${IDLE_CLOSE_MS} ms after which an idle connection is closed\n`,
  );
  process.exit(2);
}

/** Up to `maxConnections` keep-alive connections to one port, and the requests waiting for one. */
class Target {
  readonly #port: number;
  readonly #request: Buffer;
  readonly #idle: Connection[] = [];
  readonly all = new Set<Connection>();
  readonly queue: Waiting[] = [];

  constructor(port: number) {
    this.#port = port;
    this.#request = Buffer.from(
      `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUser-Agent: echo-chaos-bench\r\n\r\n`,
    );
  }

  send(): Promise<boolean> {
    return new Promise((resolve) => {
      this.queue.push({ resolve, since: performance.now() });
      this.#pump();
    });
  }

  /** Fails what waited longer than the timeout: in the queue, or on a connection (then closed). */
  sweep(now: number): void {
    while (this.queue.length > 0 && now - (this.queue[0] as Waiting).since > TIMEOUT_MS)
      this.queue.shift()?.resolve(false);
    for (const c of this.all) {
      if (c.current !== undefined && now - c.current.since > TIMEOUT_MS) c.socket.destroy();
      else if (c.current === undefined && now - c.idleSince > IDLE_CLOSE_MS) c.socket.destroy();
    }
  }

  #open(): Connection {
    const socket = connect(this.#port, '127.0.0.1');
    socket.setNoDelay(true);
    const c: Connection = { socket, reader: new Http1Reader(), current: undefined, idleSince: 0 };
    this.all.add(c);
    const fail = () => {
      if (!this.all.delete(c)) return;
      const i = this.#idle.indexOf(c);
      if (i !== -1) this.#idle.splice(i, 1);
      c.current?.resolve(false);
      c.current = undefined;
      socket.destroy();
      this.#pump();
    };
    socket.on('error', fail);
    socket.on('close', fail);
    socket.on('data', (chunk: Buffer) => {
      let answers: ReturnType<Http1Reader['feed']>;
      try {
        answers = c.reader.feed(chunk);
      } catch {
        fail();
        return;
      }
      for (const a of answers) {
        const w = c.current;
        c.current = undefined;
        w?.resolve(a.status >= 200 && a.status < 400);
        if (a.close) {
          fail();
          return;
        }
        this.#next(c);
      }
    });
    return c;
  }

  /** Gives connection `c` the next waiting request, or puts it with the idle ones. */
  #next(c: Connection): void {
    const w = this.queue.shift();
    if (w === undefined) {
      c.idleSince = performance.now();
      this.#idle.push(c);
      return;
    }
    c.current = w;
    c.socket.write(this.#request);
  }

  /** Starts waiting requests on idle connections, or on new ones while under the limit. */
  #pump(): void {
    while (this.queue.length > 0) {
      const c = this.#idle.pop() ?? (this.all.size < maxConnections ? this.#open() : undefined);
      if (c === undefined) return;
      this.#next(c);
    }
  }
}

const targets = ports.map((port) => new Target(port));
const sweeper = setInterval(() => {
  const now = performance.now();
  for (const t of targets) t.sweep(now);
}, 100);

const deps = {
  now: () => performance.now(),
  sleep: (ms: number) => sleep(ms, undefined, { ref: false }),
  send: (_i: number, target: number) => (targets[target] as Target).send(),
};
const options = { rate, graceMs: GRACE_MS, targets: targets.length, sliceMs };
const warm =
  warmup > 0 ? await runPaced({ ...options, durationMs: warmup * 1000 * targets.length }, deps) : undefined;
const r = await runPaced({ ...options, durationMs: seconds * 1000 * targets.length }, deps);
clearInterval(sweeper);
process.stdout.write(
  `${JSON.stringify({
    rate,
    seconds,
    sliceMs,
    elapsedS: r.elapsedMs / 1000,
    targets: r.targets.map((t, i) => ({
      port: ports[i],
      warmupOk: warm?.targets[i]?.ok ?? 0,
      sent: t.sent,
      ok: t.ok,
      failed: t.failed,
      unfinished: t.unfinished,
      p50Ms: percentile(t.latenciesMs, 50),
      p90Ms: percentile(t.latenciesMs, 90),
      p99Ms: percentile(t.latenciesMs, 99),
      maxMs: percentile(t.latenciesMs, 100),
      lateP99Ms: percentile(t.lateMs, 99),
      lateMaxMs: percentile(t.lateMs, 100),
    })),
  })}\n`,
);
process.exit(0);
