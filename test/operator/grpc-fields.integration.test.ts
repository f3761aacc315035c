/**
 * The operator pushes an EchoScenario's gRPC fields (`grpcStatus`, `grpcMessage`, `grpcMetadata`,
 * `grpcTrailers`; issue #36 item 4) unchanged: the API (the CRD's schema) admits them, the
 * `POST /scenario` a pod gets holds them exactly as the spec gives them, the pod's read-back hash
 * covers them (a changed status is a new push, proved again), and what the CRD admits but the echo
 * refuses is the EchoScenario's `Invalid`. Against the API double or the `KUBECONFIG` cluster
 * (fixture.ts).
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { afterEach, describe, test } from 'node:test';
import { scenarioSetHash } from '../../src/scenario/index.ts';
import { startEcho } from '../helpers/echo-server.ts';
import { CLUSTER, type Fixture, POD_IP, startFixture, until } from './fixture.ts';

const ECHO = '/echochaos.v1.EchoService/Echo';
const target = { service: 'echo', port: 'http' };

/** A stand-in pod: a proxy in front of a real echo server that keeps every `POST /scenario` body. */
interface RecordingPod {
  readonly port: number;
  /** The bodies of the `POST /scenario` requests it passed on, parsed, oldest first. */
  readonly pushed: unknown[];
  close(): Promise<void>;
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

async function startRecordingPod(echoUrl: string): Promise<RecordingPod> {
  const pushed: unknown[] = [];
  const server: Server = createServer((req, res) => {
    void (async () => {
      const body = await readBody(req);
      if (req.method === 'POST' && req.url === '/scenario') pushed.push(JSON.parse(body.toString('utf8')));
      const headers: Record<string, string> = {};
      for (const name of ['content-type', 'if-none-match', 'authorization']) {
        const value = req.headers[name];
        if (typeof value === 'string') headers[name] = value;
      }
      const answer = await fetch(`${echoUrl}${req.url}`, {
        method: req.method ?? 'GET',
        headers,
        ...(body.length > 0 ? { body } : {}),
      });
      const out: Record<string, string> = {};
      for (const name of ['content-type', 'etag']) {
        const value = answer.headers.get(name);
        if (value !== null) out[name] = value;
      }
      res.writeHead(answer.status, out);
      res.end(Buffer.from(await answer.arrayBuffer()));
    })().catch((error: unknown) => {
      res.writeHead(502);
      res.end(String(error));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, POD_IP, resolve));
  return {
    port: (server.address() as { port: number }).port,
    pushed,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

interface EndpointEntry {
  pod: string;
  synced: boolean;
  hash: string;
}

async function endpointsOf(f: Fixture, name: string): Promise<EndpointEntry[]> {
  return ((await f.readiness(name)) as unknown as { endpoints?: EndpointEntry[] }).endpoints ?? [];
}

/** The responses of the spec below, with a status given by name, as a number and as digits. */
function responses(firstStatus: string): object[] {
  return [
    {
      grpcStatus: firstStatus,
      grpcMessage: 'backend warming up',
      grpcMetadata: { 'x-served-by': 'echo-chaos' },
      grpcTrailers: { 'retry-after-ms': '100', 'trace-bin': 'AAEC/w==' },
      repeat: 2,
      // HTTP fields beside them, for the HTTP requests on the same path.
      status: 503,
      headers: { 'Retry-After': '1' },
    },
    { grpcStatus: 0, grpcTrailers: { 'x-attempt': 'third' } },
    { grpcStatus: '4', grpcMessage: 'too slow', delay: '5ms' },
  ];
}

describe(`operator and gRPC fields against ${CLUSTER ? 'the KUBECONFIG cluster' : 'the API double'}`, () => {
  let f: Fixture;
  const closers: Array<() => Promise<void>> = [];
  afterEach(async () => {
    await f?.close();
    for (const close of closers.splice(0)) await close();
  });

  test('operator – pushes grpcStatus, grpcMessage, grpcMetadata and grpcTrailers unchanged, and proves them by the read-back hash', async () => {
    f = await startFixture(1);
    const echo = await startEcho({ HOST: POD_IP });
    closers.push(() => echo.close());
    const recording = await startRecordingPod(echo.url);
    closers.push(() => recording.close());
    await f.addPod('echo-rec', recording.port);
    await f.startOperator();

    await f.createScenario('grpc-flaky', {
      target,
      path: ECHO,
      cycle: false,
      responses: responses('UNAVAILABLE'),
    });
    const expected = [{ name: 'grpc-flaky', path: ECHO, cycle: false, responses: responses('UNAVAILABLE') }];
    await until('Synced 2/2', async () => (await f.readiness('grpc-flaky')).ready?.reason === 'Synced');
    assert.equal((await f.readiness('grpc-flaky')).syncedEndpoints, 2);
    // What the pod was sent, exactly: every gRPC field as the spec gives it, the name kept a name.
    assert.deepEqual(recording.pushed.at(-1), expected);
    // What both pods hold, and the hash each was read back with.
    assert.deepEqual(await f.scenariosOf('echo-0'), expected);
    assert.deepEqual(await (await fetch(`${echo.url}/scenario`)).json(), expected);
    const hash = scenarioSetHash(expected);
    assert.deepEqual((await endpointsOf(f, 'grpc-flaky')).map((e) => [e.pod, e.synced, e.hash]).sort(), [
      ['echo-0', true, hash],
      ['echo-rec', true, hash],
    ]);

    // A changed status alone is a new array: pushed, and read back with its own hash.
    await f.patchScenario('grpc-flaky', { spec: { responses: responses('INTERNAL') } });
    const changed = [{ ...expected[0], responses: responses('INTERNAL') }];
    const newHash = scenarioSetHash(changed);
    assert.notEqual(newHash, hash);
    await until('the new array proved on both pods', async () => {
      const entries = await endpointsOf(f, 'grpc-flaky');
      return entries.length === 2 && entries.every((e) => e.synced && e.hash === newHash);
    });
    assert.deepEqual(recording.pushed.at(-1), changed);
    assert.deepEqual(await f.scenariosOf('echo-0'), changed);
  });

  test('operator – the CRD refuses a grpcStatus outside 0-16 or an unknown name; the operator names what only the echo refuses', async () => {
    f = await startFixture(1);
    await f.startOperator();
    for (const grpcStatus of [17, 'NOPE', -1]) {
      await assert.rejects(
        f.createScenario('rejected', { target, path: ECHO, responses: [{ grpcStatus }] }),
        (err: { code?: number }) => err.code === 422,
        JSON.stringify(grpcStatus),
      );
    }
    // Admitted by the CRD's schema (which cannot see one field from another, nor map keys), refused
    // by validateScenarios: a message beside OK, a reserved trailer key.
    await f.createScenario('invalid', {
      target,
      path: ECHO,
      responses: [{ grpcStatus: 'OK', grpcMessage: 'fine' }, { grpcTrailers: { 'grpc-status': '14' } }],
    });
    await until('Invalid', async () => (await f.readiness('invalid')).ready?.reason === 'Invalid');
    const message = (await f.readiness('invalid')).ready?.message ?? '';
    assert.match(
      message,
      /spec\.responses\.0\.grpcMessage: grpcMessage cannot go beside grpcStatus "OK" \(OK\)/,
    );
    assert.match(
      message,
      /spec\.responses\.1\.grpcTrailers\.grpc-status: trailer key "grpc-status" is reserved/,
    );
    assert.deepEqual(await f.scenariosOf('echo-0'), [], 'nothing pushed');
  });
});
