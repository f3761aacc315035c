import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type IncomingMessage } from 'node:http';
import net from 'node:net';
import { test } from 'node:test';
import { MAX_PIPELINED_IN_FLIGHT, takeTurns } from '../../src/echo/transport/pipelining.ts';
import { until } from '../helpers/runtime.ts';

// A client that leaves a connection of pipelined requests makes node end each request it parsed
// there with an error of its own; those errors are made without a stack trace (capturing one for
// each held the event loop 50 to 144 ms for 8 connections of 500 requests), and the process's own
// errors keep theirs. A node:http server with takeTurns, as the echo service has, over raw sockets.

const hasFrames = (error: Error) => /\n\s+at /.test(error.stack ?? '');

test("pipelining – a client that leaves with requests in flight and waiting: node's abort errors carry no trace, later errors do", async () => {
  const errors: Error[] = [];
  const started: IncomingMessage[] = [];
  // Never ends an answer: every request stays in flight, the rest wait their turn. The first
  // answer's bytes trickle out, so that the server learns of the client's leaving (a connection
  // paused for its waiting requests reads no end; a write to a client gone fails).
  const server = createServer(
    takeTurns((request, response) => {
      started.push(request);
      request.on('error', (error) => errors.push(error));
      response.writeHead(200, { 'content-type': 'text/plain' });
      const trickle = setInterval(() => response.write('x'), 10);
      response.on('close', () => clearInterval(trickle));
    }),
  );
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as net.AddressInfo;
  const limitBefore = Error.stackTraceLimit;
  try {
    const client = net.connect(port, '127.0.0.1');
    client.on('error', () => {});
    await once(client, 'connect');
    client.write('GET /p HTTP/1.1\r\nHost: a\r\n\r\n'.repeat(40));
    await until('as many requests in flight as the limit', () => started.length >= MAX_PIPELINED_IN_FLIGHT);
    assert.equal(started.length, MAX_PIPELINED_IN_FLIGHT);
    client.destroy();
    await until('an abort error for each request in flight', () => errors.length >= MAX_PIPELINED_IN_FLIGHT);
    assert.equal(errors.length, MAX_PIPELINED_IN_FLIGHT, 'each request in flight was aborted');
    for (const error of errors) {
      assert.equal(error.message, 'aborted');
      assert.equal((error as NodeJS.ErrnoException).code, 'ECONNRESET');
      assert.ok(!hasFrames(error), `no trace: ${error.stack}`);
    }
    // The limit is back: errors made afterwards have their frames.
    assert.equal(Error.stackTraceLimit, limitBefore);
    assert.ok(hasFrames(new Error('later')));
  } finally {
    server.closeAllConnections();
    server.close();
  }
});
