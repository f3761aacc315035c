/**
 * No Docker engine runs here, so this test plays the Dockerfile's build on a copy of the tree: each
 * stage gets a directory standing for its file system, COPY and RUN act on it. The file builds two
 * images (ADR 0048): the final stage's ENTRYPOINT + CMD start the service from the pruned output,
 * and the stage `operator`'s start the operator from its package.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, describe, test } from 'node:test';
import { startEcho } from '../helpers/echo-server.ts';
import { startKubeApi } from '../helpers/kube-api.ts';
import { exitOf, freePort, until } from '../helpers/runtime.ts';

const ROOT = join(import.meta.dirname, '..', '..');
/** The stage that is the operator's image: `docker build --target operator`. */
const OPERATOR_TARGET = 'operator';

interface Instruction {
  readonly op: string;
  readonly args: string;
}

/** The Dockerfile's instructions, comments and line continuations handled. */
function parseDockerfile(text: string): Instruction[] {
  const joined = text.replace(/\\\n/g, ' ');
  const out: Instruction[] = [];
  for (const line of joined.split('\n')) {
    const trimmed = line.trim();
    if (trimmed === '' || trimmed.startsWith('#')) continue;
    const match = /^(\S+)\s+(.*)$/.exec(trimmed);
    if (match) out.push({ op: match[1]!.toUpperCase(), args: match[2]! });
  }
  return out;
}

/** The instructions of each stage (FROM ... AS name), by stage name. */
function stageInstructions(text: string): Map<string, Instruction[]> {
  const stages = new Map<string, Instruction[]>();
  let current: Instruction[] | undefined;
  for (const instruction of parseDockerfile(text)) {
    if (instruction.op === 'FROM') {
      current = [instruction];
      stages.set(instruction.args.split(/\s+/)[2] ?? `#${stages.size}`, current);
    } else current?.push(instruction);
  }
  return stages;
}

interface Stage {
  readonly name: string;
  readonly base: string;
  readonly root: string;
  workdir: string;
  env: Record<string, string>;
  user?: string;
  entrypoint: string[];
  cmd: string[];
  expose: string[];
}

/** `/app/x` inside a stage → its directory on this machine. */
function hostPath(stage: Stage, containerPath: string): string {
  const absolute = containerPath.startsWith('/') ? containerPath : join(stage.workdir, containerPath);
  return join(stage.root, absolute);
}

function execForm(args: string): string[] {
  const parsed: unknown = JSON.parse(args);
  assert.ok(Array.isArray(parsed), `exec form expected (a JSON array), got ${args}`);
  return parsed as string[];
}

/** Plays the build; returns every stage, the last one being the image. */
function build(dockerfile: string, context: string, scratch: string): Stage[] {
  const stages: Stage[] = [];
  for (const { op, args } of parseDockerfile(dockerfile)) {
    const stage = stages.at(-1);
    if (op === 'FROM') {
      const [base, , name] = args.split(/\s+/);
      const root = join(scratch, `stage-${stages.length}`);
      mkdirSync(root);
      stages.push({
        name: name ?? '',
        base: base!,
        root,
        workdir: '/',
        env: {},
        entrypoint: [],
        cmd: [],
        expose: [],
      });
      continue;
    }
    assert.ok(stage, `${op} before FROM`);
    if (op === 'WORKDIR') {
      stage.workdir = args;
      mkdirSync(hostPath(stage, '.'), { recursive: true });
    } else if (op === 'ENV') {
      for (const pair of args.split(/\s+/)) {
        const [key, value] = pair.split('=');
        stage.env[key!] = value ?? '';
      }
    } else if (op === 'COPY') {
      const words = args.split(/\s+/);
      const from = words.find((w) => w.startsWith('--from='))?.slice('--from='.length);
      const paths = words.filter((w) => !w.startsWith('--'));
      const dest = paths.pop()!;
      const source = from === undefined ? undefined : stages.find((s) => s.name === from);
      for (const src of paths) {
        const origin = source ? hostPath(source, src) : join(context, src);
        // A directory's contents go into the destination, as Docker copies them.
        const target = statSync(origin).isDirectory()
          ? hostPath(stage, dest)
          : dest.endsWith('/')
            ? join(hostPath(stage, dest), src.split('/').at(-1)!)
            : hostPath(stage, dest);
        mkdirSync(dirname(target), { recursive: true });
        cpSync(origin, target, { recursive: true, verbatimSymlinks: true });
      }
    } else if (op === 'RUN') {
      // The package cache first: the same packages the image would fetch, without a round trip each.
      execFileSync('sh', ['-c', args], {
        cwd: hostPath(stage, '.'),
        stdio: 'pipe',
        timeout: 240_000,
        env: { ...process.env, ...stage.env, npm_config_prefer_offline: 'true' },
      });
    } else if (op === 'USER') {
      stage.user = args;
    } else if (op === 'EXPOSE') {
      stage.expose.push(...args.split(/\s+/));
    } else if (op === 'ENTRYPOINT') {
      stage.entrypoint = execForm(args);
    } else if (op === 'CMD') {
      stage.cmd = execForm(args);
    }
  }
  return stages;
}

