import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { freePort, until } from '../helpers/runtime.ts';

/**
 * The service's own telemetry, end to end: the real `src/echo/main.ts` in a child process, its
 * OTLP/HTTP exporter pointed at a loopback receiver of this test.
 */

const MAIN = fileURLToPath(new URL('../../src/echo/main.ts', import.meta.url));
const cwd = mkdtempSync(join(tmpdir(), 'echo-otel-'));
after(() => rmSync(cwd, { recursive: true, force: true }));

interface Received {
  readonly path: string;
  readonly contentType: string;
  readonly body: Buffer;
}

/** A plain OTLP/HTTP receiver: records every POST and answers 200 with an empty export response. */
async function startReceiver(t: { after(fn: () => Promise<void>): void }) {
  const received: Received[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({
        path: req.url ?? '',
        contentType: String(req.headers['content-type']),
        body: Buffer.concat(chunks),
      });
      const json = String(req.headers['content-type']).includes('json');
      res.writeHead(200, { 'content-type': json ? 'application/json' : 'application/x-protobuf' });
      res.end(json ? '{}' : '');
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, received };
}

function start(port: number, env: Record<string, string>): { child: ChildProcess; stdout: () => string } {
  const child = spawn(process.execPath, [MAIN], {
    cwd,
    env: {
      PATH: process.env['PATH'] ?? '',
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_REQUESTS: 'false',
      ECHO_DRAIN_DELAY: '0',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 60_000,
  });
  let out = '';
  child.stdout?.setEncoding('utf8').on('data', (c: string) => {
    out += c;
  });
  child.stderr?.setEncoding('utf8').on('data', (c: string) => {
    out += c;
  });
  return { child, stdout: () => out };
}

function get(port: number, path: string, headers: Record<string, string> = {}) {
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path, headers, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        body += c;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
  });
}

async function listening(port: number, withinMs: number): Promise<void> {
  const health = () =>
    get(port, '/health').then(
      (answer) => answer.status === 200,
      () => false, // not yet
    );
  await until(`the server on ${port} answers /health`, health, withinMs, 50);
}

/** The first value `probe` finds (not undefined), polled until `withinMs`. */
async function found<T>(probe: () => T | undefined, withinMs: number, what: string): Promise<T> {
  let value: T | undefined;
  const seen = () => {
    value = probe();
    return value !== undefined;
  };
  await until(`a ${what}`, seen, withinMs, 50);
  return value as T;
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  await exited;
}

interface OtlpAttribute {
  key: string;
  value: { stringValue?: string; intValue?: string | number; boolValue?: boolean };
}
interface OtlpSpan {
  name: string;
  kind: number;
  traceId: string;
  parentSpanId?: string;
  attributes: OtlpAttribute[];
  status?: { code?: number; message?: string };
}

function spansOf(received: readonly Received[]): OtlpSpan[] {
  const out: OtlpSpan[] = [];
  for (const r of received) {
    if (r.path !== '/v1/traces' || !r.contentType.includes('json')) continue;
    const body = JSON.parse(r.body.toString('utf8')) as {
      resourceSpans: { scopeSpans: { spans: OtlpSpan[] }[] }[];
    };
    for (const rs of body.resourceSpans) for (const ss of rs.scopeSpans) out.push(...ss.spans);
  }
  return out;
}

const attr = (span: OtlpSpan, key: string) => {
  const v = span.attributes.find((a) => a.key === key)?.value;
  return v === undefined ? undefined : (v.stringValue ?? v.intValue ?? v.boolValue);
};

const SPAN_KIND_SERVER = 2;

test('otel – with OTEL_EXPORTER_OTLP_ENDPOINT the service exports a SERVER span per request, with the request id and the budget', async (t) => {
  const receiver = await startReceiver(t);
  const port = await freePort();
  const { child, stdout } = start(port, {
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_BSP_SCHEDULE_DELAY: '100',
  });
  t.after(() => stop(child));
  await listening(port, 20_000);

  const answer = await get(port, '/anything?x=1', { 'X-Request-ID': 'r-1', 'Obs-Timeout-Ms': '5000' });
  assert.equal(answer.status, 200);
  const span = await found(
    () =>
      spansOf(receiver.received).find(
        (s) => s.kind === SPAN_KIND_SERVER && attr(s, 'obs.request_id') === 'r-1',
      ),
    20_000,
    `SERVER span with obs.request_id r-1 (received ${receiver.received.length} posts; log: ${stdout()})`,
  );
  assert.match(span.traceId, /^[0-9a-f]{32}$/);
  assert.equal(attr(span, 'obs.timeout_budget.source'), 'remaining-header');
  const remaining = Number(attr(span, 'obs.timeout_budget.remaining_ms'));
  assert.ok(remaining > 0 && remaining <= 5000, `remaining ${remaining}`);
  assert.ok(Number(attr(span, 'obs.timeout_budget.deadline_epoch_ms')) > 0);
  assert.equal(attr(span, 'http.route'), '*', 'the fastify route is on the span');
  assert.match(stdout(), /OpenTelemetry SDK started/);
});

