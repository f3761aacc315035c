/**
 * `npm run bench`: echo-chaos against a bare node:http echo (bench/bare-echo.ts), in the same run,
 * rounds interleaved, on 127.0.0.1, with wrk (and h2load for HTTP/2 and gRPC); writes bench/RESULTS.md.
 *
 *   node bench/run.ts [--list] [--quick] [--only get,post-1k,...] [--rounds 3] [--seconds 5] [--write|--no-write]
 *
 * Every measurement starts its server afresh, warms it up with the same load, measures, reads its RSS
 * and peak RSS (VmRSS and VmHWM of /proc/<pid>/status), then stops it. A full run writes
 * bench/RESULTS.md; `--quick` or `--only` runs write it only with `--write`, and `--only` then
 * replaces its scenarios' sections alone. See bench/README.md.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import {
  closeSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { connect, createServer } from 'node:net';
import { cpus, loadavg, release, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { GrpcCall } from './grpc-check.ts';
import {
  cpuSecondsOfStat,
  encodeEchoRequest,
  formatValue,
  grpcCallCounts,
  grpcFrame,
  halvesMax,
  median,
  mergeSection,
  parseH2load,
  parseWrk,
  peakDuring,
  roundRatio,
  type Sample,
  sampleUntil,
  startArgs,
  statusKb,
  type Target,
  table,
  targetsSection,
} from './lib.ts';

// ---------------------------------------------------------------------------------------------------
// Options

const argv = process.argv.slice(2);
const flag = (name: string) => argv.includes(`--${name}`);
const value = (name: string): string | undefined => {
  const i = argv.indexOf(`--${name}`);
  return i === -1 ? undefined : argv[i + 1];
};
if (flag('help')) {
  process.stdout.write(
    'node bench/run.ts [--list] [--quick] [--only <scenario,...>] [--rounds N] [--seconds N] [--write|--no-write]\n',
  );
  process.exit(0);
}
const quick = flag('quick');
const only = value('only')
  ?.split(',')
  .map((s) => s.trim());
const rounds = Number(value('rounds') ?? (quick ? 1 : 3));
const seconds = Number(value('seconds') ?? (quick ? 2 : 5));
const warmupSeconds = quick ? 1 : 2;
const write = flag('write') || (!flag('no-write') && !quick && only === undefined);
const root = new URL('..', import.meta.url).pathname;
const resultsPath = join(root, 'bench', 'RESULTS.md');
const tmp = mkdtempSync(join(tmpdir(), 'echo-chaos-bench-'));
const log = (line: string) => process.stdout.write(`${line}\n`);

// ---------------------------------------------------------------------------------------------------
// Servers

interface ServerSpec {
  readonly id: string;
  readonly label: string;
  /** What follows `node`: flags, then the script. */
  readonly script: string;
  readonly env: Record<string, string>;
  readonly nodeArgs?: readonly string[];
  /**
   * echo-chaos's gRPC server: `ECHO_GRPC_PORT` is a second free port, the one the load goes to
   * (the HTTP port serves too).
   */
  readonly grpcPort?: boolean;
  /**
   * stdout is a file (as a container runtime writes it) instead of a pipe this process drains (as
   * a log shipper reads it); removed when the server stops.
   */
  readonly stdoutFile?: boolean;
  /**
   * The web console (issue #37): `open`, one console's live stream (`GET /console/api/live`, its
   * rows and chart points read and discarded) is held through the warm-up and the measured run;
   * `closed`, one is opened and closed before the warm-up, so the server has had a console and
   * has none during the load.
   */
  readonly console?: 'open' | 'closed';
}

/**
 * echo-chaos exactly as `npm start` runs it: the node flags of package.json's start script (the
 * young generation's size, ADR 0013) and its script.
 */
const START_ARGS: readonly string[] = startArgs(
  (
    JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
      scripts: { start: string };
    }
  ).scripts.start,
);
const START_SCRIPT = START_ARGS.at(-1) ?? 'src/echo/main.ts';
const START_FLAGS = START_ARGS.slice(0, -1);

/** Every per-feature switch of obs (there is no single one: each feature has its own `enabled`). */
const OBS_FEATURES = [
  'ACTUATOR',
  'CACHE',
  'CARDINALITY',
  'CONDITIONAL_FEATURES',
  'CONFIG_DRIFT',
  'CONTAINER_MEMORY',
  'CONTEXT',
  'DB',
  'DEPENDENCIES',
  'DIAGNOSTICS',
  'ENFORCEMENT',
  'EXCEPTION_HANDLER',
  'FAN_OUT',
  'FEATURE_FLAGS',
  'JOBS',
  'KAFKA',
  'LOGGING',
  'PRIORITY',
  'PROFILING',
  'RESILIENCE',
  'RETRY',
  'SAMPLING',
  'SHUTDOWN',
  'SLO',
  'TENANT',
  'TIMEOUT_BUDGET',
  'TRACE_GUARD',
  'WIDE_EVENTS',
];

const BARE: ServerSpec = { id: 'bare', label: 'bare node:http', script: 'bench/bare-echo.ts', env: {} };
const BARE_H2: ServerSpec = {
  id: 'bare',
  label: 'bare node:http2 (h2c)',
  script: 'bench/bare-echo.ts',
  env: { BARE_H2: 'true' },
};
const BARE_FASTIFY: ServerSpec = {
  id: 'fastify',
  label: 'bare fastify (no plugins, same work)',
  script: 'bench/bare-fastify.ts',
  env: {},
};
const DEFAULTS: ServerSpec = {
  id: 'defaults',
  label: 'echo-chaos, defaults (`npm start`)',
  script: START_SCRIPT,
  nodeArgs: START_FLAGS,
  env: {},
};
const NO_LOG: ServerSpec = {
  id: 'nolog',
  label: 'echo-chaos, `LOG_REQUESTS=false`',
  script: START_SCRIPT,
  nodeArgs: START_FLAGS,
  env: { LOG_REQUESTS: 'false' },
};
const IN_THREAD: ServerSpec = {
  id: 'inthread',
  label: 'echo-chaos, `LOG_WORKER=false` (the lines built and written in the main thread)',
  script: START_SCRIPT,
  nodeArgs: START_FLAGS,
  env: { LOG_WORKER: 'false' },
};
/** The defaults with stdout to a file, as a container runtime (or `npm start > log`) writes it. */
const DEFAULTS_FILE: ServerSpec = {
  ...DEFAULTS,
  id: 'file',
  label: 'echo-chaos, defaults, stdout to a file',
  stdoutFile: true,
};
const OBS_OFF: ServerSpec = {
  id: 'obsoff',
  label: 'echo-chaos, obs off (every `OBS_*_ENABLED=false`)',
  script: START_SCRIPT,
  nodeArgs: START_FLAGS,
  env: Object.fromEntries(OBS_FEATURES.map((f) => [`OBS_${f}_ENABLED`, 'false'])),
};

/** The gRPC scenario's servers (issue #36): the bare grpc-js server listens on PORT. */
const BARE_GRPC: ServerSpec = {
  id: 'bare',
  label: 'bare grpc-js (`bench/bare-grpc.ts`, Echo only)',
  script: 'bench/bare-grpc.ts',
  env: {},
};
const GRPC_DEFAULTS: ServerSpec = {
  ...DEFAULTS,
  label: 'echo-chaos, defaults (`npm start`), `ECHO_GRPC_PORT`',
  grpcPort: true,
};
const GRPC_NO_LOG: ServerSpec = {
  ...NO_LOG,
  label: 'echo-chaos, `LOG_REQUESTS=false`, `ECHO_GRPC_PORT`',
  grpcPort: true,
};

/** The upstream of the proxy scenario: a small fixed body, and `/bytes/<n>` streamed. */
const UPSTREAM: ServerSpec = {
  id: 'upstream',
  label: 'the bare upstream, called directly',
  script: 'bench/bare-upstream.ts',
  env: {},
};

/** The proxy scenario's servers, each forwarding to the upstream at `url`; the first is the baseline. */
function proxies(url: string): ServerSpec[] {
  return [
    {
      id: 'bareproxy',
      label: 'minimal undici proxy (`bench/bare-proxy.ts`)',
      script: 'bench/bare-proxy.ts',
      env: { UPSTREAM: url },
    },
    { ...DEFAULTS, label: 'echo-chaos forwarding, defaults (`npm start`)', env: { ECHO_UPSTREAM: url } },
    {
      ...IN_THREAD,
      label: 'echo-chaos forwarding, `LOG_WORKER=false`',
      env: { ...IN_THREAD.env, ECHO_UPSTREAM: url },
    },
    {
      ...NO_LOG,
      label: 'echo-chaos forwarding, `LOG_REQUESTS=false`',
      env: { ...NO_LOG.env, ECHO_UPSTREAM: url },
    },
  ];
}

/** The environment a server starts with: ours minus anything that would change echo-chaos. */
function serverEnv(spec: ServerSpec, port: number): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (/^(ECHO_|OBS_|OTEL_|LOG_|MAX_BODY|ENABLE_|NODE_OPTIONS$|npm_)/.test(k)) continue;
    env[k] = v;
  }
  return { ...env, ...spec.env, PORT: String(port), HOST: '127.0.0.1' };
}

interface Running {
  readonly child: ChildProcess;
  readonly port: number;
  /** The gRPC port of a server started with `grpcPort`. */
  readonly grpcPort?: number;
  /** The file stdout goes to, with `stdoutFile`. */
  readonly logFile?: string;
  /** Bytes the server wrote to stdout (its log lines), drained by this process or read off the file. */
  logBytes: number;
  stderr: string;
}

async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  server.close();
  await once(server, 'close');
  return port;
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** Runs `command args` with the soft open-files limit raised to the hard one (the pid stays the same). */
function spawnWithFiles(command: string, args: readonly string[], options: Parameters<typeof spawn>[2]) {
  return spawn(
    'bash',
    ['-c', 'ulimit -n "$(ulimit -Hn)" 2>/dev/null; exec "$@"', 'bash', command, ...args],
    options,
  );
}

async function startServer(spec: ServerSpec): Promise<Running> {
  const port = await freePort();
  let grpcPort: number | undefined;
  while (spec.grpcPort === true && (grpcPort === undefined || grpcPort === port)) grpcPort = await freePort();
  // stdout is a pipe this process drains (as a log shipper would): writing the log lines is part
  // of what a user of `npm start` pays, so it must not go to /dev/null.
  const logFile =
    spec.stdoutFile === true ? join(mkdtempSync(join(tmpdir(), 'bench-log-')), 'stdout.log') : undefined;
  const logFd = logFile === undefined ? undefined : openSync(logFile, 'w');
  const child = spawnWithFiles(process.execPath, [...(spec.nodeArgs ?? []), spec.script], {
    cwd: root,
    env: {
      ...serverEnv(spec, port),
      ...(grpcPort === undefined ? {} : { ECHO_GRPC_PORT: String(grpcPort) }),
    },
    stdio: ['ignore', logFd ?? 'pipe', 'pipe'],
  });
  if (logFd !== undefined) closeSync(logFd);
  const running: Running = {
    child,
    port,
    ...(grpcPort === undefined ? {} : { grpcPort }),
    ...(logFile === undefined ? {} : { logFile }),
    logBytes: 0,
    stderr: '',
  };
  child.stdout?.on('data', (c: Buffer) => {
    running.logBytes += c.length;
  });
  child.stderr?.on('data', (c: Buffer) => {
    running.stderr = (running.stderr + c.toString()).slice(-4000);
  });
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) break;
    if ((await canConnect(port)) && (grpcPort === undefined || (await canConnect(grpcPort)))) return running;
    await sleep(100);
  }
  await stopServer(running);
  throw new Error(`${spec.label} did not start on ${port}:\n${running.stderr}`);
}