describe('Dockerfile', () => {
  const scratch = mkdtempSync(join(tmpdir(), 'echo-chaos-image-'));
  after(() => rmSync(scratch, { recursive: true, force: true }));
  const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');

  const stages = stageInstructions(dockerfile);
  /** The service's image: the last stage, which `docker build` builds without --target. */
  const serviceStage = [...stages.values()].at(-1)!;
  const operatorStage = stages.get(OPERATOR_TARGET) ?? [];
  const entryOf = (instructions: Instruction[]): string[] =>
    instructions.filter((i) => i.op === 'ENTRYPOINT' || i.op === 'CMD').flatMap((i) => execForm(i.args));

  test('dockerfile – multi-stage on Node 24, numeric non-root user, exec-form entry, port 8080', () => {
    const instructions = parseDockerfile(dockerfile);
    const froms = instructions.filter((i) => i.op === 'FROM').map((i) => i.args);
    assert.ok(froms.length >= 2, 'multi-stage');
    for (const from of froms) assert.match(from, /^node:24[-.\w]*\s/);
    for (const [name, image] of [
      ['the service', serviceStage],
      ['the operator', operatorStage],
    ] as const) {
      const user = image.filter((i) => i.op === 'USER').at(-1)?.args ?? '';
      assert.match(user, /^[1-9]\d*(:\d+)?$/, `numeric, non-root USER in ${name}'s image`);
    }
    assert.deepEqual(entryOf(serviceStage), [
      'node',
      '--max-semi-space-size=16',
      '--heap-growing-percent=30',
      'dist/echo/main.js',
    ]);
    assert.ok(serviceStage.some((i) => i.op === 'EXPOSE' && i.args === '8080'));
    assert.ok(instructions.some((i) => i.op === 'RUN' && /npm ci\b.*--omit=dev/.test(i.args)));
  });

  test('dockerfile – the operator image (--target operator): node with the flags and malloc settings of `npm run operator`, port 8081', () => {
    assert.ok(operatorStage.length > 0, `a stage named ${OPERATOR_TARGET}`);
    assert.notEqual(serviceStage, operatorStage, 'the default target is the service');
    const script = (
      JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }
    ).scripts['operator']!.split(' ');
    const node = script.indexOf('node');
    // The chart runs it as command: [node], args: operator.args (test/k8s/chart.integration.test.ts).
    assert.deepEqual(execForm(operatorStage.find((i) => i.op === 'ENTRYPOINT')!.args), ['node']);
    assert.deepEqual(execForm(operatorStage.find((i) => i.op === 'CMD')!.args), [
      ...script.slice(node + 1).filter((w) => w.startsWith('--')),
      'main.js',
    ]);
    const env = operatorStage
      .filter((i) => i.op === 'ENV')
      .flatMap((i) => i.args.split(/\s+/))
      .filter((pair) => pair.includes('='));
    for (const word of script.slice(0, node).filter((w) => /^[A-Z_][A-Z0-9_]*=/.test(w))) {
      assert.ok(env.includes(word), `ENV ${word} in the operator's image`);
    }
    assert.ok(operatorStage.some((i) => i.op === 'EXPOSE' && i.args === '8081'));
  });

  test('dockerfile – HEALTHCHECK probes /health on the port PORT names (8080 when unset), run against a server', async (t) => {
    const healthcheck = serviceStage.find((i) => i.op === 'HEALTHCHECK');
    assert.ok(healthcheck, 'a HEALTHCHECK');
    const match = /^(?:--\S+\s+)*CMD\s+(\[.*\])$/.exec(healthcheck.args);
    assert.ok(match, `HEALTHCHECK [options] CMD ["exec", "form"], got ${healthcheck.args}`);
    const [program, ...args] = execForm(match[1]!);
    assert.equal(program, 'node');
    // As Docker runs it: the image's environment (PORT from `docker run -e`), the image's node.
    const probe = (env: Record<string, string>) =>
      exitOf(
        spawn(process.execPath, args, { env: { PATH: process.env['PATH'] ?? '', ...env }, timeout: 15_000 }),
      );
    const echo = await startEcho();
    t.after(() => echo.close());
    const healthy = await probe({ PORT: String(echo.port) });
    assert.equal(healthy.code, 0, `PORT=${echo.port}, where the service listens: ${healthy.stderr}`);
    const closed = await freePort();
    assert.equal((await probe({ PORT: String(closed) })).code, 1, 'PORT where nothing listens: unhealthy');
    // With ENABLE_TLS=true the port speaks TLS only: the probe must too (a self-signed certificate).
    const tlsEcho = await startEcho({ ENABLE_TLS: 'true' });
    t.after(() => tlsEcho.close());
    const tlsHealthy = await probe({ PORT: String(tlsEcho.port), ENABLE_TLS: 'true' });
    assert.equal(tlsHealthy.code, 0, `ENABLE_TLS=true: ${tlsHealthy.stderr}`);
    assert.equal(
      (await probe({ PORT: String(tlsEcho.port) })).code,
      1,
      'plain HTTP to the TLS port: unhealthy',
    );
    // Unset or empty, the service's own default.
    assert.match(args.join(' '), /process\.env\.PORT \|\| 8080/);
  });

  /** The image's build steps played once on a copy of the tree; every stage. */
  let built: Stage[] | undefined;
  /** The service's image, the last stage. */
  const builtImage = (): Stage => builtStages().at(-1)!;
  /** The operator's image, the stage `operator`. */
  const builtOperatorImage = (): Stage => builtStages().find((s) => s.name === OPERATOR_TARGET)!;
  function builtStages(): Stage[] {
    if (built !== undefined) return built;
    const context = join(scratch, 'context');
    mkdirSync(context);
    // The context .dockerignore lets through (src/obs/dist, a local build, is ignored there too).
    for (const entry of [
      'package.json',
      'package-lock.json',
      'tsconfig.json',
      'tsconfig.build.json',
      'LICENSE',
      'Dockerfile',
    ]) {
      cpSync(join(ROOT, entry), join(context, entry));
    }
    cpSync(join(ROOT, 'scripts', 'build.ts'), join(context, 'scripts', 'build.ts'));
    const crds = join('charts', 'echo-chaos', 'crds');
    cpSync(join(ROOT, crds), join(context, crds), { recursive: true });
    const localBuilds = [join(ROOT, 'src', 'obs', 'dist'), join(ROOT, 'src', 'operator', 'dist')];
    cpSync(join(ROOT, 'src'), join(context, 'src'), {
      recursive: true,
      filter: (source) => !localBuilds.some((dir) => source.startsWith(dir)),
    });
    built = build(dockerfile, context, join(scratch));
    return built;
  }

  test('dockerfile – the built tree holds production dependencies only and serves /health and /hello', async () => {
    const image = builtImage();
    const app = hostPath(image, '.');
    assert.ok(existsSync(join(app, 'node_modules', 'fastify')), 'fastify (a dependency) is installed');
    assert.ok(!existsSync(join(app, 'node_modules', 'typescript')), 'typescript (a dev dependency) is not');
    assert.ok(!existsSync(join(app, 'test')), 'tests stay out');
    assert.ok(!existsSync(join(app, 'src', 'echo')), 'the service runs from dist/, its sources stay out');
    assert.ok(existsSync(join(app, 'dist', 'echo', 'main.js')));
    // The operator has its own image (ADR 0048): neither it nor its Kubernetes client is here.
    assert.ok(!existsSync(join(app, 'dist', 'operator')), 'no operator in the service image');
    assert.ok(
      !existsSync(join(app, 'node_modules', '@kubernetes', 'client-node')),
      '@kubernetes/client-node (the operator bundles it) is not installed',
    );
    assert.ok(
      existsSync(join(app, 'node_modules', '@echo-chaos', 'obs', 'index.js')),
      'the built obs is installed',
    );
    // The package's optional peers, which the image has: at the lockfile's versions.
    const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { version?: string }>;
    };
    for (const peer of ['ioredis', '@opentelemetry/sdk-trace', '@opentelemetry/exporter-trace-otlp-proto']) {
      const installed = JSON.parse(readFileSync(join(app, 'node_modules', peer, 'package.json'), 'utf8')) as {
        version: string;
      };
      assert.equal(installed.version, lock.packages[`node_modules/${peer}`]?.version, peer);
    }
    assert.ok(!existsSync(join(app, 'node_modules', 'selfsigned')), 'selfsigned (a test tool) is not');
    assert.ok(!existsSync(join(app, '.peers')), 'the peers install leaves nothing behind');

    const [program, ...args] = [...image.entrypoint, ...image.cmd];
    assert.equal(program, 'node');
    const child = spawn(process.execPath, args, {
      cwd: app,
      env: {
        ...image.env,
        PATH: process.env['PATH'] ?? '',
        PORT: '0',
        HOST: '127.0.0.1',
        LOG_LEVEL: 'info',
        ECHO_DRAIN_DELAY: '0',
        // The SDK the image holds starts (spans go nowhere: nothing listens there).
        OTEL_TRACES_EXPORTER: 'otlp',
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    try {
      const url = await new Promise<string>((resolve, reject) => {
        let err = '';
        const timer = setTimeout(() => reject(new Error(`no listen line in time\n${out}\n${err}`)), 20_000);
        child.stderr.on('data', (chunk) => {
          err += chunk;
        });
        child.stdout.on('data', (chunk) => {
          out += chunk;
          const match = /listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
          if (match) {
            clearTimeout(timer);
            resolve(match[1]!);
          }
        });
        child.on('exit', (code) => {
          clearTimeout(timer);
          reject(new Error(`exited with ${code}\n${out}\n${err}`));
        });
      });
      const health = await fetch(`${url}/health`);
      assert.equal(health.status, 200);
      const hello = await fetch(`${url}/hello`);
      assert.equal(hello.status, 200);
      assert.match(await hello.text(), /^GET \/hello HTTP\/1\.1/);
      assert.match(out, /OpenTelemetry SDK started/);
    } finally {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
  });
  test('dockerfile – the operator image holds its package and the OpenTelemetry packages, nothing of the service', () => {
    const app = hostPath(builtOperatorImage(), '.');
    for (const file of ['package.json', 'main.js', 'main.js.LEGAL.txt', 'telemetry/otel.js', 'LICENSE']) {
      assert.ok(existsSync(join(app, file)), `${file} in the operator image`);
    }
    const manifest = JSON.parse(readFileSync(join(app, 'package.json'), 'utf8'));
    assert.equal(manifest.name, '@echo-chaos/operator');
    assert.deepEqual(manifest.bin, { 'echo-chaos-operator': 'main.js' });
    for (const absent of ['dist', 'src', 'test', 'node_modules/fastify', 'node_modules/@kubernetes']) {
      assert.ok(!existsSync(join(app, absent)), `${absent} is not in the operator image`);
    }
    const scopes = readdirSync(join(app, 'node_modules')).filter((d) => !d.startsWith('.'));
    assert.ok(scopes.includes('@opentelemetry'), 'the OpenTelemetry packages are installed');
    // Every dependency is an OpenTelemetry package, at the version of the repository's lockfile.
    const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8'));
    for (const name of Object.keys(manifest.dependencies)) {
      assert.match(name, /^@opentelemetry\//);
      const installed = JSON.parse(readFileSync(join(app, 'node_modules', name, 'package.json'), 'utf8'));
      assert.equal(installed.version, lock.packages[`node_modules/${name}`].version, name);
    }
  });

  /** As the image runs it: its ENTRYPOINT and CMD, on the double at `kubeconfig`. */
  function startBuiltOperator(
    app: string,
    kubeconfig: string,
    env: Record<string, string>,
    nodeArgs: string[] = [],
  ) {
    const image = builtOperatorImage();
    const [program, ...args] = [...image.entrypoint, ...image.cmd];
    assert.equal(program, 'node');
    return spawn(process.execPath, [...nodeArgs, ...args], {
      cwd: app,
      env: {
        ...image.env,
        PATH: process.env['PATH'] ?? '',
        KUBECONFIG: kubeconfig,
        PORT: '0',
        HOST: '127.0.0.1',
        WATCH_NAMESPACE: 'default',
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  }
  test('dockerfile – the operator starts from its image, lists and watches, and drains on SIGTERM', async () => {
    const app = hostPath(builtOperatorImage(), '.');
    const api = await startKubeApi();
    const kubeconfig = join(scratch, 'kubeconfig');
    writeFileSync(kubeconfig, api.kubeconfigFile());
    // Which files node loads from node_modules (ADR 0025: the entry point is one bundle; only the
    // OpenTelemetry API stays outside it, and the SDK loads only when an OTEL_* variable asks).
    const hooks = join(scratch, 'report-loads.mjs');
    writeFileSync(
      hooks,
      `import { registerHooks } from 'node:module';
registerHooks({
  load(url, context, nextLoad) {
    if (url.includes('/node_modules/')) process.stderr.write('loaded ' + url + '\\n');
    return nextLoad(url, context);
  },
});
`,
    );
    // ASCII only: one other character and node decodes the whole 5 MB source into a two-byte
    // string, twice the heap (ADR 0025).
    const bundle = readFileSync(join(app, 'main.js'));
    const wide = bundle.findIndex((byte) => byte > 0x7f);
    assert.equal(
      wide,
      -1,
      `a non-ASCII byte in the bundle: ${bundle.subarray(Math.max(0, wide - 60), wide + 20)}`,
    );
    const child = startBuiltOperator(app, kubeconfig, { POD_NAME: 'image-test' }, ['--import', hooks]);
    const exited = exitOf(child);
    try {
      const port = await new Promise<number>((resolve, reject) => {
        let out = '';
        const timer = setTimeout(() => reject(new Error(`no listen line in time\n${out}`)), 20_000);
        child.stdout.on('data', (chunk) => {
          out += chunk;
          const match = /"port":(\d+).*"msg":"operator listening"/.exec(out);
          if (match) {
            clearTimeout(timer);
            resolve(Number(match[1]));
          }
        });
        child.on('exit', (code) => {
          clearTimeout(timer);
          reject(new Error(`exited with ${code}\n${out}`));
        });
      });
      await until(
        'ready once every informer has listed',
        async () => (await fetch(`http://127.0.0.1:${port}/readyz`)).status === 200,
        10_000,
        50,
      );
      for (const resource of ['echoscenarios', 'pods', 'services', 'endpointslices']) {
        assert.ok((api.requests.get(`WATCH ${resource}`) ?? 0) > 0, `watches ${resource}`);
      }
      child.kill('SIGTERM');
      const result = await exited;
      assert.equal(result.code, 0, result.stderr);
      assert.match(result.stdout, /"msg":"drained"/);
      const loaded = [...result.stderr.matchAll(/^loaded (\S+)$/gm)].map((m) => m[1]!);
      const packages = new Set(loaded.map((url) => /\/node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)![1]));
      assert.deepEqual(
        [...packages],
        ['@opentelemetry/api'],
        `loaded from node_modules:\n${loaded.join('\n')}`,
      );
    } finally {
      child.kill('SIGKILL');
      await api.close();
    }
  });
  test('dockerfile – the operator image with an OTLP endpoint loads the SDK and exports spans of its API requests', async () => {
    const app = hostPath(builtOperatorImage(), '.');
    const api = await startKubeApi();
    const kubeconfig = join(scratch, 'kubeconfig-otel');
    writeFileSync(kubeconfig, api.kubeconfigFile());
    // A collector: what OTLP/HTTP JSON posts arrive.
    const posts: string[] = [];
    const collector = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk) => {
        body += chunk;
      });
      req.on('end', () => {
        posts.push(`${req.method} ${req.url} ${body}`);
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve));
    const { port: collectorPort } = collector.address() as AddressInfo;
    const child = startBuiltOperator(app, kubeconfig, {
      POD_NAME: 'image-otel-test',
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `http://127.0.0.1:${collectorPort}/v1/traces`,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    });
    const exited = exitOf(child);
    try {
      await new Promise<void>((resolve, reject) => {
        let out = '';
        const timer = setTimeout(() => reject(new Error(`no watch in time\n${out}`)), 20_000);
        child.stdout.on('data', (chunk) => {
          out += chunk;
        });
        const poll = setInterval(() => {
          if ((api.requests.get('WATCH echoscenarios') ?? 0) > 0 && /"msg":"became leader"/.test(out)) {
            clearInterval(poll);
            clearTimeout(timer);
            resolve();
          }
        }, 50);
        child.on('exit', (code) => {
          clearInterval(poll);
          clearTimeout(timer);
          reject(new Error(`exited with ${code}\n${out}`));
        });
      });
      // The drain flushes the SDK, so what was recorded is exported before the exit.
      child.kill('SIGTERM');
      const result = await exited;
      assert.equal(result.code, 0, result.stderr);
      assert.match(result.stdout, /"msg":"OpenTelemetry SDK started"/);
      const traces = posts.filter((p) => p.startsWith('POST /v1/traces '));
      assert.ok(
        traces.length > 0,
        `spans exported (collector saw: ${posts.map((p) => p.slice(0, 40)).join(', ')})`,
      );
      const all = traces.join('\n');
      assert.match(all, /"stringValue":"echo-chaos-operator"/, 'service.name');
      // client-node's requests to the API server, seen by the undici instrumentation.
      const origin = new URL(api.url).origin.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      assert.match(all, new RegExp(`"stringValue":"${origin}/apis/echo-chaos\\.dev/`));
    } finally {
      child.kill('SIGKILL');
      await api.close();
      await new Promise((resolve) => collector.close(resolve));
    }
  });
});