test('otel – by default the exporter speaks OTLP/HTTP protobuf to <endpoint>/v1/traces', async (t) => {
  const receiver = await startReceiver(t);
  const port = await freePort();
  const { child } = start(port, {
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    OTEL_BSP_SCHEDULE_DELAY: '100',
  });
  t.after(() => stop(child));
  await listening(port, 20_000);
  await get(port, '/protobuf', { 'X-Request-ID': 'r-proto' });
  const post = await found(
    () => receiver.received.find((r) => r.path === '/v1/traces' && r.body.includes('r-proto')),
    20_000,
    'protobuf export carrying r-proto',
  );
  assert.equal(post.contentType, 'application/x-protobuf');
});

test('otel – with no OTEL_* variable no SDK starts: nothing reaches the receiver, the log says so', async (t) => {
  const receiver = await startReceiver(t);
  const port = await freePort();
  // The receiver's URL under a name the service does not read: were it exported anyway, it would land here.
  const { child, stdout } = start(port, { NOT_OTEL_ENDPOINT: receiver.url });
  t.after(() => stop(child));
  await listening(port, 20_000);
  await get(port, '/quiet', { 'X-Request-ID': 'r-2' });
  assert.doesNotMatch((await get(port, '/metrics')).body, /otel_scope_name/);
  // SIGTERM drains, and the drain flushes a started SDK: a span of r-2 would be exported by the exit.
  await stop(child);
  assert.deepEqual(receiver.received, []);
  assert.match(stdout(), /OpenTelemetry SDK off/);
});

test('otel – OTEL_SDK_DISABLED=true wins over an endpoint; OTEL_TRACES_EXPORTER=none exports no traces', async (t) => {
  const envs: Record<string, string>[] = [{ OTEL_SDK_DISABLED: 'true' }, { OTEL_TRACES_EXPORTER: 'none' }];
  for (const env of envs) {
    const receiver = await startReceiver(t);
    const port = await freePort();
    const { child } = start(port, {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_BSP_SCHEDULE_DELAY: '100',
      ...env,
    });
    await listening(port, 20_000);
    await get(port, '/quiet', { 'X-Request-ID': 'r-3' });
    // SIGTERM drains, and the drain flushes a started SDK: a span of r-3 would be exported by the exit.
    await stop(child);
    assert.deepEqual(receiver.received, [], JSON.stringify(env));
  }
});

test('otel – a bad OTEL_* value stops startup with one line naming the variable, the value and the form', async () => {
  const port = await freePort();
  const { child, stdout } = start(port, { OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' });
  const [code] = (await once(child, 'exit')) as [number];
  assert.equal(code, 1);
  assert.equal(
    stdout(),
    'echo-chaos: OTEL_EXPORTER_OTLP_PROTOCOL="grpc" is invalid: expected http/protobuf or http/json (grpc is not supported)\n',
  );
});

test('otel – with ECHO_GRPC_PORT each gRPC call is a SERVER span by the RPC conventions, a child of the traceparent in its metadata', async (t) => {
  const { clientOf, EchoServiceClient, metadataOf, methodOf, unary } = await import('./grpc/grpc-client.ts');
  const receiver = await startReceiver(t);
  const port = await freePort();
  const grpcPort = await freePort();
  const { child, stdout } = start(port, {
    ECHO_GRPC_PORT: String(grpcPort),
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_BSP_SCHEDULE_DELAY: '100',
  });
  t.after(() => stop(child));
  await listening(port, 20_000);
  const client = clientOf(EchoServiceClient, grpcPort);
  t.after(() => client.close());
  const traceId = '0af7651916cd43dd8448eb211c80319c';
  const result = await unary(
    client,
    methodOf(EchoServiceClient, 'Echo'),
    { message: 'traced' },
    metadataOf([
      ['traceparent', `00-${traceId}-b7ad6b7169203331-01`],
      ['x-echo-status', 'UNAVAILABLE'],
    ]),
  );
  assert.equal(result.error?.code, 14);
  const span = await found(
    () => spansOf(receiver.received).find((s) => s.name === 'echochaos.v1.EchoService/Echo'),
    20_000,
    `the gRPC call's span (log: ${stdout()})`,
  );
  assert.equal(span.kind, SPAN_KIND_SERVER);
  assert.equal(span.traceId, traceId);
  assert.equal(span.parentSpanId, 'b7ad6b7169203331');
  assert.equal(attr(span, 'rpc.system'), 'grpc');
  assert.equal(attr(span, 'rpc.service'), 'echochaos.v1.EchoService');
  assert.equal(attr(span, 'rpc.method'), 'Echo');
  assert.equal(Number(attr(span, 'rpc.grpc.status_code')), 14);
  assert.equal(attr(span, 'network.peer.address'), '127.0.0.1');
  assert.equal(span.status?.code, 2, 'UNAVAILABLE is a server error: the span status is ERROR');
});