/** Adds to a load generator's failure what became of the server (it may have died under the load). */
function withServerState(err: unknown, running: Running): Error {
  const message = err instanceof Error ? err.message : String(err);
  const { child } = running;
  if (child.exitCode === null && child.signalCode === null)
    return new Error(`${message}\n(the server is still running)`);
  return new Error(
    `${message}\nthe server exited (code ${child.exitCode}, signal ${child.signalCode}) after writing ${running.logBytes} bytes of log lines; the end of its stderr:\n${running.stderr.slice(-1500)}`,
  );
}

async function stopServer(running: Running): Promise<void> {
  const { child } = running;
  try {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, 'exit');
    // SIGINT: the drain without ECHO_DRAIN_DELAY's wait for an endpoint controller (ADR 0014).
    child.kill('SIGINT');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
  } finally {
    if (running.logFile !== undefined) {
      running.logBytes = statSync(running.logFile).size;
      rmSync(dirname(running.logFile), { recursive: true, force: true });
    }
  }
}

/** Clock ticks a second, the unit of /proc's CPU times. */
const TICKS_PER_SECOND = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/**
 * CPU seconds the main thread of a process has used (the thread that runs JavaScript and serves
 * every request; GC helpers and the thread pool are apart); NaN when it is gone.
 */
function mainThreadCpuSeconds(pid: number | undefined): number {
  try {
    return cpuSecondsOfStat(readFileSync(`/proc/${pid}/task/${pid}/stat`, 'utf8'), TICKS_PER_SECOND);
  } catch {
    return Number.NaN;
  }
}

/**
 * CPU seconds of a process's worker threads (node names them `WorkerThread`): echo-chaos's one is
 * its log worker (`LOG_WORKER`); 0 for a process with none, NaN when it is gone.
 */
function workerThreadsCpuSeconds(pid: number | undefined): number {
  try {
    let seconds = 0;
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        if (readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim() !== 'WorkerThread') continue;
        seconds += cpuSecondsOfStat(readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8'), TICKS_PER_SECOND);
      } catch {
        // the thread has ended
      }
    }
    return seconds;
  } catch {
    return Number.NaN;
  }
}

/** VmRSS and VmHWM (peak) of a process, in MB (10^6 bytes); NaN when it is gone. */
function memory(pid: number | undefined): { rssMb: number; peakMb: number } {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (name: string) =>
      Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN);
    return { rssMb: (kb('VmRSS') * 1024) / 1e6, peakMb: (kb('VmHWM') * 1024) / 1e6 };
  } catch {
    return { rssMb: Number.NaN, peakMb: Number.NaN };
  }
}

// ---------------------------------------------------------------------------------------------------
// Load generators

function run(command: string, args: readonly string[], timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawnWithFiles(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout?.on('data', (c: Buffer) => {
      out += c.toString();
    });
    child.stderr?.on('data', (c: Buffer) => {
      err += c.toString();
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      if (code === 0) resolve(out);
      else reject(new Error(`${command} ${args.join(' ')} exited ${code}:\n${out}\n${err}`));
    });
  });
}

interface Load {
  readonly tool: 'wrk' | 'h2load';
  readonly connections: number;
  readonly seconds: number;
  /** A wrk Lua script (written to the temporary directory). */
  readonly lua?: string;
  /** wrk's timeout in seconds: a response slower than this counts as a timeout. Default 2. */
  readonly timeout?: number;
  /**
   * h2load: this gRPC call (POSTed to its path with its headers and body) instead of the GET; the
   * server is checked before (bench/grpc-check.ts) and, for echo-chaos, after the load.
   */
  readonly grpc?: GrpcCall;
  /** h2load: concurrent streams a connection (`-m`); default 1. */
  readonly streams?: number;
}

const PATH = '/bench/path?x=1';
/** Streams a connection in the h2c scenario: issue #39 measures h2c with 50 clients × 10 streams. */
const H2_STREAMS = 10;

async function drive(port: number, load: Load, durationS: number, warmupS = 0): Promise<Sample> {
  const url = `http://127.0.0.1:${port}${load.grpc?.path ?? PATH}`;
  if (load.tool === 'h2load') {
    const logFile = join(tmp, `h2load-${port}.log`);
    const grpc =
      load.grpc === undefined
        ? []
        : [
            '-d',
            dataFile(load.grpc.body),
            ...Object.entries(load.grpc.headers).flatMap(([name, value]) => ['-H', `${name}: ${value}`]),
          ];
    const out = await run(
      'h2load',
      [
        `-c${load.connections}`,
        '-t2',
        `-m${load.streams ?? 1}`,
        `-D${durationS}`,
        ...(warmupS > 0 ? [`--warm-up-time=${warmupS}`] : []),
        `--log-file=${logFile}`,
        ...grpc,
        url,
      ],
      (durationS + warmupS + 30) * 1000,
    );
    const sample = parseH2load(out, readFileSync(logFile, 'utf8'));
    rmSync(logFile, { force: true });
    return sample;
  }
  const script = load.lua === undefined ? [] : ['-s', luaFile(load.lua)];
  const out = await run(
    'wrk',
    [
      '-t2',
      `-c${load.connections}`,
      `-d${durationS}s`,
      '--timeout',
      `${load.timeout ?? 2}s`,
      '--latency',
      ...script,
      url,
    ],
    (durationS + 30) * 1000,
  );
  return parseWrk(out);
}

const luaFiles = new Map<string, string>();
function luaFile(source: string): string {
  let path = luaFiles.get(source);
  if (path === undefined) {
    path = join(tmp, `script-${luaFiles.size}.lua`);
    writeFileSync(path, source);
    luaFiles.set(source, path);
  }
  return path;
}

const dataFiles = new Map<Buffer, string>();
/** A request body for h2load's `-d`, written once to the temporary directory. */
function dataFile(body: Buffer): string {
  let path = dataFiles.get(body);
  if (path === undefined) {
    path = join(tmp, `body-${dataFiles.size}.bin`);
    writeFileSync(path, body);
    dataFiles.set(body, path);
  }
  return path;
}

/**
 * The gRPC scenario's call (issue #36): one unary `Echo` with a short message and a 128-byte
 * payload, as a length-prefixed protobuf message (bench/lib.ts encodes it; test/bench/grpc.test.ts
 * decodes it with proto-loader), the headers a gRPC client sends.
 */
const GRPC_MESSAGE = 'bench';
const GRPC_PAYLOAD = Buffer.alloc(128, 'p');
const GRPC_ECHO: GrpcCall = {
  path: '/echochaos.v1.EchoService/Echo',
  headers: { 'content-type': 'application/grpc', te: 'trailers' },
  body: grpcFrame(encodeEchoRequest(GRPC_MESSAGE, GRPC_PAYLOAD)),
  message: GRPC_MESSAGE,
  payload: GRPC_PAYLOAD,
};

const postLua = (bytes: number) =>
  `wrk.method = "POST"\nwrk.body = string.rep("a", ${bytes})\nwrk.headers["Content-Type"] = "application/octet-stream"\n`;

// ---------------------------------------------------------------------------------------------------
// Scenarios

interface Measured extends Sample {
  readonly rssMb: number;
  readonly peakMb: number;
  /**
   * Main-thread CPU µs a request while measured (wrk and the gRPC load; NaN for h2load's GET, whose
   * warm-up is in its run).
   */
  readonly cpuUs: number;
  /** The worker threads' CPU µs a request, measured with {@link cpuUs} (the log worker's). */
  readonly workerCpuUs: number;
}

interface LoadScenario {
  readonly kind: 'load';
  readonly id: string;
  readonly title: string;
  readonly what: string;
  /** The first is the baseline of the ratios. */
  readonly servers: readonly ServerSpec[];
  readonly load: Load;
  /**
   * A `redis-server` runs for the scenario (issue #33): `{redis}` in a server's environment is its
   * URL.
   */
  readonly redis?: boolean;
}

interface OtherScenario {
  readonly kind: 'streams' | 'million' | 'proxy';
  readonly id: string;
  readonly title: string;
  readonly what: string;
}

type Scenario = LoadScenario | OtherScenario;

const WRK50 = { tool: 'wrk', connections: 50, seconds } as const;
const DELAY_CONNECTIONS = 1000;
/** How long the million run waits after its last request: two `ECHO_IDLE_RECLAIM` ticks and a margin. */
const SETTLE_S = 25;
/** The paced client's turns: each target gets the rate for this long, then the next. */
const PACE_SLICE_MS = 500;
/** The streamed transfer of the proxy scenario (issue #32 asks for 1 GiB). */
const TRANSFER_BYTES = quick ? 256 * 1024 * 1024 : 1024 * 1024 * 1024;
const TRANSFER_LABEL = quick ? '256 MiB (`--quick`; the target is about 1 GiB)' : '1 GiB';
/** curl's `--limit-rate`: slower than upstream and proxy can send, so the proxy must hold the upstream back. */
const TRANSFER_READ_RATE = '256M';
const TRANSFER_READ_LABEL = '256 MiB/s';
const RSS_SAMPLE_MS = 50;
/**
 * The bound of "bounded RSS" (issue #32): the highest RSS during the transfer, less the RSS before.
 * bench/README.md says how it was chosen.
 */
const TRANSFER_RSS_GROWTH_MIB = 128;

/** A scenario on the bench's path (two responses in turn), and one on another path: for `shared`. */
const MATCHED_SET = join(tmp, 'matched.yaml');
const UNMATCHED_SET = join(tmp, 'unmatched.yaml');
writeFileSync(
  MATCHED_SET,
  '- path: /bench/path\n  responses:\n    - status: 200\n      body: first\n    - status: 200\n      body: second\n',
);
writeFileSync(UNMATCHED_SET, '- path: /elsewhere\n  responses:\n    - status: 503\n');
// Each shared server names a database of its own: one Redis runs for the scenario, and a replica
// that joins takes the set already there over its own file.
const SHARED_SERVERS: readonly ServerSpec[] = [
  {
    ...DEFAULTS,
    id: 'memplain',
    label: 'in memory, history on (the default), no scenario on the path',
    env: { ECHO_SCENARIO_FILE: UNMATCHED_SET },
  },
  {
    ...DEFAULTS,
    id: 'sharedhistory',
    label: '`ECHO_STATE_URL`, history on, no scenario on the path (entries written in batches)',
    env: { ECHO_SCENARIO_FILE: UNMATCHED_SET, ECHO_STATE_URL: '{redis}/1' },
  },
  {
    ...DEFAULTS,
    id: 'memnohistory',
    label: 'in memory, history off, no scenario on the path',
    env: { ECHO_SCENARIO_FILE: UNMATCHED_SET, ECHO_HISTORY_SIZE: '0' },
  },
  {
    ...DEFAULTS,
    id: 'sharedplain',
    label: '`ECHO_STATE_URL`, history off, no scenario on the path (no round trip)',
    env: { ECHO_SCENARIO_FILE: UNMATCHED_SET, ECHO_STATE_URL: '{redis}/2', ECHO_HISTORY_SIZE: '0' },
  },
  {
    ...DEFAULTS,
    id: 'memmatch',
    label: 'in memory, history off, a scenario on the path',
    env: { ECHO_SCENARIO_FILE: MATCHED_SET, ECHO_HISTORY_SIZE: '0' },
  },
  {
    ...DEFAULTS,
    id: 'sharedmatch',
    label: '`ECHO_STATE_URL`, history off, a scenario on the path (a shared step per request)',
    env: { ECHO_SCENARIO_FILE: MATCHED_SET, ECHO_STATE_URL: '{redis}/3', ECHO_HISTORY_SIZE: '0' },
  },
];

/** The console scenario's servers: the defaults never having had a console, with one closed, with one open. */
const CONSOLE_SERVERS: readonly ServerSpec[] = [
  { ...DEFAULTS, id: 'noconsole', label: 'echo-chaos, defaults, no console ever opened' },
  {
    ...DEFAULTS,
    id: 'consoleclosed',
    label: 'echo-chaos, defaults, a console opened and closed before the load',
    console: 'closed',
  },
  {
    ...DEFAULTS,
    id: 'consoleopen',
    label: 'echo-chaos, defaults, a console open through the load (its live stream read)',
    console: 'open',
  },
];

