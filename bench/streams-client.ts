/**
 * A client of bench/run.ts's streams scenario: opens COUNT Server-Sent Events streams (`sse`) or
 * WebSockets (`ws`) to 127.0.0.1:PORT in batches of BATCH at a time, holds them until a line `close`
 * arrives on stdin (or MAX_SECONDS pass), then closes them and exits.
 *
 *   node bench/streams-client.ts sse|ws PORT COUNT [BATCH] [MAX_SECONDS]
 *
 * Prints one JSON line when every connection is open (or failed), and one when done: how many opened
 * and failed, the SSE events or WebSocket echoes received while held, and this process's own
 * event-loop delay p99 while held.
 */
import { request } from 'node:http';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import WebSocket from 'ws';

const [kind, portArg, countArg, batchArg, maxArg] = process.argv.slice(2);
if (kind !== 'sse' && kind !== 'ws') throw new Error('usage: streams-client.ts sse|ws PORT COUNT [BATCH]');
const port = Number(portArg);
const count = Number(countArg);
const batch = Number(batchArg ?? 250);
const maxSeconds = Number(maxArg ?? 300);

let received = 0;
/** Connections that opened and were closed by the server before `close`. */
let lost = 0;
let closing = false;
const closers: (() => void)[] = [];
const sockets: WebSocket[] = [];

function openSse(): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path: '/sse', agent: false }, (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        resolve(false);
        return;
      }
      res.on('data', () => {
        received++;
      });
      res.on('error', () => {});
      res.on('close', () => {
        if (!closing) lost++;
      });
      closers.push(() => req.destroy());
      resolve(true);
    });
    req.setTimeout(30_000, () => req.destroy());
    req.on('error', () => resolve(false));
    req.end();
  });
}

function openWs(): Promise<boolean> {
  return new Promise((resolve) => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/ws`, { handshakeTimeout: 30_000 });
    let wasOpen = false;
    ws.on('open', () => {
      wasOpen = true;
      closers.push(() => ws.terminate());
      sockets.push(ws);
      resolve(true);
    });
    ws.on('message', () => {
      received++;
    });
    ws.on('error', () => resolve(false));
    ws.on('close', () => {
      if (wasOpen && !closing) lost++;
      resolve(false);
    });
  });
}

const open = kind === 'sse' ? openSse : openWs;
const started = Date.now();
let opened = 0;
let failed = 0;
for (let done = 0; done < count; done += batch) {
  const results = await Promise.all(Array.from({ length: Math.min(batch, count - done) }, open));
  for (const ok of results) {
    if (ok) opened++;
    else failed++;
  }
}
const print = (o: object) => process.stdout.write(`${JSON.stringify({ kind, ...o })}\n`);
print({ phase: 'opened', opened, failed, lost, seconds: (Date.now() - started) / 1000 });

// While held: every WebSocket sends one message (spread over the first seconds), SSE streams get the
// server's ticks; the loop delay of this process says whether the client itself kept up.
const lag = monitorEventLoopDelay({ resolution: 10 });
lag.enable();
received = 0;
const pings = sockets.map((ws) =>
  setTimeout(() => {
    if (ws.readyState === WebSocket.OPEN) ws.send('ping');
  }, Math.random() * 5000),
);
const closeAll = () => {
  lag.disable();
  for (const t of pings) clearTimeout(t);
  const lagP99Ms = Math.max(0, lag.percentile(99) / 1e6 - 10);
  closing = true;
  const stillOpen = opened - lost;
  for (const c of closers) c();
  print({
    phase: 'done',
    opened,
    failed,
    lost,
    stillOpen,
    received,
    clientLagP99Ms: Math.round(lagP99Ms * 10) / 10,
  });
  setTimeout(() => process.exit(0), 200);
};
const timer = setTimeout(closeAll, maxSeconds * 1000);
createInterface({ input: process.stdin }).on('line', (line) => {
  if (line.trim() === 'close') {
    clearTimeout(timer);
    closeAll();
  }
});
