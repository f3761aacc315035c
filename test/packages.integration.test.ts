/**
 * The three packages as their users meet them: packed from this repository, installed from the
 * tarballs into scratch apps outside it (fastify from the registry or npm's cache), and run on both
 * Node LTS lines, from JavaScript (imported and required) and from type-checked TypeScript. Then
 * `npx echo-chaos` from its tarball answers `/ready`, and `@echo-chaos/operator`, installed alone,
 * runs `npx echo-chaos-operator` (ADR 0048). What each install weighs (packages, MB) is measured
 * as docs/development.md ("The packages") states it.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, sep } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { exitOf, freePort, until, within } from './helpers/runtime.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const PACKAGE_VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string })
  .version;
/** Packages an obs-only app may add on top of fastify's own. */
const MAX_EXTRA_PACKAGES = 12;
const INSTALL_TIMEOUT_MS = 240_000;
/**
 * Bounds on what an install brings (docs/development.md, "The packages"): the service with obs
 * (issue #35: at most 60 packages and 40 MB; the OpenTelemetry SDK and ioredis are optional peers,
 * the generated certificate needs no package), and the operator alone (its bundle and the
 * OpenTelemetry packages).
 */
const MAX_SERVICE_PACKAGES = 60;
const MAX_SERVICE_MEGABYTES = 40;
const MAX_OPERATOR_PACKAGES = 30;
const MAX_OPERATOR_MEGABYTES = 40;
/** The Node lines a consumer may run: the current LTS lines. */
const NODE_LINES = ['22', '24'] as const;