const SCENARIOS: readonly Scenario[] = [
  {
    kind: 'load',
    id: 'get',
    title: 'GET summary',
    what: `\`GET ${PATH}\`: the plain-text summary of the request. wrk, 2 threads, 50 connections.`,
    servers: [BARE, DEFAULTS, DEFAULTS_FILE, IN_THREAD, NO_LOG, BARE_FASTIFY],
    load: WRK50,
  },
  {
    kind: 'load',
    id: 'post-1k',
    title: 'POST 1 KiB',
    what: 'A 1 KiB body echoed back. wrk, 2 threads, 50 connections.',
    servers: [BARE, DEFAULTS, IN_THREAD, NO_LOG, BARE_FASTIFY],
    load: { ...WRK50, lua: postLua(1024) },
  },
  {
    kind: 'load',
    id: 'post-1m',
    title: 'POST 1 MiB',
    what: 'A 1 MiB body echoed back. wrk, 2 threads, 50 connections, 10 s timeout (50 MiB in flight each way: at 2 s, responses that were only queued counted as timeouts).',
    servers: [BARE, DEFAULTS, NO_LOG],
    load: { ...WRK50, lua: postLua(1024 * 1024), timeout: 10 },
  },
  {
    kind: 'load',
    id: 'delay',
    title: '`X-Echo-Delay: 100ms` at 1,000 connections',
    what: 'GET with `X-Echo-Delay: 100ms` (the bare echo waits on a setTimeout). wrk, 2 threads, 1,000 connections, 10 s, 2 s timeout.',
    servers: [BARE, DEFAULTS, DEFAULTS_FILE, NO_LOG],
    load: {
      tool: 'wrk',
      connections: DELAY_CONNECTIONS,
      seconds: quick ? seconds : Math.max(10, seconds),
      lua: 'wrk.headers["X-Echo-Delay"] = "100ms"\n',
    },
  },
  {
    kind: 'load',
    id: 'gzip',
    title: 'gzip of a 1 MiB generated body',
    what: 'GET with `X-Echo-Response-Size: 1048576`, `X-Echo-Compress: gzip` and `Accept-Encoding: gzip` (echo-chaos compresses on `X-Echo-Compress`, not on `Accept-Encoding`): 1 MiB of random bytes through gzip, both servers alike. wrk, 2 threads, 10 connections, 10 s timeout: a response is CPU-bound (tens of ms of gzip), so 50 connections only queue (at 50 every response took over 2 s here) and more connections add latency, not throughput.',
    servers: [BARE, DEFAULTS, NO_LOG],
    load: {
      ...WRK50,
      connections: 10,
      timeout: 10,
      lua: 'wrk.headers["X-Echo-Response-Size"] = "1048576"\nwrk.headers["X-Echo-Compress"] = "gzip"\nwrk.headers["Accept-Encoding"] = "gzip"\n',
    },
  },
  {
    kind: 'load',
    id: 'h2',
    title: 'HTTP/2 (h2c, prior knowledge)',
    what: `\`GET ${PATH}\` over cleartext HTTP/2 with prior knowledge. h2load, 2 threads, 50 connections, ${H2_STREAMS} streams each (issue #39); p50/p99 from its per-request log. The baseline is a bare node:http2 server.`,
    servers: [BARE_H2, DEFAULTS, NO_LOG],
    load: { tool: 'h2load', connections: 50, streams: H2_STREAMS, seconds },
  },
  {
    kind: 'load',
    id: 'grpc',
    title: 'gRPC unary Echo (issue #36)',
    what: `Unary \`${GRPC_ECHO.path.slice(1)}\` calls (message \`${GRPC_MESSAGE}\`, a ${GRPC_PAYLOAD.length}-byte payload) over cleartext HTTP/2: h2load, 2 threads, 50 connections, 1 stream each, POSTing one length-prefixed \`EchoRequest\` (\`-d\`) with \`content-type: application/grpc\` and \`te: trailers\`; p50/p99 from its per-request log; each server warmed up by a run of its own, so its main-thread CPU is read over the measured run alone. The baseline is a bare grpc-js server serving \`Echo\` from the same proto (\`bench/bare-grpc.ts\`); echo-chaos runs as \`npm start\` does with \`ECHO_GRPC_PORT\` (its HTTP port idle). h2load counts an HTTP 200 as a success and a failed gRPC call is one, so before each load a grpc-js client's \`Echo\` and the load's own request (its \`grpc-status\` trailer read) must end OK with the echo, and after it echo-chaos's \`echo_grpc_requests_total\` must count no \`Echo\` call ended otherwise, or the scenario fails. gRPC calls write no access line: the \`LOG_REQUESTS=false\` row differs from the defaults by the machine's noise only.`,
    servers: [BARE_GRPC, GRPC_DEFAULTS, GRPC_NO_LOG],
    load: { tool: 'h2load', connections: 50, seconds, grpc: GRPC_ECHO },
  },
  {
    kind: 'load',
    id: 'obs',
    title: 'obs on against obs off',
    what: `\`GET ${PATH}\` against echo-chaos with obs off (every obs feature's \`OBS_<FEATURE>_ENABLED=false\`; obs has no single switch) and with its defaults; request logging stays on in both. wrk, 2 threads, 50 connections.`,
    servers: [OBS_OFF, DEFAULTS],
    load: WRK50,
  },
  {
    kind: 'proxy',
    id: 'proxy',
    title: 'reverse proxy: the cost of forwarding (issue #32)',
    what: `\`GET ${PATH}\` forwarded to a bare node:http upstream (\`bench/bare-upstream.ts\`, a 200-byte body) by a minimal undici proxy (\`bench/bare-proxy.ts\`, the baseline) and by echo-chaos with \`ECHO_UPSTREAM\` (no scenario: every request is forwarded), all in front of the same upstream. Throughput: wrk, 2 threads, 50 connections, as \`get\`. Latency at half of the minimal proxy's throughput in the same round: \`bench/paced-client.ts\`, open loop at that rate, the upstream called directly and each proxy taking turns in ${PACE_SLICE_MS} ms slices; "p99 added" is a proxy's p99 minus the upstream's own in the same run. Memory: ${TRANSFER_LABEL} streamed from the upstream through a proxy to curl, which reads it at ${TRANSFER_READ_LABEL} and discards it, the proxy's VmRSS sampled every ${RSS_SAMPLE_MS} ms.`,
  },
  {
    kind: 'load',
    id: 'shared',
    title: 'replicas on Redis: the cost of shared state (issue #33)',
    what: `\`GET ${PATH}\` against echo-chaos with its defaults, its state in memory and with \`ECHO_STATE_URL\` naming a local \`redis-server\` (no persistence), in pairs: history on (each replica writes its entries to one stream, a batch per turn of the event loop), history off and no scenario on the path (no round trip), and a scenario on the path (each request takes its step in one Lua script on Redis). wrk, 2 threads, 50 connections. The ratios are against the first row; compare each pair.`,
    servers: SHARED_SERVERS,
    load: WRK50,
    redis: true,
  },
  {
    kind: 'load',
    id: 'console',
    title: 'the web console: nothing while none is open (issue #37)',
    what: `\`GET ${PATH}\` against echo-chaos with its defaults: never having had a console, after one was opened and closed (\`GET /console/api/live\`, the stream the page reads), and with one open through the load, its stream read and discarded by the bench (a row a request, a chart point a second). The first two should differ by the machine's noise only: with no console open the live log and the charts watch nothing (a request costs one \`Set.size\` check). wrk, 2 threads, 50 connections.`,
    servers: CONSOLE_SERVERS,
    load: WRK50,
  },
  {
    kind: 'streams',
    id: 'streams',
    title: 'open SSE streams and WebSockets',
    what: 'Clients open SSE streams (`GET /sse`) and WebSockets (`/ws`) against echo-chaos with its defaults, in batches, hold them (SSE ticks every 5 s; every WebSocket sends one message), then close them.',
  },
  {
    kind: 'million',
    id: 'million',
    title: 'RSS after a million requests',
    what: `\`GET ${PATH}\` against echo-chaos with its defaults (history of 100) until a million requests were served (wrk, 2 threads, 50 connections, in slices), then its RSS 2 s later and ${SETTLE_S} s later, once \`ECHO_IDLE_RECLAIM\` (10 s without a request) has given the burst's memory back (the target is read then).`,
  },
];

if (flag('list')) {
  for (const s of SCENARIOS) process.stdout.write(`${s.id.padEnd(10)} ${s.title}\n`);
  rmSync(tmp, { recursive: true, force: true });
  process.exit(0);
}
const selected = SCENARIOS.filter((s) => only === undefined || only.includes(s.id));
if (only !== undefined) {
  const unknown = only.filter((id) => !SCENARIOS.some((s) => s.id === id));
  if (unknown.length > 0) {
    process.stderr.write(
      `unknown scenario ${unknown.join(', ')}; known: ${SCENARIOS.map((s) => s.id).join(', ')}\n`,
    );
    rmSync(tmp, { recursive: true, force: true });
    process.exit(2);
  }
}

// ---------------------------------------------------------------------------------------------------
// Tools

