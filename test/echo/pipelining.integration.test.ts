import assert from 'node:assert/strict';
import { once } from 'node:events';
import net from 'node:net';
import { after, before, test } from 'node:test';
import { assertLive, type EchoProcess, probeLiveness, startEchoProcess } from '../helpers/liveness.ts';
import { quietFor } from '../helpers/runtime.ts';

// Pipelined HTTP/1.1 requests whose answers are never read (issue #30, item 5): the server stops
// reading such a connection and starts none of the requests waiting behind the unread answers;
// a client that leaves leaves no work behind. Against `npm start` in a child process, over raw
// sockets.

const MiB = 1024 * 1024;
let echo: EchoProcess;
before(async () => {
  echo = await startEchoProcess();
});
after(() => echo.stop());

/** Requests answered so far on echo paths (`echo_requests_total` but /health and /metrics). */
async function echoed(): Promise<number> {
  const text = await (await fetch(`${echo.url}/metrics`)).text();
  let total = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith('echo_requests_total{') || line.includes('path="/health"')) continue;
    if (line.includes('path="/metrics"')) continue;
    total += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return total;
}

function connect(port: number): Promise<net.Socket> {
  const socket = net.connect(port, '127.0.0.1');
  socket.on('error', () => {});
  // Never read: nothing is taken from the kernel's receive buffer.
  socket.pause();
  return once(socket, 'connect').then(() => socket);
}

const GET_16K = 'GET /pipelined HTTP/1.1\r\nHost: a\r\nX-Echo-Response-Size: 16384\r\n\r\n';

test('pipelining – 20 connections × 2,000 unread requests: /health stays live, memory stays bounded, no work is left once they leave', async () => {
  // Probed from this process all along, one GET /health at a time on a new connection.
  await assertLive('while 40,000 unread requests came in', async () => {
    const rssBefore = echo.rssBytes();
    const echoedBefore = await echoed();
    const prober = probeLiveness(echo.port);
    const sockets = await Promise.all(Array.from({ length: 20 }, () => connect(echo.port)));
    for (const socket of sockets) socket.write(GET_16K.repeat(2_000));
    let rssPeak = rssBefore;
    // The attack is 3 s of clients that read nothing; the server's memory is sampled along the way.
    for (let i = 0; i < 15; i++) {
      await quietFor(200, 'the clients read nothing (the RSS sampled every 200 ms for 3 s)');
      rssPeak = Math.max(rssPeak, echo.rssBytes());
    }
    for (const socket of sockets) socket.destroy();
    // What was started before the clients left ends as they leave; nothing after that. Neither has an
    // event of its own to wait on (a server that went on working would show only as a later count).
    await quietFor(1_000, 'the clients have left: what they started ends');
    const settled = await echoed();
    await quietFor(2_000, 'no request may be worked on once the clients have left');
    const later = await echoed();
    rssPeak = Math.max(rssPeak, echo.rssBytes());
    const live = await prober.stop();

    const grownMiB = (rssPeak - rssBefore) / MiB;
    // Unbounded, 40,000 requests start at once: about 900 MiB here, and tens of thousands answered
    // into closed connections for seconds after the clients left.
    assert.ok(grownMiB < 150, `RSS grew by ${grownMiB.toFixed(0)} MiB`);
    assert.ok(settled - echoedBefore < 2_000, `${settled - echoedBefore} requests worked on of 40,000 sent`);
    assert.equal(later, settled, 'requests were still being worked on after the clients left');
    return live;
  });
});

/** A request whose answer (16 KiB) says which it was, in `X-Seq`. */
function request(seq: number): string {
  return `GET /pipelined HTTP/1.1\r\nHost: a\r\nX-Echo-Response-Size: 16384\r\nX-Echo-Set-Header-X-Seq: ${seq}\r\n\r\n`;
}

/** Reads HTTP/1.1 responses with a Content-Length off `socket`; resolves with their X-Seq headers. */
function readResponses(socket: net.Socket, count: number): Promise<number[]> {
  const seqs: number[] = [];
  let buffered: Buffer = Buffer.alloc(0);
  let bodyLeft = 0;
  return new Promise((resolve, reject) => {
    socket.on('close', () => reject(new Error(`connection closed after ${seqs.length} responses`)));
    socket.on('data', (chunk: Buffer) => {
      buffered = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk]);
      for (;;) {
        if (bodyLeft > 0) {
          const n = Math.min(bodyLeft, buffered.length);
          bodyLeft -= n;
          buffered = buffered.subarray(n);
          if (bodyLeft > 0) return;
        }
        const end = buffered.indexOf('\r\n\r\n');
        if (end === -1) return;
        const head = buffered.toString('latin1', 0, end);
        buffered = buffered.subarray(end + 4);
        assert.match(head, /^HTTP\/1\.1 200 /);
        seqs.push(Number(/\r\nx-seq: (\d+)/i.exec(head)?.[1]));
        bodyLeft = Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1] ?? 0);
        if (seqs.length === count) return resolve(seqs);
      }
    });
    socket.resume();
  });
}

test('pipelining – a client that reads late gets every answer in order; one that leaves without reading leaves its waiting requests unworked', async () => {
  // 250 pipelined requests on each of 5 connections, read a second later.
  const depth = 250;
  const readers = await Promise.all(Array.from({ length: 5 }, () => connect(echo.port)));
  let batch = '';
  for (let i = 0; i < depth; i++) batch += request(i);
  for (const socket of readers) socket.write(batch);
  await quietFor(1_000, 'the clients read late: nothing is read for a second');
  const expected = Array.from({ length: depth }, (_, i) => i);
  for (const seqs of await Promise.all(readers.map((socket) => readResponses(socket, depth)))) {
    assert.deepEqual(seqs, expected);
  }
  for (const socket of readers) socket.destroy();

  // 2,000 on one connection, whose client leaves a second later without reading any.
  const before = await echoed();
  const leaver = await connect(echo.port);
  batch = '';
  for (let i = 0; i < 2_000; i++) batch += request(i);
  leaver.write(batch);
  await quietFor(1_000, 'the client reads nothing for a second, then leaves');
  leaver.destroy();
  await quietFor(1_500, 'no waiting request may be worked on once the client has left');
  const worked = (await echoed()) - before;
  // Those answered into the kernel's buffers before the client stopped reading (about 150 of
  // 16 KiB), and the few being answered when it left; unbounded, all 2,000.
  assert.ok(worked < 600, `${worked} of the 2,000 requests were worked on`);
});