const scratch = mkdtempSync(join(tmpdir(), 'echo-chaos-consumers-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

function run(command: string, args: string[], cwd: string, env: Record<string, string> = {}): string {
  try {
    return execFileSync(command, args, {
      cwd,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: INSTALL_TIMEOUT_MS,
      env: { ...process.env, npm_config_audit: 'false', npm_config_fund: 'false', ...env },
    });
  } catch (error) {
    const e = error as { stdout?: string; stderr?: string; message: string };
    throw new Error(
      `${command} ${args.join(' ')} (in ${cwd}) failed: ${e.message}\n${e.stdout ?? ''}\n${e.stderr ?? ''}`,
    );
  }
}

/** A new directory outside the repository holding `package.json`. */
function app(name: string, manifest: Record<string, unknown> = {}): string {
  const dir = join(scratch, name);
  mkdirSync(dir);
  writeFileSync(
    join(dir, 'package.json'),
    JSON.stringify({ name, version: '1.0.0', private: true, ...manifest }),
  );
  return dir;
}

function npmInstall(dir: string, specs: string[]): void {
  run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', ...specs], dir);
}

/** Every package an install put in `dir`, counted the way `npm ls --all` lists them. */
function installedPackages(dir: string): number {
  const out = run('npm', ['ls', '--all', '--parseable'], dir);
  return out.split('\n').filter((line) => line.trim() !== '').length - 1; // less the app itself
}

/** What an install put in `dir`: the packages `npm ls --all` lists and the size of node_modules. */
function footprint(dir: string): { packages: number; megabytes: number } {
  const kilobytes = Number(run('du', ['-sk', 'node_modules'], dir).split(/\s/)[0]);
  return { packages: installedPackages(dir), megabytes: Math.round(kilobytes / 1024) };
}

function tarEntries(tarball: string): string[] {
  return run('tar', ['-tzf', tarball], scratch)
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => l.replace(/^package\//, ''));
}

/** The app every consumer runs: obs registered, a route of its own, the actuator and /metrics over HTTP. */
const SERVER_BODY = `
const app = Fastify();
await app.register(obsPlugin, { env: {}, version: '1.0.0', serviceName: 'consumer' });
app.get('/hello', async () => ({ hello: 'world', mode: app.obs.mode.get() }));
app.get('/metrics', async (_request, reply) =>
  reply.type(app.obs.registry.contentType).send(await app.obs.registry.metrics()),
);
const url = await app.listen({ port: 0, host: '127.0.0.1' });
const hello = await (await fetch(url + '/hello')).json();
const snapshot = await fetch(url + '/actuator/obs');
const metrics = await (await fetch(url + '/metrics')).text();
await app.close();
console.log(JSON.stringify({
  node: process.version,
  hello,
  snapshotStatus: snapshot.status,
  snapshotMode: (await snapshot.json()).mode,
  obsSeries: metrics.split('\\n').filter((l) => l.startsWith('obs_')).length,
  // recorded per series (CounterBatch, HistogramBatch) and handed to prom-client when /metrics reads them
  perRequest: metrics
    .split('\\n')
    .filter((l) => /^obs_(trace_missing_total|request_fan_out_count)\\{.*"\\/hello"\\} 1$/.test(l)).length,
}));
`;

interface ConsumerReport {
  readonly node: string;
  readonly hello: { hello: string; mode: string };
  readonly snapshotStatus: number;
  readonly snapshotMode: string | undefined;
  readonly obsSeries: number;
  readonly perRequest: number;
}

function assertReport(output: string, line: string): void {
  const report = JSON.parse(output.trim().split('\n').at(-1)!) as ConsumerReport;
  assert.match(report.node, new RegExp(`^v${line}\\.`), `ran on ${report.node}, not Node ${line}`);
  assert.deepEqual(report.hello, { hello: 'world', mode: 'ENFORCING' });
  assert.equal(report.snapshotStatus, 200);
  assert.equal(report.snapshotMode, 'ENFORCING');
  assert.ok(report.obsSeries > 0, 'no obs_* series on /metrics');
  assert.equal(
    report.perRequest,
    2,
    'the request to /hello is not in obs_trace_missing_total and obs_request_fan_out',
  );
}

/** What test/obs/fixtures/packed-consumer/origin-checks.js prints (issue #40). */
interface OriginReport {
  readonly zeroDefault: Record<
    'none' | 'explicitZero',
    {
      readonly budget: { readonly remainingMs: number; readonly source: string } | null;
      readonly fetch: { readonly status?: number; readonly error?: string };
      readonly kafka: Readonly<Record<string, string>>;
      readonly downstream: ReadonlyArray<{
        readonly remaining: string | null;
        readonly deadline: string | null;
      }>;
      readonly exhausted: Readonly<Record<'fetch' | 'kafka', number>>;
    }
  >;
  readonly zeroRemaining: {
    readonly results: Readonly<Record<string, { readonly status?: number; readonly error?: string }>>;
    readonly downstream: Readonly<Record<string, readonly (string | null)[]>>;
  };
  readonly lever: {
    readonly started: string;
    readonly dryRun: {
      readonly active: boolean;
      readonly changes: ReadonlyArray<{
        readonly setting: string;
        readonly enforcing: string;
        readonly dry_run: string;
        readonly applies: boolean;
      }>;
    } | null;
    readonly dryRunCall: { readonly status?: number; readonly error?: string };
    readonly dryRunDownstream: number;
    readonly route: Readonly<
      Record<
        string,
        {
          readonly status: number;
          readonly body: {
            readonly current?: string;
            readonly error?: { readonly code: string; readonly message: string };
          };
        }
      >
    >;
    readonly code: unknown;
  };
}

describe('packages – installed from their tarballs, outside the repository', { concurrency: false }, () => {
  const tarballs = { obs: '', service: '', operator: '' };
  const nodes: Record<string, string> = {};

  before(() => {
    const packs = join(scratch, 'tarballs');
    mkdirSync(packs);
    // `npm pack` runs the prepack script, which builds both packages.
    run('npm', ['pack', '--pack-destination', packs], ROOT);
    run('npm', ['pack', '--pack-destination', packs], join(ROOT, 'src', 'obs', 'dist'));
    run('npm', ['pack', '--pack-destination', packs], join(ROOT, 'src', 'operator', 'dist'));
    for (const file of readdirSync(packs)) {
      if (file.startsWith('echo-chaos-obs-')) tarballs.obs = join(packs, file);
      else if (file.startsWith('echo-chaos-operator-')) tarballs.operator = join(packs, file);
      else if (file.startsWith('echo-chaos-')) tarballs.service = join(packs, file);
    }
    assert.ok(
      tarballs.obs !== '' && tarballs.service !== '' && tarballs.operator !== '',
      `tarballs: ${readdirSync(packs).join(', ')}`,
    );
    // Both Node LTS lines, from the registry's `node` package.
    for (const line of NODE_LINES) {
      const dir = app(`node-${line}`);
      npmInstall(dir, [`node@${line}`]);
      nodes[line] = join(dir, 'node_modules', '.bin', 'node');
    }
  });

  test('the READMEs name the tarballs npm pack writes, install both together until the first release, and the operator alone', () => {
    const service = basename(tarballs.service);
    const obs = basename(tarballs.obs);
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    assert.ok(
      readme.includes(`npm install ./${service} ./${obs}`),
      `README.md installs ${service} with ${obs}`,
    );
    // The operator's, packed alone by `npm run pack:operator`.
    assert.ok(readme.includes(basename(tarballs.operator)), `README.md names ${basename(tarballs.operator)}`);
    assert.ok(readme.includes('npm run pack:operator'), 'README.md says how to pack the operator');
    const obsReadme = readFileSync(join(ROOT, 'src', 'obs', 'README.md'), 'utf8');
    assert.ok(obsReadme.includes(`writes ${obs}`), `src/obs/README.md names ${obs}`);
    assert.ok(obsReadme.includes(`npm install /path/to/${obs} fastify`));
  });

  test('the obs tarball holds built JavaScript, declarations, source maps and presets, nothing else', () => {
    const entries = tarEntries(tarballs.obs);
    assert.ok(
      entries.includes('index.js') && entries.includes('index.d.ts') && entries.includes('index.js.map'),
    );
    assert.ok(entries.some((e) => /^presets\/application-obs-prod\.yml$/.test(e)));
    // Every module the build wrote, in its folder (core/, features/, integrations/; ADR 0046).
    const built = readdirSync(join(ROOT, 'src', 'obs', 'dist'), { recursive: true, encoding: 'utf8' });
    const modules = built.filter((f) => f.endsWith('.js')).map((f) => f.split(sep).join('/'));
    assert.ok(modules.includes('core/obs.js'), 'the build wrote core/obs.js');
    assert.deepEqual(
      modules.filter((f) => !entries.includes(f)),
      [],
      'built modules missing from the tarball',
    );
    const unexpected = entries.filter(
      (e) =>
        !/^([a-z0-9-]+\/)*[a-z0-9-]+\.(js|js\.map|d\.ts|d\.ts\.map)$/.test(e) &&
        !/^presets\/application-obs-[a-z]+\.yml$/.test(e) &&
        !['package.json', 'README.md', 'LICENSE'].includes(e),
    );
    assert.deepEqual(unexpected, []);
    assert.deepEqual(
      entries.filter((e) => /(^|\/)(tests?|fixtures?)\/|\.test\./i.test(e)),
      [],
    );
  });

  test('the echo-chaos tarball holds dist/ and the package files, no test or source file, no operator', () => {
    const entries = tarEntries(tarballs.service);
    // The gRPC service's proto is read at run time, and is the clients' contract (#36).
    // The console's files, bundled by the build (ADR 0053).
    for (const bin of [
      'dist/echo/main.js',
      'dist/echo/pages/web-ws.html',
      'dist/echo/console/static/console.js',
      'dist/echo/console/static/console.css',
      'dist/echo/console/static/console.html',
      'proto/echochaos/v1/echo.proto',
    ]) {
      assert.ok(entries.includes(bin), `${bin} missing`);
    }
    const unexpected = entries.filter(
      (e) =>
        !/^dist\/[a-z0-9/-]+\.(js|js\.map|d\.ts|d\.ts\.map|html)$/.test(e) &&
        !/^dist\/echo\/console\/static\/[a-z0-9-]+\.(css|svg)$/.test(e) &&
        !/^proto\/[a-z0-9/]+\.proto$/.test(e) &&
        !['package.json', 'README.md', 'LICENSE'].includes(e),
    );
    assert.deepEqual(unexpected, []);
    assert.deepEqual(
      entries.filter((e) => /(^|\/)(tests?|fixtures?)\/|\.test\.|^src\//i.test(e)),
      [],
    );
    // The operator is its own package (ADR 0048).
    assert.deepEqual(
      entries.filter((e) => e.startsWith('dist/operator/')),
      [],
    );
    const manifest = JSON.parse(run('tar', ['-xzOf', tarballs.service, 'package/package.json'], scratch));
    assert.deepEqual(Object.keys(manifest.bin), ['echo-chaos']);
    assert.equal(manifest.dependencies['@kubernetes/client-node'], undefined);
  });

  test('the operator tarball holds its bundle, the SDK module, the CRD and the package files, nothing else', () => {
    assert.equal(basename(tarballs.operator), `echo-chaos-operator-${PACKAGE_VERSION}.tgz`);
    assert.deepEqual(tarEntries(tarballs.operator).sort(), [
      'LICENSE',
      'README.md',
      'crds/echoscenarios.echo-chaos.dev.yaml',
      'main.js',
      // The license notices of what the bundle holds (ADR 0025).
      'main.js.LEGAL.txt',
      'package.json',
      'telemetry/otel.js',
    ]);
    const manifest = JSON.parse(run('tar', ['-xzOf', tarballs.operator, 'package/package.json'], scratch));
    const root = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
    assert.equal(manifest.name, '@echo-chaos/operator');
    assert.equal(manifest.private, undefined);
    for (const field of ['version', 'license', 'engines', 'type']) {
      assert.deepEqual(manifest[field], root[field], field);
    }
    assert.deepEqual(manifest.bin, { 'echo-chaos-operator': 'main.js' });
    // Only what the bundle leaves outside, at the versions the repository runs: the OpenTelemetry
    // packages, the SDK among them as plain, pinned dependencies (the service leaves it to its user,
    // an optional peer with a range).
    for (const [name, version] of Object.entries(manifest.dependencies)) {
      assert.match(name, /^@opentelemetry\//);
      assert.equal(version, root.dependencies[name] ?? root.devDependencies[name], name);
    }
    assert.ok(manifest.dependencies['@opentelemetry/api'], 'the API obs and the SDK share');
    assert.ok(manifest.dependencies['@opentelemetry/sdk-trace'], 'the SDK the image runs');
    assert.equal(manifest.peerDependencies, undefined);
    // The README has the settings table of src/operator/README.md.
    const readme = run('tar', ['-xzOf', tarballs.operator, 'package/README.md'], scratch);
    assert.match(readme, /^\| `WATCH_NAMESPACE` \|/m);
  });

  test('packing src/operator itself fails, naming the command that packs the operator', () => {
    assert.throws(
      () => run('npm', ['pack', '--dry-run', join(ROOT, 'src', 'operator')], scratch),
      /npm run pack:operator/,
    );
  });

  test(`an obs-only install adds at most ${MAX_EXTRA_PACKAGES} packages to fastify's own`, () => {
    const fastifyOnly = app('fastify-only');
    npmInstall(fastifyOnly, ['fastify@5']);
    const withObs = app('obs-only');
    npmInstall(withObs, [tarballs.obs, 'fastify@5']);
    const base = installedPackages(fastifyOnly);
    const total = installedPackages(withObs);
    assert.ok(base > 10, `fastify alone installed only ${base} packages`);
    assert.ok(
      total - base <= MAX_EXTRA_PACKAGES,
      `obs adds ${total - base} packages (${total} against fastify's ${base})`,
    );
  });

  test("obs shares the app's @opentelemetry/api (a peer): one copy, the app's version", () => {
    // An app on an SDK that pins an older API line: obs must use that copy, or it sees no spans.
    const dir = app('otel-1-9');
    npmInstall(dir, [tarballs.obs, 'fastify@5', '@opentelemetry/api@1.9']);
    const copies = run('npm', ['ls', '@opentelemetry/api', '--all', '--parseable'], dir)
      .split('\n')
      .filter((line) => line.trim() !== '');
    assert.deepEqual(copies, [join(dir, 'node_modules', '@opentelemetry', 'api')], 'one copy, at the top');
    const version = JSON.parse(run('npm', ['ls', '@opentelemetry/api', '--json'], dir)) as {
      dependencies: Record<string, { version: string }>;
    };
    assert.match(version.dependencies['@opentelemetry/api']!.version, /^1\.9\./);
  });

  test('a JavaScript app imports obs, serves a route, /actuator/obs and /metrics on Node 22 and 24', () => {
    const dir = app('js-esm', { type: 'module' });
    npmInstall(dir, [tarballs.obs, 'fastify@5']);
    writeFileSync(
      join(dir, 'server.js'),
      `import Fastify from 'fastify';\nimport { obsPlugin } from '@echo-chaos/obs';\n${SERVER_BODY}`,
    );
    for (const line of NODE_LINES) assertReport(run(nodes[line]!, ['server.js'], dir), line);
  });

  test("the README's quick start, as written, runs from the tarball on Node 22 and 24", async () => {
    const readme = readFileSync(join(ROOT, 'src', 'obs', 'README.md'), 'utf8');
    const snippet = /```js\n(\/\/ server\.mjs[^\n]*\n[\s\S]*?)```/.exec(readme)?.[1];
    assert.ok(snippet, 'src/obs/README.md has no ```js block starting with // server.mjs');
    const dir = app('readme-quick-start');
    npmInstall(dir, [tarballs.obs, 'fastify@5']);
    writeFileSync(join(dir, 'server.mjs'), snippet);
    for (const line of NODE_LINES) {
      const port = await freePort();
      const child = spawn(nodes[line]!, ['server.mjs'], {
        cwd: dir,
        env: { PATH: process.env['PATH'] ?? '', PORT: String(port) },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const exit = exitOf(child);
      try {
        const base = `http://127.0.0.1:${port}`;
        let order: Response | undefined;
        await until(
          `the quick start answers on Node ${line}`,
          async () => {
            order = await fetch(`${base}/orders/42`, { headers: { 'x-request-id': 'readme-1' } }).catch(
              () => undefined,
            );
            return order !== undefined;
          },
          20_000,
          100,
        );
        assert.ok(order);
        assert.deepEqual(await order.json(), { id: '42', mode: 'ENFORCING' });
        assert.equal((await fetch(`${base}/actuator/obs`)).status, 200);
        assert.match(await (await fetch(`${base}/metrics`)).text(), /^obs_config_info\{/m);
      } finally {
        child.kill('SIGTERM');
      }
      const { stdout } = await exit;
      const logged = stdout
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      assert.ok(
        logged.some((entry) => entry['request_id'] === 'readme-1'),
        `no JSON log line with the request id on Node ${line}:\n${stdout}`,
      );
    }
  });

  test('a CommonJS app requires obs and runs the same on Node 22 and 24', () => {
    const dir = app('js-cjs', { type: 'commonjs' });
    npmInstall(dir, [tarballs.obs, 'fastify@5']);
    writeFileSync(
      join(dir, 'server.cjs'),
      `const Fastify = require('fastify');\nconst { obsPlugin } = require('@echo-chaos/obs');\n(async () => {${SERVER_BODY}})();`,
    );
    for (const line of NODE_LINES) assertReport(run(nodes[line]!, ['server.cjs'], dir), line);
  });

  test('a TypeScript app type-checks against the declarations (tsc), then runs on Node 22 and 24', () => {
    const dir = app('ts-esm', { type: 'module' });
    npmInstall(dir, [tarballs.obs, 'fastify@5', '@types/node@24']);
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'es2023',
          module: 'nodenext',
          strict: true,
          outDir: 'out',
          types: ['node'],
          skipLibCheck: false,
        },
        files: ['server.ts'],
      }),
    );
    writeFileSync(
      join(dir, 'server.ts'),
      [
        "import Fastify from 'fastify';",
        "import { obsPlugin, type EnforcementMode } from '@echo-chaos/obs';",
        // The declarations carry the decorations: `app.obs` is typed, its mode is the enum.
        'const expectMode = (mode: EnforcementMode): EnforcementMode => mode;',
        SERVER_BODY.replace('mode: app.obs.mode.get()', 'mode: expectMode(app.obs.mode.get())'),
      ].join('\n'),
    );
    const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
    run(process.execPath, [tsc, '-p', 'tsconfig.json'], dir);
    for (const line of NODE_LINES) assertReport(run(nodes[line]!, ['out/server.js'], dir), line);
    // The check can fail: a wrong type is an error.
    writeFileSync(
      join(dir, 'wrong.ts'),
      "import { obsPlugin } from '@echo-chaos/obs';\nconst n: number = obsPlugin;\n",
    );
    writeFileSync(
      join(dir, 'tsconfig.wrong.json'),
      JSON.stringify({ extends: './tsconfig.json', compilerOptions: { noEmit: true }, files: ['wrong.ts'] }),
    );
    assert.throws(
      () => run(process.execPath, [tsc, '-p', 'tsconfig.wrong.json'], dir),
      /not assignable to type 'number'/,
    );
  });

  /**
   * Issue #40: the original starter's own checks, black-box against the tarball in a plain fastify
   * app with undici and axios beside it (test/obs/fixtures/packed-consumer/origin-checks.js), run
   * once on Node 24; each test below judges its part of what the app saw.
   */
  let originReport: OriginReport | undefined;
  const origin = (): OriginReport => {
    if (originReport !== undefined) return originReport;
    const dir = app('origin-checks', { type: 'module' });
    npmInstall(dir, [tarballs.obs, 'fastify@5', 'undici@7', 'axios@1']);
    writeFileSync(
      join(dir, 'origin-checks.js'),
      readFileSync(join(ROOT, 'test', 'obs', 'fixtures', 'packed-consumer', 'origin-checks.js')),
    );
    const output = run(nodes['24']!, ['origin-checks.js'], dir);
    originReport = JSON.parse(output.trim().split('\n').at(-1)!) as OriginReport;
    return originReport;
  };

  test('obs from its tarball: default-budget 0 establishes no budget, nothing stamped on HTTP or Kafka; an inbound 0 is still expired (#40)', () => {
    const { none, explicitZero } = origin().zeroDefault;
    assert.equal(none.budget, null, 'currentTimeoutBudget() is empty');
    assert.equal(none.fetch.status, 200);
    assert.deepEqual(none.downstream, [{ remaining: null, deadline: null }], 'nothing stamped on HTTP');
    assert.equal(none.kafka['Obs-Timeout-Ms'], undefined, 'nothing stamped on Kafka');
    assert.equal(none.kafka['Obs-Timeout-Deadline-Ms'], undefined);
    assert.equal(none.exhausted.fetch + none.exhausted.kafka, 0, 'no call counted as exhausted');
    // The explicit 0: an expired budget, stamped 0 and counted, the call still made.
    assert.equal(explicitZero.budget?.remainingMs, 0);
    assert.equal(explicitZero.budget?.source, 'remaining-header');
    assert.equal(explicitZero.fetch.status, 200);
    assert.equal(explicitZero.downstream[0]?.remaining, '0');
    assert.equal(explicitZero.kafka['Obs-Timeout-Ms'], '0');
    assert.deepEqual(
      { fetch: explicitZero.exhausted.fetch, kafka: explicitZero.exhausted.kafka },
      { fetch: 1, kafka: 1 },
    );
  });

  test('obs from its tarball: with apply-client-timeout and 0 ms left, fetch, undici, node:http and axios calls all run (#40)', () => {
    const { results, downstream } = origin().zeroRemaining;
    const everyClient = {
      fetch: { status: 200 },
      undici: { status: 200 },
      http: { status: 200 },
      axios: { status: 200 },
    };
    assert.deepEqual(results, everyClient, 'an exhausted call still executes, whatever the client');
    assert.deepEqual(
      downstream,
      { fetch: ['0'], undici: ['0'], http: ['0'], axios: ['0'] },
      'the downstream saw each call once, stamped 0',
    );
  });

  test('obs from its tarball: the lever reads dry_run as DRY_RUN on the route, the variable and in code; the snapshot says what DRY_RUN changes (#40)', () => {
    const lever = origin().lever;
    assert.equal(lever.started, 'DRY_RUN', 'OBS_ENFORCEMENT_MODE=dry_run');
    assert.deepEqual(
      Object.fromEntries(
        Object.entries(lever.route).map(([k, v]) => [k, [v.status, v.body.current ?? v.body.error?.code]]),
      ),
      {
        enforcing: [200, 'ENFORCING'],
        dryRun: [200, 'DRY_RUN'],
        dashed: [200, 'DRY_RUN'],
        canonical: [200, 'ENFORCING'],
        off: [400, 'OBS_ERR_INVALID_MODE'],
      },
      'answered with the canonical spelling',
    );
    assert.match(lever.route['off']?.body.error?.message ?? '', /"off"/);
    assert.deepEqual(
      lever.code,
      { previous: 'ENFORCING', current: 'DRY_RUN' },
      "app.obs.mode.set('dry_run')",
    );
    // ADR 0051: DRY_RUN never refuses; abort-on-exhaustion refuses in ENFORCING only.
    assert.deepEqual(lever.dryRunCall, { status: 200 });
    assert.equal(lever.dryRunDownstream, 1);
    assert.ok(lever.dryRun, 'the snapshot has no dry_run section');
    assert.equal(lever.dryRun.active, true);
    assert.deepEqual(
      lever.dryRun.changes.map((c) => [c.setting, c.applies]),
      [
        ['obs.cardinality.max-tag-values-per-meter', true],
        ['obs.trace-guard.fail-on-missing', false],
        ['obs.timeout-budget.abort-on-exhaustion', true],
      ],
    );
    for (const change of lever.dryRun.changes) assert.ok(change.enforcing !== '' && change.dry_run !== '');
  });

  test('npx echo-chaos from its tarball answers /ready and --help lists the variables', async () => {
    const dir = app('service');
    npmInstall(dir, [tarballs.obs, tarballs.service]);
    const help = run('npx', ['--no-install', 'echo-chaos', '--help'], dir, {
      PATH: `${join(nodes['24']!, '..')}:${process.env['PATH']}`,
    });
    assert.match(help, /^ {2}ECHO_CHAOS$/m);
    // The operator is its own package: neither its bin nor its Kubernetes client comes with the service.
    assert.ok(!existsSync(join(dir, 'node_modules', '.bin', 'echo-chaos-operator')));
    assert.ok(!existsSync(join(dir, 'node_modules', '@kubernetes', 'client-node')));
    // The library entry points: the service in process, and obs through its old name.
    writeFileSync(
      join(dir, 'embed.mjs'),
      [
        "import { buildApp, loadConfig } from 'echo-chaos';",
        "import { obsPlugin } from 'echo-chaos/obs';",
        "const app = await buildApp(loadConfig({ LOG_REQUESTS: 'false' }));",
        "const reply = await app.inject({ method: 'POST', url: '/embedded', payload: 'in process' });",
        'await app.close();',
        "console.log('EMBED ' + JSON.stringify({ status: reply.statusCode, body: reply.body, plugin: typeof obsPlugin }));",
      ].join('\n'),
    );
    // The service's own log lines (written asynchronously) may come before or after it.
    const embedLine = run(nodes['24']!, ['embed.mjs'], dir)
      .split('\n')
      .find((line) => line.startsWith('EMBED '));
    assert.ok(embedLine, 'embed.mjs printed its result');
    const embedded = JSON.parse(embedLine.slice('EMBED '.length));
    assert.deepEqual(embedded, { status: 200, body: 'in process', plugin: 'function' });
    const port = await freePort();
    const child = spawn('npx', ['--no-install', 'echo-chaos'], {
      cwd: dir,
      env: {
        ...process.env,
        PATH: `${join(nodes['24']!, '..')}:${process.env['PATH']}`,
        PORT: String(port),
        ECHO_DRAIN_DELAY: '0',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    const exit = exitOf(child);
    try {
      let ready: Response | undefined;
      await until(
        'echo-chaos answers',
        async () => {
          ready = await fetch(`http://127.0.0.1:${port}/ready`).catch(() => undefined);
          return ready !== undefined;
        },
        20_000,
        100,
      );
      assert.ok(ready);
      assert.equal(ready.status, 200);
      assert.deepEqual(await ready.json(), { status: 'ready' });
      const echo = await fetch(`http://127.0.0.1:${port}/hello`, { method: 'POST', body: 'from npx' });
      assert.equal(await echo.text(), 'from npx');
      // `npx echo-chaos & kill $!`: the signal goes to npm alone, as from a shell. npm passes it to
      // the shell it ran the bin with, which dies without passing it on: the service, its parent
      // gone, stops as on SIGTERM (drained) rather than serving on.
      process.kill(child.pid!, 'SIGTERM');
      const { stdout } = await within(exit, 'npx had not exited 30 s after SIGTERM', 30_000);
      await until(
        `nothing serves on ${port} once npx was stopped`,
        () =>
          fetch(`http://127.0.0.1:${port}/ready`).then(
            () => false,
            () => true,
          ),
        10_000,
        100,
      );
      assert.match(stdout, /"msg":"drained"/);
      // its log lines come from the log worker the package ships (LOG_WORKER), not the fallback
      assert.match(stdout, /"msg":"127\.0\.0\.1 POST \/hello - 200 /);
      assert.doesNotMatch(stdout, /the log worker stopped/);
    } finally {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // Gone already: what the test expects.
      }
    }
  });
  test('the OpenTelemetry SDK and ioredis are optional: asked for without them, the service says what to install; installed, it uses them', async () => {
    const dir = app('service-optional');
    npmInstall(dir, [tarballs.obs, tarballs.service]);
    const env = { PATH: `${join(nodes['24']!, '..')}:${process.env['PATH']}` };
    for (const absent of ['@opentelemetry/sdk-trace', 'ioredis', 'selfsigned', '@peculiar/x509']) {
      assert.ok(!existsSync(join(dir, 'node_modules', absent)), `${absent} installed with the service`);
    }
    const refused = (extra: Record<string, string>) => {
      const result = spawnSync('npx', ['--no-install', 'echo-chaos'], {
        cwd: dir,
        encoding: 'utf8',
        timeout: 60_000,
        env: { ...process.env, ...env, PORT: '0', ...extra },
      });
      return {
        status: result.status,
        lines: result.stderr.split('\n').filter((l) => l.startsWith('echo-chaos:')),
      };
    };
    const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
      peerDependencies: Record<string, string>;
    };
    const otelPackages = Object.entries(manifest.peerDependencies)
      .filter(([name]) => name.startsWith('@opentelemetry/'))
      .map(([name, version]) => `${name}@${version}`);
    const otel = refused({ OTEL_TRACES_EXPORTER: 'otlp' });
    assert.equal(otel.status, 1);
    assert.equal(otel.lines.length, 1, otel.lines.join('\n'));
    assert.match(otel.lines[0]!, /OTEL_\* variables ask for OpenTelemetry, but its SDK is not installed/);
    assert.ok(otel.lines[0]!.endsWith(`npm install ${otelPackages.join(' ')}`), otel.lines[0]);
    const redis = refused({ ECHO_STATE_URL: 'redis://127.0.0.1:1' });
    assert.equal(redis.status, 1);
    assert.deepEqual(redis.lines, [
      `echo-chaos: ECHO_STATE_URL="redis://127.0.0.1:1" needs the package ioredis, which is not installed; install it beside echo-chaos: npm install ioredis@${manifest.peerDependencies['ioredis']}`,
    ]);
    // What the line says, done: the service then starts the SDK. The install still updates: the
    // package's peers are ranges, so the next patch release of one is no conflict.
    npmInstall(dir, otelPackages);
    run('npm', ['update', '--no-audit', '--no-fund'], dir);
    const port = await freePort();
    const child = spawn('npx', ['--no-install', 'echo-chaos'], {
      cwd: dir,
      env: {
        ...process.env,
        ...env,
        PORT: String(port),
        ECHO_DRAIN_DELAY: '0',
        OTEL_TRACES_EXPORTER: 'otlp',
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    const exit = exitOf(child);
    try {
      await until(
        'echo-chaos answers with the SDK installed',
        () =>
          fetch(`http://127.0.0.1:${port}/ready`).then(
            (r) => r.status === 200,
            () => false,
          ),
        20_000,
        100,
      );
      process.kill(-child.pid!, 'SIGTERM');
      const { stdout } = await within(exit, 'echo-chaos had not exited 30 s after SIGTERM', 30_000);
      assert.match(stdout, /OpenTelemetry SDK started/);
    } finally {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // Gone already: what the test expects.
      }
    }
  });

  test('@echo-chaos/operator installed alone: npx echo-chaos-operator --help, its dependencies only', () => {
    const dir = app('operator-alone');
    npmInstall(dir, [tarballs.operator]);
    const env = { PATH: `${join(nodes['24']!, '..')}:${process.env['PATH']}` };
    // A JavaScript file run by its shebang, never by a shell.
    const help = run('npx', ['--no-install', 'echo-chaos-operator', '--help'], dir, env);
    assert.match(help, /^Usage: echo-chaos-operator/m);
    assert.equal(
      run('npx', ['--no-install', 'echo-chaos-operator', '--version'], dir, env).trim(),
      PACKAGE_VERSION,
    );
    const installed = readdirSync(join(dir, 'node_modules')).filter((d) => !d.startsWith('.'));
    for (const absent of ['@kubernetes', 'fastify', 'echo-chaos', 'pino']) {
      assert.ok(!installed.includes(absent), `${absent} installed with the operator`);
    }
    // The SDK module loads from the package, its OpenTelemetry packages resolved from the install.
    const otel = join(dir, 'node_modules', '@echo-chaos', 'operator', 'telemetry', 'otel.js');
    const loaded = run(
      nodes['24']!,
      [
        '--input-type=module',
        '-e',
        `const m = await import(${JSON.stringify(otel)}); console.log(typeof m.startTelemetry);`,
      ],
      dir,
    );
    assert.equal(loaded.trim(), 'function');
  });

  test('what each install weighs (docs/development.md, "The packages")', (t) => {
    const service = app('weigh-service');
    npmInstall(service, [tarballs.obs, tarballs.service]);
    const operator = app('weigh-operator');
    npmInstall(operator, [tarballs.operator]);
    const obs = app('weigh-obs');
    npmInstall(obs, [tarballs.obs, 'fastify@5']);
    const figures = {
      'echo-chaos + @echo-chaos/obs': footprint(service),
      '@echo-chaos/operator': footprint(operator),
      '@echo-chaos/obs + fastify': footprint(obs),
    };
    for (const [what, { packages, megabytes }] of Object.entries(figures)) {
      t.diagnostic(`${what}: ${packages} packages, ${megabytes} MB`);
    }
    // The service no longer brings the operator's Kubernetes client (64 MB of the 149 it weighed).
    assert.ok(!existsSync(join(service, 'node_modules', '@kubernetes')));
    assert.ok(figures['echo-chaos + @echo-chaos/obs'].packages <= MAX_SERVICE_PACKAGES);
    assert.ok(figures['echo-chaos + @echo-chaos/obs'].megabytes <= MAX_SERVICE_MEGABYTES);
    // The operator: its bundle and the OpenTelemetry packages.
    assert.ok(figures['@echo-chaos/operator'].packages <= MAX_OPERATOR_PACKAGES);
    assert.ok(figures['@echo-chaos/operator'].megabytes <= MAX_OPERATOR_MEGABYTES);
  });
});