function have(tool: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

function ensure(tool: string, debianPackage: string): void {
  if (have(tool)) return;
  log(`${tool} is missing: apt-get install -y ${debianPackage}`);
  try {
    execFileSync('apt-get', ['install', '-y', debianPackage], { stdio: 'inherit', timeout: 300_000 });
  } catch {
    // reported below
  }
  if (!have(tool)) {
    process.stderr.write(`${tool} is needed: install the Debian package ${debianPackage}\n`);
    process.exit(1);
  }
}

ensure('wrk', 'wrk');
if (selected.some((s) => s.kind === 'proxy')) ensure('curl', 'curl');
if (selected.some((s) => s.kind === 'load' && s.redis === true)) ensure('redis-server', 'redis-server');
if (selected.some((s) => s.kind === 'load' && s.load.tool === 'h2load')) ensure('h2load', 'nghttp2-client');

// ---------------------------------------------------------------------------------------------------
// Running a load scenario

/**
 * One console's live stream on `port`, read and discarded until the returned function closes it
 * (the `console` scenario). Resolves once its first bytes (the `hello` event) arrived.
 */
async function openConsoleStream(port: number): Promise<() => Promise<void>> {
  const controller = new AbortController();
  const res = await fetch(`http://127.0.0.1:${port}/console/api/live`, { signal: controller.signal });
  if (!res.ok || res.body === null) throw new Error(`GET /console/api/live answered ${res.status}`);
  const reader = res.body.getReader();
  await reader.read();
  const drained = (async () => {
    try {
      for (;;) if ((await reader.read()).done) return;
    } catch {
      // Aborted: the console closed.
    }
  })();
  return async () => {
    controller.abort();
    await drained;
  };
}

async function measure(spec: ServerSpec, load: Load): Promise<Measured> {
  const server = await startServer(spec);
  const port = server.grpcPort ?? server.port;
  let closeConsole: (() => Promise<void>) | undefined;
  try {
    if (spec.console !== undefined) {
      closeConsole = await openConsoleStream(server.port);
      if (spec.console === 'closed') {
        await closeConsole();
        closeConsole = undefined;
        await sleep(200); // the server sees the stream close
      }
    }
    let sample: Sample;
    let cpuUs = Number.NaN;
    let workerCpuUs = Number.NaN;
    if (load.grpc !== undefined) await (await import('./grpc-check.ts')).checkGrpcEcho(port, load.grpc);
    if (load.tool === 'h2load' && load.grpc === undefined) {
      sample = await drive(port, load, load.seconds, warmupSeconds);
    } else {
      await drive(port, load, warmupSeconds); // JIT, connections
      const before = mainThreadCpuSeconds(server.child.pid);
      const workersBefore = workerThreadsCpuSeconds(server.child.pid);
      sample = await drive(port, load, load.seconds);
      const after = mainThreadCpuSeconds(server.child.pid);
      const workersAfter = workerThreadsCpuSeconds(server.child.pid);
      if (sample.requests > 0) {
        cpuUs = ((after - before) * 1e6) / sample.requests;
        workerCpuUs = ((workersAfter - workersBefore) * 1e6) / sample.requests;
      }
    }
    const measured = { ...sample, ...memory(server.child.pid), cpuUs, workerCpuUs };
    if (load.grpc !== undefined && spec.grpcPort === true)
      await checkGrpcCounted(server.port, load.grpc, sample);
    return measured;
  } catch (err) {
    throw withServerState(err, server);
  } finally {
    await closeConsole?.();
    await stopServer(server);
  }
}

/**
 * After a gRPC load on echo-chaos: its own count of the method's calls by status (`/metrics` on its
 * HTTP port) must hold OK calls alone, at least as many as h2load finished (the checks and the
 * warm-up are counted too), else h2load's HTTP 200s were not all gRPC successes.
 */
async function checkGrpcCounted(httpPort: number, call: GrpcCall, sample: Sample): Promise<void> {
  const res = await fetch(`http://127.0.0.1:${httpPort}/metrics`, { signal: AbortSignal.timeout(10_000) });
  const counts = grpcCallCounts(await res.text(), call.path);
  const ok = counts.get('OK') ?? 0;
  const other = [...counts].filter(([code, n]) => code !== 'OK' && n > 0);
  if (other.length > 0 || ok < sample.requests)
    throw new Error(
      `echo-chaos counted ${call.path} calls: ${ok} OK${other.map(([code, n]) => `, ${n} ${code}`).join('')}; h2load finished ${sample.requests} in the measured run and counts any HTTP 200 as a success, so its numbers would include failed gRPC calls`,
    );
}

interface LoadResult {
  readonly scenario: LoadScenario;
  /** Per server id: one Measured a round. */
  readonly samples: Map<string, Measured[]>;
}

async function runLoad(scenario: LoadScenario): Promise<LoadResult> {
  const samples = new Map<string, Measured[]>(scenario.servers.map((s) => [s.id, []]));
  const redis = scenario.redis === true ? await startRedisServer() : undefined;
  const withRedis = (spec: ServerSpec): ServerSpec =>
    redis === undefined
      ? spec
      : {
          ...spec,
          env: Object.fromEntries(
            Object.entries(spec.env).map(([k, v]) => [k, v.replace('{redis}', redis.url)]),
          ),
        };
  try {
    return await measureRounds(scenario, samples, withRedis);
  } finally {
    redis?.stop();
  }
}

/** A `redis-server` on a free port, no persistence, until `stop`. */
async function startRedisServer(): Promise<{ url: string; stop(): void }> {
  const port = await new Promise<number>((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port: free } = probe.address() as { port: number };
      probe.close(() => resolve(free));
    });
  });
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    {
      stdio: 'ignore',
    },
  );
  for (let i = 0; i < 100; i++) {
    const ok = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1', () => {
        socket.destroy();
        resolve(true);
      }).once('error', () => resolve(false));
    });
    if (ok) break;
    await sleep(50);
  }
  return { url: `redis://127.0.0.1:${port}`, stop: () => child.kill('SIGKILL') };
}

async function measureRounds(
  scenario: LoadScenario,
  samples: Map<string, Measured[]>,
  withRedis: (spec: ServerSpec) => ServerSpec,
): Promise<LoadResult> {
  for (let r = 0; r < rounds; r++) {
    const parts: string[] = [];
    for (const spec of scenario.servers) {
      const m = await measure(withRedis(spec), scenario.load);
      samples.get(spec.id)?.push(m);
      parts.push(
        `${spec.id} ${m.rps.toFixed(0)} rps p99 ${m.p99Ms.toFixed(1)} ms${m.timeouts ? ` ${m.timeouts} timeouts` : ''}`,
      );
    }
    log(`  ${scenario.id} round ${r + 1}/${rounds}: ${parts.join(', ')}`);
  }
  return { scenario, samples };
}

interface Summary {
  readonly rps: number;
  readonly ratio: number;
  readonly p50: number;
  readonly p99: number;
  readonly p99Ratio: number;
  readonly errors: number;
  readonly timeouts: number;
  readonly non2xx: number;
  readonly rss: number;
  readonly peak: number;
  /** Median main-thread CPU µs a request (NaN when not measured). */
  readonly cpuUs: number;
  /** Median worker-thread CPU µs a request (the log worker; NaN when not measured). */
  readonly workerCpuUs: number;
  readonly perRound: string;
}

function summarize(result: LoadResult): Map<string, Summary> {
  const base = result.samples.get(result.scenario.servers[0]?.id ?? '') ?? [];
  const out = new Map<string, Summary>();
  for (const spec of result.scenario.servers) {
    const xs = result.samples.get(spec.id) ?? [];
    out.set(spec.id, {
      rps: median(xs.map((x) => x.rps)),
      ratio: roundRatio(
        xs.map((x) => x.rps),
        base.map((x) => x.rps),
      ),
      p50: median(xs.map((x) => x.p50Ms)),
      p99: median(xs.map((x) => x.p99Ms)),
      p99Ratio: median(xs.map((x) => x.p99Ms)) / median(base.map((x) => x.p99Ms)),
      errors: median(xs.map((x) => x.errors)),
      timeouts: median(xs.map((x) => x.timeouts)),
      non2xx: median(xs.map((x) => x.non2xx)),
      rss: median(xs.map((x) => x.rssMb)),
      peak: Math.max(...xs.map((x) => x.peakMb)),
      cpuUs: median(xs.map((x) => x.cpuUs)),
      workerCpuUs: median(xs.map((x) => x.workerCpuUs)),
      perRound: xs.map((x) => x.rps.toFixed(0)).join(' / '),
    });
  }
  return out;
}

function loadTable(result: LoadResult): string {
  const sums = summarize(result);
  const base = result.scenario.servers[0];
  const rows = result.scenario.servers.map((spec) => {
    const s = sums.get(spec.id) as Summary;
    return [
      spec.label,
      s.rps.toFixed(0),
      spec === base ? '1 (baseline)' : s.ratio.toFixed(2),
      s.p50.toFixed(1),
      s.p99.toFixed(1),
      spec === base ? '1' : s.p99Ratio.toFixed(2),
      `${s.errors} / ${s.timeouts}${s.non2xx ? ` (${s.non2xx} non-2xx)` : ''}`,
      s.rss.toFixed(0),
      s.peak.toFixed(0),
      Number.isNaN(s.cpuUs) ? 'n/a' : s.cpuUs.toFixed(1),
      Number.isNaN(s.workerCpuUs) ? 'n/a' : s.workerCpuUs.toFixed(1),
      s.perRound,
    ];
  });
  return table(
    [
      'server',
      'req/s',
      'ratio',
      'p50 ms',
      'p99 ms',
      'p99 / baseline',
      'errors / timeouts',
      'RSS after MB',
      'peak RSS MB',
      'main-thread CPU µs / request',
      'log worker CPU µs / request',
      'req/s per round',
    ],
    rows,
  );
}

// ---------------------------------------------------------------------------------------------------
// Open streams

interface StreamsResult {
  readonly perKind: number;
  readonly requested: number;
  readonly maxStreams: number;
  readonly clients: Record<
    string,
    {
      opened: number;
      failed: number;
      lost: number;
      received: number;
      clientLagP99Ms: number;
      openSeconds: number;
    }
  >;
  readonly rssIdleMb: number;
  readonly rssHeldMb: number;
  readonly peakMb: number;
  readonly rssAfterCloseMb: number;
  readonly lagOpenP99Ms: number;
  readonly lagHeldP99Ms: number;
  readonly holdSeconds: number;
}

/** prom-client samples the loop every 10 ms and counts that interval in every delay it records. */
const PROM_LAG_RESOLUTION_S = 0.01;

async function lagP99Ms(port: number): Promise<number> {
  // Each scrape also resets prom-client's event-loop histogram: the value covers the time since the last.
  const res = await fetch(`http://127.0.0.1:${port}/metrics`);
  const text = await res.text();
  const m = /^nodejs_eventloop_lag_p99_seconds ([\d.e+-]+)$/m.exec(text);
  return m ? Math.max(0, Number(m[1]) - PROM_LAG_RESOLUTION_S) * 1000 : Number.NaN;
}

function hardFileLimit(): number {
  try {
    return Number(execFileSync('bash', ['-c', 'ulimit -Hn'], { encoding: 'utf8' }).trim()) || 1024;
  } catch {
    return 1024;
  }
}

async function runStreams(): Promise<StreamsResult> {
  const requested = 10_000;
  // Every stream is one descriptor in the server and one in a client (one client process a kind):
  // the server holds both kinds, so its open-files limit bounds what this machine can measure.
  const limit = hardFileLimit();
  const perKind = quick ? 200 : Math.min(requested, Math.floor((limit - 300) / 2));
  // ECHO_MAX_STREAMS (default 10000) counts /sse and /ws together, and ECHO_MAX_CONNECTIONS (default
  // 10000) every connection: both raised, the latter with room for the lag probes.
  const maxStreams = Math.max(10_000, 2 * perKind);
  const holdSeconds = quick ? 3 : 15;
  const server = await startServer({
    ...DEFAULTS,
    env:
      maxStreams > 10_000
        ? { ECHO_MAX_STREAMS: String(maxStreams), ECHO_MAX_CONNECTIONS: String(maxStreams + 100) }
        : {},
  });
  let clients: { kind: string; child: ChildProcess; lines: Record<string, unknown>[] }[] = [];
  try {
    await sleep(1000);
    const rssIdleMb = memory(server.child.pid).rssMb;
    await lagP99Ms(server.port);
    const started = Date.now();
    clients = ['sse', 'ws'].map((kind) => {
      const child = spawnWithFiles(
        process.execPath,
        ['bench/streams-client.ts', kind, String(server.port), String(perKind), '250', '300'],
        { cwd: root, stdio: ['pipe', 'pipe', 'inherit'] },
      );
      const lines: Record<string, unknown>[] = [];
      let buffered = '';
      child.stdout?.on('data', (c: Buffer) => {
        buffered += c.toString();
        let i = buffered.indexOf('\n');
        while (i !== -1) {
          lines.push(JSON.parse(buffered.slice(0, i)));
          buffered = buffered.slice(i + 1);
          i = buffered.indexOf('\n');
        }
      });
      return { kind, child, lines };
    });
    const waitFor = async (phase: string, timeoutS: number) => {
      const deadline = Date.now() + timeoutS * 1000;
      while (!clients.every((c) => c.lines.some((l) => l['phase'] === phase))) {
        if (Date.now() > deadline) throw new Error(`stream clients did not reach ${phase} in ${timeoutS} s`);
        await sleep(200);
      }
    };
    await waitFor('opened', 240);
    const openSeconds = (Date.now() - started) / 1000;
    const lagOpenP99Ms = await lagP99Ms(server.port);
    await sleep(holdSeconds * 1000);
    const lagHeldP99Ms = await lagP99Ms(server.port);
    const held = memory(server.child.pid);
    for (const c of clients) c.child.stdin?.write('close\n');
    await waitFor('done', 60);
    await Promise.all(clients.map((c) => (c.child.exitCode === null ? once(c.child, 'exit') : undefined)));
    await sleep(3000);
    const after = memory(server.child.pid);
    const result: StreamsResult['clients'] = {};
    for (const c of clients) {
      const done = c.lines.find((l) => l['phase'] === 'done') as Record<string, number>;
      const opened = c.lines.find((l) => l['phase'] === 'opened') as Record<string, number>;
      result[c.kind] = {
        opened: done['opened'] ?? 0,
        failed: done['failed'] ?? 0,
        lost: done['lost'] ?? 0,
        received: done['received'] ?? 0,
        clientLagP99Ms: done['clientLagP99Ms'] ?? Number.NaN,
        openSeconds: opened['seconds'] ?? openSeconds,
      };
    }
    return {
      perKind,
      requested,
      maxStreams,
      clients: result,
      rssIdleMb,
      rssHeldMb: held.rssMb,
      peakMb: after.peakMb,
      rssAfterCloseMb: after.rssMb,
      lagOpenP99Ms,
      lagHeldP99Ms,
      holdSeconds,
    };
  } finally {
    for (const c of clients) if (c.child.exitCode === null) c.child.kill('SIGKILL');
    await stopServer(server);
  }
}

