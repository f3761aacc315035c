// obs's drain with `closeListener` (docs/adr/0041-one-drain.md): the listener closes after the
// delay, keep-alive ends, idle connections are closed, HTTP/2 sessions get a GOAWAY, and the drain
// ends once the requests in flight and the connections are gone. Real sockets and real time (the
// delay and the one-second idle close are the point), so an integration file.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import http from 'node:http';
import http2 from 'node:http2';
import { test } from 'node:test';
import Fastify from 'fastify';
import { Registry } from 'prom-client';
import { obsPlugin } from '../../../src/obs/index.ts';
import { until, within } from '../../helpers/runtime.ts';
import { capturingLogger, startObsApp } from '../helpers.ts';

/** A route `/slow` held until `release()`; `arrived` resolves once a request is inside. */
function holder() {
  let release = () => {};
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  let arrivedNow = () => {};
  const arrived = new Promise<void>((resolve) => {
    arrivedNow = resolve;
  });
  return {
    arrived,
    release: () => release(),
    setup: (app: import('fastify').FastifyInstance) => {
      app.get('/slow', async () => {
        arrivedNow();
        await held;
        return 'done';
      });
      app.get('/fast', async () => 'fast');
    },
  };
}

/** One GET on `agent`'s connections (`false`: a connection of its own): status, Connection header, body. */
function get(agent: http.Agent | false, url: string) {
  return new Promise<{ status: number; connection: string | undefined; body: string }>((resolve, reject) => {
    const request = http.get(url, { agent }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        body += chunk;
      });
      response.on('end', () =>
        resolve({ status: response.statusCode ?? 0, connection: response.headers.connection, body }),
      );
    });
    request.on('error', reject);
  });
}

test('drain with closeListener – served as usual during the delay, then the port closes, keep-alive ends, idle connections close, and the drain ends with them', async (t) => {
  const hold = holder();
  const obs = await startObsApp({}, hold.setup);
  t.after(async () => {
    hold.release();
    await obs.close();
  });
  // One keep-alive connection that goes idle, and one that holds a request in flight.
  const idleAgent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const busyAgent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  t.after(() => {
    idleAgent.destroy();
    busyAgent.destroy();
  });
  assert.equal((await get(idleAgent, `${obs.url}/fast`)).connection, 'keep-alive');
  const [idleSocket] = Object.values(idleAgent.freeSockets).flat();
  assert.ok(idleSocket !== undefined, 'the idle connection is kept');
  const idleClosed = once(idleSocket, 'close');
  const slow = get(busyAgent, `${obs.url}/slow`);
  await hold.arrived;

  const drained = obs.app.obs.drain({ closeListener: true, delayMs: 1_500, timeoutMs: 20_000 });
  // The delay: a new connection is served as usual; readiness already fails.
  const probeAgent = new http.Agent({ keepAlive: true });
  t.after(() => probeAgent.destroy());
  const during = await get(probeAgent, `${obs.url}/actuator/health`);
  assert.equal(during.status, 503);
  assert.notEqual(during.connection, 'close', 'keep-alive is not ended during the delay');

  await until('the listener has closed', () =>
    obs.logger.lines.some((l) => l.message === 'obs drain: the listener has closed'),
  );
  await assert.rejects(get(false, `${obs.url}/fast`), { code: 'ECONNREFUSED' }, 'the port is closed');
  // The idle connection is closed by the drain, not by the client.
  await within(idleClosed, 'the idle keep-alive connection is closed', 15_000);

  hold.release();
  const answered = await slow;
  assert.equal(answered.body, 'done');
  assert.equal(answered.connection, 'close', 'the busy connection ends with its response');
  const result = await within(drained, 'the drain ends', 15_000);
  assert.equal(result.completed, true);
  assert.equal(result.dropped, 0);
  assert.ok(result.durationMs >= 1_500, `the delay counts: ${result.durationMs}ms`);
});

test('drain with closeListener – an HTTP/2 session gets a GOAWAY, its open stream finishes, and the drain ends', async (t) => {
  const hold = holder();
  const logger = capturingLogger();
  const app = Fastify({ http2: true });
  await app.register(obsPlugin, { env: {}, logger, registry: new Registry() });
  hold.setup(app as unknown as import('fastify').FastifyInstance);
  await app.listen({ port: 0, host: '127.0.0.1' });
  t.after(async () => {
    hold.release();
    await app.close();
  });
  const address = app.server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  const session = http2.connect(`http://127.0.0.1:${port}`);
  t.after(() => session.destroy());
  const goaway = once(session, 'goaway');
  const stream = session.request({ ':path': '/slow' });
  stream.setEncoding('utf8');
  let body = '';
  stream.on('data', (chunk: string) => {
    body += chunk;
  });
  const ended = once(stream, 'end');
  await hold.arrived;

  const drained = app.obs.drain({ closeListener: true, timeoutMs: 20_000 });
  await within(goaway, 'the session gets a GOAWAY', 15_000);
  hold.release();
  await within(ended, 'the open stream finishes', 15_000);
  assert.equal(body, 'done');
  const result = await within(drained, 'the drain ends', 15_000);
  assert.equal(result.completed, true);
});

test('drain with closeListener – out of time: the request still in flight is dropped, and app.close() cuts its connection so the close ends', async () => {
  const hold = holder();
  const obs = await startObsApp({}, hold.setup);
  const slow = get(false, `${obs.url}/slow`);
  const failed = slow.then(
    () => 'answered',
    (error: NodeJS.ErrnoException) => error.code ?? error.message,
  );
  await hold.arrived;
  const result = await obs.app.obs.drain({ closeListener: true, timeoutMs: 200 });
  assert.deepEqual(
    { completed: result.completed, dropped: result.dropped },
    { completed: false, dropped: 1 },
  );
  // The handler never answers: without the cut, the close would wait for its connection forever.
  await within(obs.close(), 'app.close() ends', 20_000);
  assert.equal(await failed, 'ECONNRESET', 'the held request was cut');
  hold.release();
});