function streamsSection(r: StreamsResult): string {
  const lines: string[] = [];
  if (r.perKind < r.requested)
    lines.push(
      `Measured at **${r.perKind.toLocaleString('en')} of each** instead of ${r.requested.toLocaleString('en')}: ${quick ? '`--quick`' : `the hard open-files limit here (\`ulimit -Hn\`) is ${hardFileLimit()}, and the server holds one descriptor per stream`}.`,
      '',
    );
  if (r.maxStreams > 10_000)
    lines.push(
      `\`ECHO_MAX_STREAMS=${r.maxStreams}\` and \`ECHO_MAX_CONNECTIONS=${r.maxStreams + 100}\` for this scenario: their defaults, 10000 each, count \`/sse\` and \`/ws\` together (the rest get 503 / close 1013) and every connection (the rest get 503 and a close), so with the defaults only 10,000 streams in all can be open.`,
      '',
    );
  lines.push(
    table(
      [
        'kind',
        'opened',
        'failed',
        'closed by the server while held',
        'messages received while held',
        'client loop p99 ms',
      ],
      Object.entries(r.clients).map(([kind, c]) => [
        kind === 'sse' ? 'SSE' : 'WebSocket',
        String(c.opened),
        String(c.failed),
        String(c.lost),
        String(c.received),
        formatValue(c.clientLagP99Ms, 'count'),
      ]),
    ),
    '',
    table(
      ['server', 'value'],
      [
        ['RSS idle before', `${r.rssIdleMb.toFixed(0)} MB`],
        [`RSS with all open (after ${r.holdSeconds} s held)`, `${r.rssHeldMb.toFixed(0)} MB`],
        ['peak RSS', `${r.peakMb.toFixed(0)} MB`],
        ['RSS 3 s after all closed', `${r.rssAfterCloseMb.toFixed(0)} MB`],
        ['event-loop lag p99 while opening', `${r.lagOpenP99Ms.toFixed(1)} ms`],
        [`event-loop lag p99 while held (${r.holdSeconds} s)`, `${r.lagHeldP99Ms.toFixed(1)} ms`],
      ],
    ),
  );
  return lines.join('\n');
}

// ---------------------------------------------------------------------------------------------------
// A million requests

interface MillionResult {
  readonly target: number;
  readonly served: number;
  readonly seconds: number;
  /** Once the service has been idle long enough for `ECHO_IDLE_RECLAIM` (10 s) to act. */
  readonly rssMb: number;
  readonly peakMb: number;
  readonly rssIdleMb: number;
  /** 2 s after the last request. */
  readonly rssJustAfterMb: number;
}

async function runMillion(): Promise<MillionResult> {
  const target = quick ? 20_000 : 1_000_000;
  const capS = quick ? 30 : 600;
  const server = await startServer(DEFAULTS);
  try {
    await sleep(1000);
    const rssIdleMb = memory(server.child.pid).rssMb;
    const started = Date.now();
    let served = 0;
    let rps = 0;
    while (served < target && Date.now() - started < capS * 1000) {
      // Slices sized from the last rate, so the run ends close to the target.
      const slice = rps === 0 ? 5 : Math.min(60, Math.max(1, Math.ceil((target - served) / rps)));
      const sample = await drive(server.port, WRK50, slice);
      served += sample.requests;
      rps = sample.rps;
      log(`  million: ${served.toLocaleString('en')} served`);
    }
    const seconds = (Date.now() - started) / 1000;
    await sleep(2000);
    const rssJustAfterMb = memory(server.child.pid).rssMb;
    await sleep((SETTLE_S - 2) * 1000);
    return { target, served, seconds, rssIdleMb, rssJustAfterMb, ...memory(server.child.pid) };
  } catch (err) {
    throw withServerState(err, server);
  } finally {
    await stopServer(server);
  }
}

// ---------------------------------------------------------------------------------------------------
// The reverse proxy's cost (issue #32)

/** One target of a paced run (bench/paced-client.ts's JSON), with its main thread's CPU. */
interface Paced {
  readonly rate: number;
  readonly ok: number;
  readonly failed: number;
  readonly unfinished: number;
  readonly p50Ms: number;
  readonly p90Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
  /** How late the client handed requests over (its own delay), p99. */
  readonly lateP99Ms: number;
  /** Main-thread CPU µs a request over the paced run (NaN for the upstream). */
  readonly cpuUs: number;
}

interface Transfer {
  readonly id: string;
  readonly label: string;
  readonly bytes: number;
  readonly seconds: number;
  readonly status: string;
  readonly idleMb: number;
  /** The highest RSS during the transfer (peakDuring). */
  readonly peakMb: number;
  readonly growthMib: number;
  /** The highest sample of the transfer's first and second half. */
  readonly firstHalfMb: number;
  readonly secondHalfMb: number;
  readonly afterMb: number;
  readonly samples: number;
}

interface ProxyResult {
  readonly load: LoadResult;
  /** Per round: per target id (`upstream` and the proxies), what the paced client measured. */
  readonly paced: Map<string, Paced>[];
  /**
   * The same with the proxy under test on a core of its own ({@link PINNING}); empty when this
   * machine has fewer than two cores or no `taskset`.
   */
  readonly pinnedPaced: Map<string, Paced>[];
  readonly transfers: Transfer[];
}

const kbToMb = (kb: number) => (kb * 1024) / 1e6;

function status(pid: number | undefined): string {
  try {
    return readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return '';
  }
}

/**
 * Where the pinned paced run puts each process (`taskset`): the proxies on the last core, the
 * paced client and the upstream on the others, so the latency a proxy adds is its own and not the
 * load generator's (on a 2-core machine the client, the upstream and a proxy otherwise contend for
 * two cores, and a proxy's tail is mostly the scheduler's). Every thread of a proxy (its log worker,
 * V8's GC helpers) shares its core. Undefined when the machine has fewer than two cores or no taskset.
 */
const PINNING: { readonly proxies: string; readonly rest: string; readonly all: string } | undefined =
  (() => {
    const n = cpus().length;
    if (n < 2) return undefined;
    try {
      execFileSync('taskset', ['-p', String(process.pid)], { stdio: 'ignore' });
    } catch {
      return undefined;
    }
    return { proxies: String(n - 1), rest: n === 2 ? '0' : `0-${n - 2}`, all: `0-${n - 1}` };
  })();

/** Sets the CPU affinity of every thread of `pid` (new threads inherit it). */
function pin(pid: number | undefined, cpuList: string): void {
  if (pid === undefined) return;
  execFileSync('taskset', ['-a', '-p', '-c', cpuList, String(pid)], { stdio: 'ignore' });
}

/**
 * The paced measurement of one round: the proxies started afresh and warmed up with wrk, then
 * bench/paced-client.ts at `rate` requests a second, the upstream called directly and each proxy
 * taking turns in slices, `seconds` of load each. `pinned`: with {@link PINNING}'s placement (the
 * upstream's own affinity restored after).
 */
async function pacedRound(upstream: Running, specs: readonly ServerSpec[], rate: number, pinned = false) {
  const servers: Running[] = [];
  const pinning = pinned ? PINNING : undefined;
  try {
    for (const spec of specs) servers.push(await startServer(spec));
    for (const server of servers) await drive(server.port, WRK50, warmupSeconds);
    if (pinning !== undefined) {
      for (const server of servers) pin(server.child.pid, pinning.proxies);
      pin(upstream.child.pid, pinning.rest);
    }
    await sleep(500);
    const ids = ['upstream', ...specs.map((s) => s.id)];
    const ports = [upstream.port, ...servers.map((s) => s.port)];
    const before = servers.map((s) => mainThreadCpuSeconds(s.child.pid));
    const clientWarmupS = 1;
    const client = [
      join(root, 'bench', 'paced-client.ts'),
      ports.join(','),
      PATH,
      String(rate),
      String(seconds),
      String(clientWarmupS),
      '50',
      String(PACE_SLICE_MS),
    ];
    const out = await run(
      pinning === undefined ? process.execPath : 'taskset',
      pinning === undefined ? client : ['-c', pinning.rest, process.execPath, ...client],
      ((clientWarmupS + seconds) * ports.length + 40) * 1000,
    );
    const after = servers.map((s) => mainThreadCpuSeconds(s.child.pid));
    const report = JSON.parse(out.trim().split('\n').at(-1) ?? '{}') as {
      targets: Record<string, number | null>[];
    };
    const num = (x: number | null | undefined) => (typeof x === 'number' ? x : Number.NaN);
    const byId = new Map<string, Paced>();
    report.targets.forEach((t, i) => {
      const ok = num(t['ok']);
      // The CPU covers the client's warm-up too, and the turns of the others (idle here).
      const served = ok + num(t['warmupOk']);
      const cpu = i === 0 ? Number.NaN : (num(after[i - 1]) - num(before[i - 1])) * 1e6;
      byId.set(ids[i] as string, {
        rate,
        ok,
        failed: num(t['failed']),
        unfinished: num(t['unfinished']),
        p50Ms: num(t['p50Ms']),
        p90Ms: num(t['p90Ms']),
        p99Ms: num(t['p99Ms']),
        maxMs: num(t['maxMs']),
        lateP99Ms: num(t['lateP99Ms']),
        cpuUs: served > 0 ? cpu / served : Number.NaN,
      });
    });
    return byId;
  } finally {
    for (const server of servers) await stopServer(server);
    if (pinning !== undefined) pin(upstream.child.pid, pinning.all);
  }
}

/**
 * The streamed transfer through one proxy: started afresh, a few small requests (the forwarding
 * path compiled, the upstream connection open), 1 s idle, then `TRANSFER_BYTES` from the upstream
 * through it to curl (reading at TRANSFER_READ_RATE and discarding), VmRSS sampled meanwhile.
 */
async function streamThrough(spec: ServerSpec): Promise<Transfer> {
  const server = await startServer(spec);
  try {
    for (let i = 0; i < 20; i++) await (await fetch(`http://127.0.0.1:${server.port}${PATH}`)).arrayBuffer();
    await sleep(1000);
    const pid = server.child.pid;
    const idle = status(pid);
    const idleKb = statusKb(idle, 'VmRSS');
    const hwmBeforeKb = statusKb(idle, 'VmHWM');
    const started = performance.now();
    const transfer = run(
      'curl',
      [
        '-sS',
        '-o',
        '/dev/null',
        '--limit-rate',
        TRANSFER_READ_RATE,
        '--max-time',
        '120',
        '-w',
        '%{size_download} %{http_code}',
        `http://127.0.0.1:${server.port}/bytes/${TRANSFER_BYTES}`,
      ],
      150_000,
    );
    const { result, samples } = await sampleUntil(
      transfer,
      () => statusKb(status(pid), 'VmRSS'),
      (ms) => sleep(ms),
      RSS_SAMPLE_MS,
    );
    const seconds = (performance.now() - started) / 1000;
    const [bytes, code] = result.trim().split(/\s+/);
    const end = status(pid);
    const peakKb = peakDuring(hwmBeforeKb, statusKb(end, 'VmHWM'), samples);
    const [firstKb, secondKb] = halvesMax(samples);
    return {
      id: spec.id,
      label: spec.label,
      bytes: Number(bytes),
      seconds,
      status: code ?? '?',
      idleMb: kbToMb(idleKb),
      peakMb: kbToMb(peakKb),
      growthMib: (peakKb - idleKb) / 1024,
      firstHalfMb: kbToMb(firstKb),
      secondHalfMb: kbToMb(secondKb),
      afterMb: kbToMb(statusKb(end, 'VmRSS')),
      samples: samples.length,
    };
  } catch (err) {
    throw withServerState(err, server);
  } finally {
    await stopServer(server);
  }
}

async function runProxy(scenario: Scenario): Promise<ProxyResult> {
  const upstream = await startServer(UPSTREAM);
  try {
    const specs = proxies(`http://127.0.0.1:${upstream.port}`);
    const loadScenario: LoadScenario = {
      kind: 'load',
      id: scenario.id,
      title: scenario.title,
      what: scenario.what,
      servers: specs,
      load: WRK50,
    };
    const samples = new Map<string, Measured[]>(specs.map((s) => [s.id, []]));
    const paced: Map<string, Paced>[] = [];
    const pinnedPaced: Map<string, Paced>[] = [];
    const showPaced = (round: Map<string, Paced>) =>
      [...round]
        .map(
          ([id, p]) =>
            `${id} p99 ${p.p99Ms.toFixed(2)} ms${p.failed + p.unfinished ? ` ${p.failed + p.unfinished} failed` : ''}`,
        )
        .join(', ');
    for (let r = 0; r < rounds; r++) {
      const parts: string[] = [];
      for (const spec of specs) {
        const m = await measure(spec, WRK50);
        samples.get(spec.id)?.push(m);
        parts.push(`${spec.id} ${m.rps.toFixed(0)} rps p99 ${m.p99Ms.toFixed(1)} ms`);
      }
      log(`  proxy round ${r + 1}/${rounds}, wrk: ${parts.join(', ')}`);
      const baseline = samples.get(specs[0]?.id ?? '')?.[r];
      const rate = Math.max(1, Math.round((baseline?.rps ?? 0) / 2));
      const round = await pacedRound(upstream, specs, rate);
      paced.push(round);
      log(`  proxy round ${r + 1}/${rounds}, paced at ${rate} req/s: ${showPaced(round)}`);
      if (PINNING !== undefined) {
        const pinnedRound = await pacedRound(upstream, specs, rate, true);
        pinnedPaced.push(pinnedRound);
        log(`  proxy round ${r + 1}/${rounds}, paced at ${rate} req/s, pinned: ${showPaced(pinnedRound)}`);
      }
    }
    const transfers: Transfer[] = [];
    for (const spec of specs.slice(0, 2)) {
      const t = await streamThrough(spec);
      transfers.push(t);
      log(
        `  proxy transfer through ${spec.id}: ${(t.bytes / 2 ** 20).toFixed(0)} MiB in ${t.seconds.toFixed(1)} s, RSS ${t.idleMb.toFixed(0)} -> peak ${t.peakMb.toFixed(0)} MB (+${t.growthMib.toFixed(0)} MiB)`,
      );
    }
    return { load: { scenario: loadScenario, samples }, paced, pinnedPaced, transfers };
  } finally {
    await stopServer(upstream);
  }
}

interface PacedSummary {
  readonly rate: number;
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly max: number;
  /** Median over rounds of this target's p99 minus the upstream's (called directly) in the same round. */
  readonly addedOverUpstream: number;
  /** The same against the minimal proxy. */
  readonly addedOverBare: number;
  readonly failed: number;
  readonly lateP99: number;
  readonly cpuUs: number;
  readonly perRound: string;
}

function pacedSummary(paced: readonly Map<string, Paced>[], id: string): PacedSummary {
  const rounds = paced.map((r) => r.get(id)).filter((p): p is Paced => p !== undefined);
  const added = (other: string) =>
    median(paced.map((r) => (r.get(id)?.p99Ms ?? Number.NaN) - (r.get(other)?.p99Ms ?? Number.NaN)));
  return {
    rate: median(rounds.map((p) => p.rate)),
    p50: median(rounds.map((p) => p.p50Ms)),
    p90: median(rounds.map((p) => p.p90Ms)),
    p99: median(rounds.map((p) => p.p99Ms)),
    max: median(rounds.map((p) => p.maxMs)),
    addedOverUpstream: id === 'upstream' ? 0 : added('upstream'),
    addedOverBare: id === 'bareproxy' || id === 'upstream' ? Number.NaN : added('bareproxy'),
    failed: rounds.reduce((n, p) => n + p.failed + p.unfinished, 0),
    lateP99: median(rounds.map((p) => p.lateP99Ms)),
    cpuUs: median(rounds.map((p) => p.cpuUs)),
    perRound: rounds.map((p) => p.p99Ms.toFixed(2)).join(' / '),
  };
}

function proxySection(result: ProxyResult): string {
  const ids = ['upstream', ...result.load.scenario.servers.map((s) => s.id)];
  const labels = new Map<string, string>([
    ['upstream', UPSTREAM.label],
    ...result.load.scenario.servers.map((s) => [s.id, s.label] as [string, string]),
  ]);
  const fmt2 = (x: number) => (Number.isNaN(x) ? 'n/a' : x.toFixed(2));
  const rates = result.paced.map((r) => r.get('upstream')?.rate ?? Number.NaN);
  const load = result.load.samples;
  /** The paced rate against the target's own wrk throughput in the same round (median of rounds). */
  const ofOwn = (id: string) => median(rates.map((rate, i) => rate / (load.get(id)?.[i]?.rps ?? Number.NaN)));
  const pacedRows = (paced: readonly Map<string, Paced>[]) =>
    ids.map((id) => {
      const p = pacedSummary(paced, id);
      return [
        labels.get(id) ?? id,
        fmt2(p.p50),
        fmt2(p.p90),
        fmt2(p.p99),
        fmt2(p.max),
        id === 'upstream' ? '0 (reference)' : fmt2(p.addedOverUpstream),
        fmt2(p.addedOverBare),
        String(p.failed),
        fmt2(p.lateP99),
        Number.isNaN(p.cpuUs) ? 'n/a' : p.cpuUs.toFixed(1),
        load.has(id) ? fmt2(ofOwn(id)) : 'n/a',
        p.perRound,
      ];
    });
  const pacedHeader = [
    'target',
    'p50 ms',
    'p90 ms',
    'p99 ms',
    'max ms',
    'p99 added over the upstream ms',
    'p99 added over the minimal proxy ms',
    'failed',
    "client's own lateness p99 ms",
    'main-thread CPU µs / request (paced)',
    'rate / its own wrk throughput',
    'p99 ms per round',
  ];
  const pinnedPart =
    PINNING === undefined || result.pinnedPaced.length === 0
      ? [
          '',
          '(The same with each proxy on a core of its own was not measured: this machine has one core or no `taskset`.)',
        ]
      : [
          '',
          `**The same, each proxy on a core of its own** (\`taskset\`: the proxies on CPU ${PINNING.proxies} with all their threads, the paced client and the upstream on CPU ${PINNING.rest}; the same rate, in the same rounds). On this ${cpus().length}-core machine the table above has the client, the upstream and a proxy share two cores; this one keeps the load generator off the proxy's core, to tell its share of a proxy's tail from the proxy's own:`,
          '',
          table(pacedHeader, pacedRows(result.pinnedPaced)),
        ];
  const transferRows = result.transfers.map((t) => [
    t.label,
    `${(t.bytes / 2 ** 20).toFixed(0)} MiB (HTTP ${t.status})`,
    `${t.seconds.toFixed(1)} s`,
    t.idleMb.toFixed(0),
    t.peakMb.toFixed(0),
    t.growthMib.toFixed(0),
    `${t.firstHalfMb.toFixed(0)} / ${t.secondHalfMb.toFixed(0)}`,
    t.afterMb.toFixed(0),
  ]);
  const sums = summarize(result.load);
  const bare = sums.get('bareproxy');
  const defaults = sums.get('defaults');
  const nolog = sums.get('nolog');
  const notes: string[] = [];
  if (bare && defaults && nolog && !Number.isNaN(bare.cpuUs) && !Number.isNaN(defaults.cpuUs))
    notes.push(
      '',
      `Main-thread CPU a forwarded request under wrk (medians): the minimal proxy ${fmtUs(bare.cpuUs)} µs, echo-chaos ${fmtUs(defaults.cpuUs)} µs with its defaults and ${fmtUs(nolog.cpuUs)} µs with \`LOG_REQUESTS=false\` (so about ${fmtUs(defaults.cpuUs - nolog.cpuUs)} µs are the two access lines and ${fmtUs(nolog.cpuUs - bare.cpuUs)} µs the rest of echo-chaos's work: fastify, obs, history, the meters); a ratio of 0.80 allows ${fmtUs(bare.cpuUs / 0.8)} µs.`,
    );
  return [
    '**Throughput** (wrk, 2 threads, 50 connections):',
    '',
    loadTable(result.load),
    ...notes,
    '',
    `**Latency at half of the minimal proxy's throughput** (rate per round: ${rates.map((r) => r.toFixed(0)).join(' / ')} req/s; ${seconds} s of paced load per target per round, in ${PACE_SLICE_MS} ms turns; medians of rounds; "added" is the median of each round's p99 minus the other's in the same round):`,
    '',
    table(pacedHeader, pacedRows(result.paced)),
    ...pinnedPart,
    '',
    `**Memory while streaming ${TRANSFER_LABEL}** (upstream → proxy → curl reading at ${TRANSFER_READ_LABEL}; VmRSS every ${RSS_SAMPLE_MS} ms; growth = highest RSS during the transfer − RSS before it; bound: ${TRANSFER_RSS_GROWTH_MIB} MiB):`,
    '',
    table(
      [
        'proxy',
        'streamed',
        'in',
        'RSS before MB',
        'highest RSS MB',
        'growth MiB',
        'highest in 1st / 2nd half MB',
        'RSS after MB',
      ],
      transferRows,
    ),
  ].join('\n');
}

// ---------------------------------------------------------------------------------------------------
// The run

function machine(): string[] {
  const model =
    /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? cpus()[0]?.model;
  const version = (cmd: string, args: string[]) => {
    try {
      return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
        .split('\n')[0]
        ?.trim();
    } catch (err) {
      return ((err as { stdout?: string }).stdout ?? '').split('\n')[0]?.trim() || 'n/a';
    }
  };
  return [
    `- CPU: ${model}, ${execFileSync('nproc', { encoding: 'utf8' }).trim()} cores (nproc)`,
    `- Node ${process.version}, Linux ${release()}`,
    `- ${version('wrk', ['-v'])}; ${version('h2load', ['--version'])}`,
    `- load average at start: ${loadavg()
      .map((x) => x.toFixed(2))
      .join(', ')} (the machine is shared: only ratios within a run mean anything)`,
  ];
}

const startedAt = new Date();
const machineLines = machine();
const loadAtStart = loadavg()
  .map((x) => x.toFixed(2))
  .join(', ');
log(`bench: ${selected.map((s) => s.id).join(', ')}; ${rounds} round(s) of ${seconds} s; results in ${tmp}`);
const loadResults = new Map<string, LoadResult>();
let streams: StreamsResult | undefined;
let million: MillionResult | undefined;
let proxy: ProxyResult | undefined;
/** A scenario that failed: its message goes into RESULTS.md, and the run goes on. */
const failures = new Map<string, string>();
try {
  for (const scenario of selected) {
    log(`${scenario.id}: ${scenario.title}`);
    try {
      await runScenario(scenario);
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      failures.set(scenario.id, message);
      log(`  ${scenario.id} failed: ${message}`);
    }
  }
} finally {
  rmSync(tmp, { recursive: true, force: true });
}

async function runScenario(scenario: Scenario): Promise<void> {
  if (scenario.kind === 'load') loadResults.set(scenario.id, await runLoad(scenario));
  else if (scenario.kind === 'streams') {
    streams = await runStreams();
    log(
      `  streams: ${Object.entries(streams.clients)
        .map(([k, c]) => `${k} ${c.opened} open`)
        .join(
          ', ',
        )}, RSS held ${streams.rssHeldMb.toFixed(0)} MB, lag p99 ${streams.lagHeldP99Ms.toFixed(1)} ms`,
    );
  } else if (scenario.kind === 'proxy') {
    proxy = await runProxy(scenario);
  } else {
    million = await runMillion();
    log(`  million: ${million.served} served, RSS ${million.rssMb.toFixed(0)} MB`);
  }
}

// ---------------------------------------------------------------------------------------------------
// Targets (issue #13)

const sum = (scenario: string, server: string): Summary | undefined => {
  const r = loadResults.get(scenario);
  return r === undefined ? undefined : summarize(r).get(server);
};
const NA = Number.NaN;
const targets: Target[] = [];
/** GET's and POST 1 KiB's throughput and p99 targets at an issue's limits. */
function requestTargets(limits: {
  readonly defaults: number;
  readonly nolog: number;
  readonly p99: number;
  readonly nologP99: boolean;
}): Target[] {
  return (
    [
      ['get', 'GET'],
      ['post-1k', 'POST 1 KiB'],
    ] as const
  ).flatMap(([scenario, name]): Target[] => [
    {
      name: `${name}, defaults: throughput ratio`,
      op: '>=',
      limit: limits.defaults,
      measured: sum(scenario, 'defaults')?.ratio ?? NA,
      unit: 'ratio',
    },
    {
      name: `${name}, \`LOG_REQUESTS=false\`: throughput ratio`,
      op: '>=',
      limit: limits.nolog,
      measured: sum(scenario, 'nolog')?.ratio ?? NA,
      unit: 'ratio',
    },
    {
      name: `${name}, defaults: p99 / baseline p99`,
      op: '<=',
      limit: limits.p99,
      measured: sum(scenario, 'defaults')?.p99Ratio ?? NA,
      unit: 'x',
    },
    ...(limits.nologP99
      ? [
          {
            name: `${name}, \`LOG_REQUESTS=false\`: p99 / baseline p99`,
            op: '<=',
            limit: limits.p99,
            measured: sum(scenario, 'nolog')?.p99Ratio ?? NA,
            unit: 'x',
          } as const,
        ]
      : []),
  ]);
}
targets.push(...requestTargets({ defaults: 0.8, nolog: 0.9, p99: 1.5, nologP99: true }));
const delayDefaults = sum('delay', 'defaults');
const delayBare = sum('delay', 'bare');
targets.push(
  {
    name: '100 ms delay at 1,000 connections, defaults: throughput ratio',
    op: '>=',
    limit: 0.95,
    measured: delayDefaults?.ratio ?? NA,
    unit: 'ratio',
  },
  {
    name: '100 ms delay at 1,000 connections, defaults: p99 / baseline p99',
    op: '<=',
    limit: 1.3,
    measured: delayDefaults?.p99Ratio ?? NA,
    unit: 'x',
  },
  {
    name: '100 ms delay at 1,000 connections, defaults with stdout to a file: throughput ratio',
    op: '>=',
    limit: 0.95,
    measured: sum('delay', 'file')?.ratio ?? NA,
    unit: 'ratio',
  },
  {
    name: '100 ms delay at 1,000 connections, defaults with stdout to a file: p99 / baseline p99',
    op: '<=',
    limit: 1.3,
    measured: sum('delay', 'file')?.p99Ratio ?? NA,
    unit: 'x',
  },
  {
    name: '100 ms delay at 1,000 connections, defaults: timeouts (median of rounds)',
    op: '<=',
    limit: 0,
    measured: delayDefaults?.timeouts ?? NA,
    unit: 'count',
  },
  {
    name: 'RSS after a million requests, defaults',
    op: '<=',
    limit: 150,
    measured: million?.rssMb ?? NA,
    unit: 'MB',
    ...(million && million.served < 1_000_000 ? { note: `only ${million.served} requests` } : {}),
  },
  {
    name: 'RSS after the 1,000-connection delay run / bare node:http RSS',
    op: '<=',
    limit: 1.5,
    measured: delayDefaults && delayBare ? delayDefaults.rss / delayBare.rss : NA,
    unit: 'x',
    ...(delayDefaults && delayBare
      ? { note: `${delayDefaults.rss.toFixed(0)} MB against ${delayBare.rss.toFixed(0)} MB` }
      : {}),
  },
);
// What was open, as the clients counted it: a stream the server refused is not one measured.
const openedOfKind = (kind: string) => streams?.clients[kind]?.opened ?? 0;
const streamsNote = !streams
  ? {}
  : Math.min(openedOfKind('sse'), openedOfKind('ws')) < streams.requested
    ? { note: `${openedOfKind('sse')} SSE and ${openedOfKind('ws')} WebSockets open` }
    : {};
targets.push(
  {
    name: '10,000 SSE + 10,000 WebSockets: RSS',
    op: '<=',
    limit: 600,
    measured: streams?.rssHeldMb ?? NA,
    unit: 'MB',
    ...streamsNote,
  },
  {
    name: '10,000 SSE + 10,000 WebSockets: event-loop lag p99 while held',
    op: '<=',
    limit: 50,
    measured: streams?.lagHeldP99Ms ?? NA,
    unit: 'ms',
    ...streamsNote,
  },
  {
    name: 'obs on / obs off throughput',
    op: '>=',
    limit: 0.9,
    measured: sum('obs', 'defaults')?.ratio ?? NA,
    unit: 'ratio',
  },
);

// Issue #32: what the reverse proxy costs, against a minimal undici proxy in the same run.
const proxyDefaults = proxy === undefined ? undefined : summarize(proxy.load).get('defaults');
const proxyPaced = proxy === undefined ? undefined : pacedSummary(proxy.paced, 'defaults');
const proxyBarePaced = proxy === undefined ? undefined : pacedSummary(proxy.paced, 'bareproxy');
const pinnedPaced =
  proxy === undefined || proxy.pinnedPaced.length === 0
    ? undefined
    : pacedSummary(proxy.pinnedPaced, 'defaults');
const pinnedBarePaced =
  proxy === undefined || proxy.pinnedPaced.length === 0
    ? undefined
    : pacedSummary(proxy.pinnedPaced, 'bareproxy');
const proxyTransfer = proxy?.transfers.find((t) => t.id === 'defaults');
const proxyBareTransfer = proxy?.transfers.find((t) => t.id === 'bareproxy');
targets.push(
  {
    name: 'Proxy (#32), echo-chaos forwarding, defaults: throughput / the minimal undici proxy',
    op: '>=',
    limit: 0.8,
    measured: proxyDefaults?.ratio ?? NA,
    unit: 'ratio',
  },
  {
    name: "Proxy (#32), echo-chaos forwarding, defaults: p99 added over the upstream called directly, at half of the minimal proxy's throughput",
    op: '<=',
    limit: 1,
    measured: proxyPaced?.addedOverUpstream ?? NA,
    unit: 'ms',
    ...(proxyPaced && proxyBarePaced
      ? {
          note: `p99 ${proxyPaced.p99.toFixed(2)} ms at ${proxyPaced.rate.toFixed(0)} req/s; the minimal proxy adds ${proxyBarePaced.addedOverUpstream.toFixed(2)} ms`,
        }
      : {}),
  },
  {
    name: "Proxy (#32), echo-chaos forwarding, defaults, on a core of its own: p99 added over the upstream called directly, at half of the minimal proxy's throughput",
    op: '<=',
    limit: 1,
    measured: pinnedPaced?.addedOverUpstream ?? NA,
    unit: 'ms',
    ...(pinnedPaced && pinnedBarePaced
      ? {
          note: `p99 ${pinnedPaced.p99.toFixed(2)} ms; the minimal proxy adds ${pinnedBarePaced.addedOverUpstream.toFixed(2)} ms; echo-chaos over the minimal proxy ${pinnedPaced.addedOverBare.toFixed(2)} ms`,
        }
      : {}),
  },
  {
    name: `Proxy (#32), echo-chaos forwarding, defaults: RSS growth while streaming ${quick ? '256 MiB' : '1 GiB'}`,
    op: '<=',
    limit: TRANSFER_RSS_GROWTH_MIB,
    measured: proxyTransfer?.growthMib ?? NA,
    unit: 'MiB',
    ...(proxyTransfer
      ? {
          note: `${proxyTransfer.idleMb.toFixed(0)} → ${proxyTransfer.peakMb.toFixed(0)} MB${proxyBareTransfer ? `; the minimal proxy +${proxyBareTransfer.growthMib.toFixed(0)} MiB` : ''}`,
        }
      : {}),
  },
);

// Issue #39: performance by design. Ratios to bare node:http (h2c: to a bare node:http2 server) in
// the same run; the main thread's CPU a request, with the log worker's beside it.
const getDefaults = sum('get', 'defaults');
const perRequestNote = (x: Summary | undefined) =>
  x === undefined || Number.isNaN(x.cpuUs)
    ? {}
    : {
        note: `the log worker ${Number.isNaN(x.workerCpuUs) ? 'n/a' : x.workerCpuUs.toFixed(1)} µs a request beside it`,
      };
const targets39: Target[] = [
  {
    name: 'GET, defaults: main-thread CPU a request',
    op: '<=',
    limit: 30,
    measured: getDefaults?.cpuUs ?? NA,
    unit: 'us',
    ...perRequestNote(getDefaults),
  },
  ...requestTargets({ defaults: 0.6, nolog: 0.75, p99: 1.5, nologP99: false }),
  ...targets.filter((t) => t.name === 'obs on / obs off throughput'),
  {
    name: `h2c GET, defaults (h2load, 50 clients × ${H2_STREAMS} streams): throughput / a bare node:http2 server`,
    op: '>=',
    limit: 0.7,
    measured: sum('h2', 'defaults')?.ratio ?? NA,
    unit: 'ratio',
  },
  // Nothing regresses: the same targets as issue #13's, above.
  ...targets.filter(
    (t) => t.name.startsWith('100 ms delay at 1,000 connections, defaults:') || /RSS|SSE/.test(t.name),
  ),
];

// ---------------------------------------------------------------------------------------------------
// What limits the throughput targets: CPU a request, measured in this run

const fmtMs = (x: number) => x.toFixed(1);
const fmtUs = (x: number | undefined) => (x === undefined || Number.isNaN(x) ? 'n/a' : x.toFixed(1));
/** The share of the measured seconds the main thread was busy: rps × CPU a request. */
const busy = (s: Summary | undefined) =>
  s === undefined || Number.isNaN(s.cpuUs) ? 'n/a' : `${Math.round((s.rps * s.cpuUs) / 1e4)}%`;

function limitsSection(): string[] {
  const rows: string[][] = [];
  const gaps: string[] = [];
  for (const [scenario, name] of [
    ['get', 'GET'],
    ['post-1k', 'POST 1 KiB'],
  ] as const) {
    const r = loadResults.get(scenario);
    if (r === undefined) continue;
    const sums = summarize(r);
    const bare = sums.get('bare');
    const defaults = sums.get('defaults');
    const nolog = sums.get('nolog');
    const fastify = sums.get('fastify');
    if (bare === undefined || Number.isNaN(bare.cpuUs)) continue;
    const for80 = bare.cpuUs / 0.8;
    const for90 = bare.cpuUs / 0.9;
    rows.push([
      name,
      `${fmtUs(bare.cpuUs)} (${busy(bare)})`,
      `${fmtUs(fastify?.cpuUs)} (${busy(fastify)})`,
      `${fmtUs(defaults?.cpuUs)} (${busy(defaults)})`,
      `${fmtUs(nolog?.cpuUs)} (${busy(nolog)})`,
      fmtUs(for80),
      fmtUs(for90),
    ]);
    if (defaults !== undefined && !Number.isNaN(defaults.cpuUs) && defaults.cpuUs > for80)
      gaps.push(
        `${name} with the defaults: ${fmtUs(defaults.cpuUs)} µs a request against a budget of ${fmtUs(for80)} µs for 0.80, ${fmtUs(defaults.cpuUs - for80)} µs too many${fastify && !Number.isNaN(fastify.cpuUs) ? `; bare fastify alone, doing none of echo-chaos's work, spends ${fmtUs(fastify.cpuUs)} µs` : ''}.`,
      );
    if (nolog !== undefined && !Number.isNaN(nolog.cpuUs) && nolog.cpuUs > for90)
      gaps.push(
        `${name} with \`LOG_REQUESTS=false\`: ${fmtUs(nolog.cpuUs)} µs against ${fmtUs(for90)} µs for 0.90, ${fmtUs(nolog.cpuUs - for90)} µs too many.`,
      );
  }
  const out: string[] = [];
  if (rows.length > 0)
    out.push(
      "Each server's main thread serves every request, and under wrk's 50 connections it is busy nearly all the time (the share in parentheses: requests a second × CPU a request). Throughput is then the inverse of the main thread's CPU time a request, and a throughput ratio is about the inverse ratio of CPU times. Main-thread CPU µs a request in this run (medians of rounds):",
      '',
      table(
        [
          'scenario',
          'bare node:http',
          'bare fastify',
          'echo-chaos, defaults',
          '`LOG_REQUESTS=false`',
          'budget for 0.80',
          'budget for 0.90',
        ],
        rows,
      ),
      '',
    );
  if (gaps.length > 0) out.push(...gaps.map((g) => `- ${g}`), '');
  const delay = loadResults.get('delay');
  if (delay !== undefined) {
    const sums = summarize(delay);
    const bare = sums.get('bare');
    const defaults = sums.get('defaults');
    const connections = delay.scenario.load.connections;
    if (bare !== undefined && defaults !== undefined && bare.rps > 0 && defaults.rps > 0)
      out.push(
        `- **The delay run** is not bound by CPU alone (main thread busy ${busy(defaults)} for echo-chaos, ${busy(bare)} for bare node:http): each of its ${connections.toLocaleString('en')} connections sends its next request when the last is answered, so throughput is ${connections.toLocaleString('en')} / the mean time a request takes: ${fmtMs((connections / defaults.rps) * 1000)} ms for echo-chaos against ${fmtMs((connections / bare.rps) * 1000)} ms for bare node:http in this run. Timers due together are answered one after another, at ${fmtUs(defaults.cpuUs)} µs of main-thread CPU each for echo-chaos (bare: ${fmtUs(bare.cpuUs)}), so a response waits behind the others of its wave: ${defaults.ratio >= 0.95 ? 'here within the target' : `0.95 would need a mean of at most ${fmtMs((connections / (0.95 * bare.rps)) * 1000)} ms`}.`,
        '',
      );
  }
  const obs = loadResults.get('obs');
  if (obs !== undefined) {
    const sums = summarize(obs);
    const off = sums.get('obsoff');
    const on = sums.get('defaults');
    if (off !== undefined && on !== undefined && !Number.isNaN(off.cpuUs) && !Number.isNaN(on.cpuUs))
      out.push(
        `- obs on against obs off: ${fmtUs(on.cpuUs)} against ${fmtUs(off.cpuUs)} µs a request; 0.90 would allow ${fmtUs(off.cpuUs / 0.9)} µs, so obs's hooks, its logger mixin and masking would have to cost ${fmtUs(off.cpuUs / 0.9 - off.cpuUs)} µs instead of ${fmtUs(on.cpuUs - off.cpuUs)}.`,
        '',
      );
  }
  if (loadResults.has('post-1k'))
    out.push(
      "- **POST 1 KiB** costs more than a GET mostly outside echo-chaos's own code: its profile ([README.md](README.md), \"One write a response\") has the kernel's `write` of the 1 KiB answer at about 29 µs and the body read through node's streams and fastify's parser, and bare fastify alone spends more on it than bare node:http (the table above).",
      '',
    );
  if (loadResults.has('h2'))
    out.push(
      "- **h2c** (0.70 of a bare node:http2 server asked): a request's profile under h2load ([README.md](README.md), \"A plain route, and histograms added where prom-client keeps them\") has node's HTTP/2 JavaScript, garbage collection, `malloc` and `free` of nghttp2's and node's objects per stream, and HPACK's work on the headers every response carries anew (`x-request-id`, `x-echo-request-count`, added to each connection's table) each larger than the bare server's, which sends neither header. No single part is large.",
      '',
    );
  if (million !== undefined)
    out.push(
      `- **RSS after a million requests** is mostly what the server holds before any request (${million.rssIdleMb.toFixed(0)} MB idle here, the log worker's isolate about 20 MB of it); the burst's own memory is given back once it is idle (${million.peakMb.toFixed(0)} MB at the peak, ${million.rssMb.toFixed(0)} MB 25 s after).`,
      '',
    );
  if (rows.length > 0)
    out.push(
      "- **p99** follows throughput: with 50 connections always waiting on one thread, a request's latency is about 50 / throughput (Little's law), so a server at a third of the baseline's throughput has about three times its p99. The p99 targets (at most 1.5×) need a throughput ratio of about 0.67 or more.",
      "- **Where the microseconds go** (CPU profiles of a request, part by part, and what each change bought): [README.md](README.md), from \"The log lines\" on; the latest, \"A plain route, and histograms added where prom-client keeps them\". In short, a default GET under wrk on this machine (`perf record` of the main thread, each sample charged to the first JavaScript frame on its stack, 2026-11-29): the kernel's `write` of the response about 15 µs (bare fastify's 8.4: the same bytes, but 6.2 µs against 2.5 of it wake the reading wrk thread, asleep more often when the server is slower than wrk), node's own JavaScript (HTTP parsing and response, streams, timers, the message to the log worker) about 11 µs (bare fastify's 5.4), echo-chaos's own code about 5, fastify's about 4.5 (bare 1.8), obs's about 3.5, garbage collection about 0.5. No function of echo-chaos's or obs's is above 1 µs: what is left is spread thin, and each microsecond saved in JavaScript also saves some of the kernel's.",
      '',
    );
  return out.length === 0 ? [] : ['## What limits the throughput and p99 targets', '', ...out];
}

// ---------------------------------------------------------------------------------------------------
// RESULTS.md

const out: string[] = [
  '# Benchmark results',
  '',
  `Written by \`npm run bench\` (\`node bench/run.ts${argv.length ? ` ${argv.join(' ')}` : ''}\`) on ${startedAt.toISOString().slice(0, 16).replace('T', ' ')} UTC, ${((Date.now() - startedAt.getTime()) / 60000).toFixed(1)} minutes. How the numbers are made: [README.md](README.md).`,
  '',
  '## Machine',
  '',
  ...machineLines,
  `- load average at the end: ${loadavg()
    .map((x) => x.toFixed(2))
    .join(', ')}`,
  `- ${rounds} interleaved round(s) of ${seconds} s per measurement (the delay run: its own length), ${warmupSeconds} s warm-up; medians; ratios are the median of each round's candidate / baseline`,
  '',
  '## Targets (issues #13 and #32)',
  '',
  targetsSection(targets),
  '',
  '## Targets (issue #39)',
  '',
  targetsSection(targets39),
  '',
  ...limitsSection(),
];
/** A scenario's section of RESULTS.md: its heading, what it measures, its table (or its failure). */
function scenarioSection(scenario: Scenario): string[] {
  const lines: string[] = [`## ${scenario.title}`, '', scenario.what, ''];
  const failure = failures.get(scenario.id);
  if (failure !== undefined)
    lines.push(`**Failed in this run:**\n\n\`\`\`\n${failure.trim().slice(0, 2000)}\n\`\`\``, '');
  if (scenario.kind === 'load') {
    const r = loadResults.get(scenario.id);
    if (r) lines.push(loadTable(r), '');
  } else if (scenario.kind === 'streams' && streams) lines.push(streamsSection(streams), '');
  else if (scenario.kind === 'proxy' && proxy) lines.push(proxySection(proxy), '');
  else if (scenario.kind === 'million' && million)
    lines.push(
      table(
        [
          'served',
          'in',
          'RSS idle before MB',
          'RSS 2 s after MB',
          `RSS ${SETTLE_S} s after MB`,
          'peak RSS MB',
        ],
        [
          [
            million.served.toLocaleString('en'),
            `${million.seconds.toFixed(0)} s`,
            million.rssIdleMb.toFixed(0),
            million.rssJustAfterMb.toFixed(0),
            million.rssMb.toFixed(0),
            million.peakMb.toFixed(0),
          ],
        ],
      ),
      '',
    );
  return lines;
}

for (const scenario of selected) out.push(...scenarioSection(scenario));
const markdown = `${out.join('\n').trimEnd()}\n`;
/** The headings a scenario's section goes before when RESULTS.md has none yet: the later scenarios', then the blocks kept. */
const sectionAnchors = (scenario: Scenario) => [
  ...SCENARIOS.slice(SCENARIOS.indexOf(scenario) + 1).map((s) => `## ${s.title}`),
  '<!-- bench:operator -->',
  '## Soak',
];
if (write && only !== undefined) {
  // A partial run replaces its scenarios' sections and keeps the rest of RESULTS.md (the last full
  // run's header, targets and other scenarios, the operator's block, the soak). Each section says
  // when, how and on what it was measured, the rest of the file being another run.
  let doc: string;
  try {
    doc = readFileSync(resultsPath, 'utf8');
  } catch {
    doc = '# Benchmark results\n';
  }
  const avg = () =>
    loadavg()
      .map((x) => x.toFixed(2))
      .join(', ');
  const machineShort = machineLines
    .filter((l) => !l.startsWith('- load average'))
    .map((l) => l.replace(/^- /, ''))
    .join('; ');
  const measuredLine = `Measured apart from the run above, by \`npm run bench\` (\`node bench/run.ts ${argv.join(' ')}\`) on ${startedAt.toISOString().slice(0, 16).replace('T', ' ')} UTC, ${((Date.now() - startedAt.getTime()) / 60000).toFixed(1)} minutes: ${rounds} interleaved round(s) of ${seconds} s, ${warmupSeconds} s warm-up; ${machineShort}; load average ${loadAtStart} at the start, ${avg()} at the end. The rest of this file is another run: compare this section's rows with each other only.`;
  for (const scenario of selected) {
    const [heading, ...section] = scenarioSection(scenario);
    doc = mergeSection(
      doc,
      heading as string,
      [heading, '', measuredLine, ...section].join('\n'),
      sectionAnchors(scenario),
    );
  }
  writeFileSync(resultsPath, doc);
  log(`wrote ${selected.map((s) => s.id).join(', ')} into ${resultsPath} (the rest kept)`);
} else if (write) {
  // A soak section (bench/soak.ts) and the operator's block (bench/operator.ts) survive a new bench run.
  let soak = '';
  let operator = '';
  try {
    const previous = readFileSync(resultsPath, 'utf8');
    const i = previous.indexOf('\n## Soak');
    if (i !== -1) soak = previous.slice(i);
    const block = /<!-- bench:operator -->\n[\s\S]*?<!-- \/bench:operator -->\n/.exec(previous)?.[0];
    if (block !== undefined && !soak.includes(block)) operator = `\n${block}`;
  } catch {
    // first run
  }
  writeFileSync(resultsPath, markdown + operator + soak);
  log(`wrote ${resultsPath}`);
} else {
  process.stdout.write(`\n${markdown}`);
}
