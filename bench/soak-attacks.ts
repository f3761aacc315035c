/**
 * The attacks of issue #30 as `npm run soak` runs them, one at a time in rotation over its normal
 * traffic. Each is bounded in count, size and time so that a server without the fixes still ends the
 * run (a 40-character path against the glob, not the 50 that stalls it for 30 s; 8 x 500 pipelined
 * requests, not 50 x 2,000; 8 downloads of 50 MiB, not 20 of 100 MB), and each notes what the server answered:
 * the soak reports it next to the `/health` probes taken meanwhile. Nothing here assumes a fix: a
 * refused pattern, a paged history or a 415 is noted like any other answer.
 *
 * Item 4 (`ECHO_HISTORY_MAX_BODY` at its maximum) is a setting of the server, not a request, and
 * against today's code it takes RSS to 2.8 GB: it is not in the soak (its own test covers it).
 */
import { request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { gzipSync } from 'node:zlib';

/** What an attack is given: where the server is, until when it may start new work, and notes. */
export interface AttackContext {
  readonly base: string;
  readonly port: number;
  /** Epoch ms: no new request after it (the one in flight finishes, bounded by its own timeout). */
  readonly deadlineMs: number;
  /** Counts one outcome (`POST /scenario 400 ECHO_ERR_…`, `GET /history 200`, …). */
  seen(outcome: string): void;
  /** Notes a figure of this run (`secrets shown by GET /history: 0 of 25`); the report shows the last run's. */
  note(text: string): void;
  /** Work that goes on after the attack's phase (held sockets); the soak ends it at the run's end. */
  background(work: Promise<void>): void;
  /** The run is over (or aborted): stop at once. */
  readonly signal: AbortSignal;
}

export interface Attack {
  /** Short name, as the report and the probe table show it. */
  readonly name: string;
  /** The item of issue #30 it reproduces. */
  readonly item: string;
  /** What it sends, in a line. */
  readonly what: string;
  run(ctx: AttackContext): Promise<void>;
}

// ---------------------------------------------------------------------------------------------------
// The scenario set: the attacks that replace it hold it, so that the normal traffic's own set changes
// do not swap their pattern out mid-attack; the normal set is put back when they are done.

/** The set the normal traffic's scenario changes post (a status chosen by the caller). */
export function normalSet(status: number): unknown[] {
  return [
    { name: 'soak', path: '/soak/scenario', responses: [{ status, body: 'scripted' }, { status: 201 }] },
  ];
}

/** Shared by the normal traffic and the attacks: whether an attack holds the set, and changes in flight. */
export const scenarioSet = { held: false, changesInFlight: 0 };

async function holdScenarios(ctx: AttackContext, work: () => Promise<void>): Promise<void> {
  scenarioSet.held = true;
  try {
    const until = Date.now() + 15_000;
    while (scenarioSet.changesInFlight > 0 && Date.now() < until) await sleep(20);
    await work();
  } finally {
    try {
      const status = await postScenarios(ctx, JSON.stringify(normalSet(200)));
      if (status.status !== 200) ctx.seen(`normal set put back: ${status.label}`);
    } catch (error) {
      ctx.seen(`normal set put back: ${errorText(error)}`);
    }
    scenarioSet.held = false;
  }
}

// ---------------------------------------------------------------------------------------------------
// Requests

const REQUEST_TIMEOUT_MS = 60_000;

/** A status and, for a JSON error body, its code: `400 ECHO_ERR_INVALID_SCENARIOS`. */
async function label(res: Response): Promise<{ status: number; label: string; text: string }> {
  const text = await res.text();
  let code = '';
  try {
    code = (JSON.parse(text) as { error?: { code?: string } }).error?.code ?? '';
  } catch {
    // not JSON: the status says enough
  }
  return { status: res.status, label: `${res.status}${code ? ` ${code}` : ''}`, text };
}

function signalFor(ctx: AttackContext): AbortSignal {
  return AbortSignal.any([ctx.signal, AbortSignal.timeout(REQUEST_TIMEOUT_MS)]);
}

async function postScenarios(
  ctx: AttackContext,
  body: string | Uint8Array,
  headers: Record<string, string> = {},
): Promise<{ status: number; label: string; text: string }> {
  const res = await fetch(`${ctx.base}/scenario`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body,
    signal: signalFor(ctx),
  });
  return label(res);
}

/** `POST /scenario`, noting `<what> <status>`, or `<what> failed: <error>` (a reset, a timeout). */
async function postNoted(
  ctx: AttackContext,
  what: string,
  body: string | Uint8Array,
  headers: Record<string, string> = {},
): Promise<void> {
  try {
    ctx.seen(`${what} ${(await postScenarios(ctx, body, headers)).label}`);
  } catch (error) {
    ctx.seen(`${what} failed: ${errorText(error)}`);
  }
}

/** An error in a few words: fetch's `fetch failed` says nothing without its cause's code. */
function errorText(error: unknown): string {
  const e = error as Error & { cause?: { code?: string; message?: string } };
  const cause = e.cause?.code ?? e.cause?.message;
  return cause === undefined ? e.message : `${e.message} (${cause})`;
}

/** One request, timed: notes `<what> <status>` and returns its time in ms (a failure notes its error). */
async function timed(
  ctx: AttackContext,
  what: string,
  path: string,
  init: RequestInit = {},
): Promise<number> {
  const started = performance.now();
  try {
    const res = await fetch(ctx.base + path, { ...init, signal: signalFor(ctx) });
    const { label: l } = await label(res);
    ctx.seen(`${what} ${l}`);
  } catch (error) {
    ctx.seen(`${what} failed: ${errorText(error)}`);
  }
  return performance.now() - started;
}

/** Runs `step` until the deadline, at most `times` times; notes the slowest. */
async function repeat(
  ctx: AttackContext,
  times: number,
  what: string,
  step: () => Promise<number>,
): Promise<void> {
  let slowest = 0;
  let n = 0;
  for (; n < times && Date.now() < ctx.deadlineMs && !ctx.signal.aborted; n++)
    slowest = Math.max(slowest, await step());
  if (n > 0) ctx.note(`${what}: ${n} sent, the slowest answered in ${(slowest / 1000).toFixed(2)} s`);
}

// ---------------------------------------------------------------------------------------------------
// 1. Glob backtracking

/** The issue's pattern; 40 `a`s take about 2 s each against today's matcher (45: 5.6 s, 50: 30 s+). */
const GLOB = '/**a**a**a**a**a**a**a**a**b';
const GLOB_PATH = `/${'a'.repeat(40)}`;

const glob: Attack = {
  name: 'glob pathPattern',
  item: '1',
  what: `\`POST /scenario\` with \`pathPattern: "${GLOB}"\`, then up to 4 \`GET\` of a ${GLOB_PATH.length}-character path of \`a\`s, one at a time`,
  run: (ctx) =>
    holdScenarios(ctx, async () => {
      const set = [{ name: 'soak-glob', pathPattern: GLOB, responses: [{ status: 200, body: 'glob' }] }];
      await postNoted(ctx, 'POST /scenario', JSON.stringify(set));
      await repeat(ctx, 4, `GET ${GLOB_PATH.length}-character path`, () =>
        timed(ctx, `GET /a×${GLOB_PATH.length - 1}`, GLOB_PATH),
      );
    }),
};

// ---------------------------------------------------------------------------------------------------
// 2. Alternation under repetition

const REGEX_PATH = `/${'a'.repeat(24)}!`;
const REGEX_HEADER = `${'a'.repeat(34)}!`;

const regex: Attack = {
  name: 'regex alternation',
  item: '2',
  what: `\`pathPattern: "re:/(a|a)*$"\` then \`GET ${REGEX_PATH}\`; a \`headers\` condition \`re:(a|aa)+$\` then a ${REGEX_HEADER.length}-character header that misses it; up to 3 requests each`,
  run: (ctx) =>
    holdScenarios(ctx, async () => {
      const bySet = [{ name: 'soak-re-path', pathPattern: 're:/(a|a)*$', responses: [{ status: 200 }] }];
      await postNoted(ctx, 'POST /scenario (path regex)', JSON.stringify(bySet));
      await repeat(ctx, 3, 'GET of the path', () => timed(ctx, 'GET /a×24!', REGEX_PATH));
      const byHeader = [
        {
          name: 'soak-re-header',
          path: '/soak/re',
          headers: { 'x-soak': 're:(a|aa)+$' },
          responses: [{ status: 200 }],
        },
      ];
      await postNoted(ctx, 'POST /scenario (header regex)', JSON.stringify(byHeader));
      await repeat(ctx, 3, 'GET with the header', () =>
        timed(ctx, 'GET /soak/re', '/soak/re', { headers: { 'x-soak': REGEX_HEADER } }),
      );
    }),
};

// ---------------------------------------------------------------------------------------------------
// 3. History of large JSON bodies

const HISTORY_BODY = JSON.stringify({ soak: 'history', data: 'x'.repeat(64 * 1024 - 32) });

/** Reads a response to its end without keeping it: its status and size. */
function drain(
  ctx: AttackContext,
  path: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; bytes: number }> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port: ctx.port, path, headers, agent: false, timeout: REQUEST_TIMEOUT_MS },
      (res) => {
        let bytes = 0;
        res.on('data', (chunk: Buffer) => {
          bytes += chunk.length;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, bytes }));
        res.on('error', reject);
      },
    );
    const abort = () => req.destroy(new Error('aborted'));
    ctx.signal.addEventListener('abort', abort, { once: true });
    req.on('close', () => ctx.signal.removeEventListener('abort', abort));
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end();
  });
}

const history: Attack = {
  name: 'history of large bodies',
  item: '3',
  what: '100 `POST` of 64 KiB JSON bodies (4 at a time), then 4 concurrent `GET /history` read to the end; up to 2 rounds',
  run: async (ctx) => {
    for (let round = 0; round < 2 && Date.now() < ctx.deadlineMs && !ctx.signal.aborted; round++) {
      let next = 0;
      const poster = async () => {
        while (next < 100 && !ctx.signal.aborted) {
          next++;
          const res = await fetch(`${ctx.base}/soak/history-big`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: HISTORY_BODY,
            signal: signalFor(ctx),
          });
          await res.arrayBuffer();
          ctx.seen(`POST 64 KiB ${res.status}`);
        }
      };
      await Promise.all([poster(), poster(), poster(), poster()]);
      const started = performance.now();
      const reads = await Promise.allSettled([1, 2, 3, 4].map(() => drain(ctx, '/history')));
      const took = performance.now() - started;
      let bytes = 0;
      for (const r of reads) {
        if (r.status === 'fulfilled') {
          ctx.seen(`GET /history ${r.value.status}`);
          bytes = Math.max(bytes, r.value.bytes);
        } else ctx.seen(`GET /history failed: ${errorText(r.reason)}`);
      }
      ctx.note(
        `round ${round + 1}: 4 reads of up to ${(bytes / 1e6).toFixed(1)} MB took ${(took / 1000).toFixed(2)} s together`,
      );
    }
  },
};

// ---------------------------------------------------------------------------------------------------
// 5. Pipelined requests never read

const PIPE_CONNECTIONS = 8;
const PIPE_REQUESTS = 500;
const PIPE_HOLD_MS = 5_000;

const pipelined: Attack = {
  name: 'pipelined, never read',
  item: '5',
  what: `${PIPE_CONNECTIONS} connections each write ${PIPE_REQUESTS} pipelined \`GET\` with \`X-Echo-Response-Size: 16384\` and never read; destroyed after ${PIPE_HOLD_MS / 1000} s`,
  run: async (ctx) => {
    const one = `GET /soak/pipelined HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Echo-Response-Size: 16384\r\n\r\n`;
    const sockets: Socket[] = [];
    let closedByServer = 0;
    for (let i = 0; i < PIPE_CONNECTIONS; i++) {
      const socket = connect(ctx.port, '127.0.0.1');
      socket.pause(); // never read: the answers pile up in the kernel, then in the server
      socket.on('error', () => {});
      socket.on('end', () => closedByServer++);
      socket.write(one.repeat(PIPE_REQUESTS));
      sockets.push(socket);
    }
    await sleep(PIPE_HOLD_MS, undefined, { signal: ctx.signal }).catch(() => {});
    for (const socket of sockets) {
      socket.destroy();
      ctx.seen('connection written, never read, destroyed');
    }
    for (let i = 0; i < closedByServer; i++) ctx.seen('connection the server ended first');
  },
};

// ---------------------------------------------------------------------------------------------------
// 6. Large generated bodies

/** The issue's 20 x 100 MB held a probe 6.1 s; 8 x 50 MiB (400 MiB a round) keeps a round near a second. */
const DOWNLOADS = 8;
const DOWNLOAD_BYTES = 50 * 1024 * 1024;

const downloads: Attack = {
  name: 'large generated bodies',
  item: '6',
  what: `${DOWNLOADS} concurrent \`X-Echo-Response-Size: ${DOWNLOAD_BYTES}\` (${DOWNLOAD_BYTES / 2 ** 20} MiB) downloads read at full speed`,
  run: async (ctx) => {
    for (let round = 0; round < 1 && Date.now() < ctx.deadlineMs && !ctx.signal.aborted; round++) {
      const started = performance.now();
      const results = await Promise.allSettled(
        Array.from({ length: DOWNLOADS }, () =>
          drain(ctx, '/soak/download', { 'x-echo-response-size': String(DOWNLOAD_BYTES) }),
        ),
      );
      const took = (performance.now() - started) / 1000;
      let bytes = 0;
      for (const r of results) {
        if (r.status === 'rejected') ctx.seen(`download failed: ${errorText(r.reason)}`);
        else {
          bytes += r.value.bytes;
          ctx.seen(
            `download ${r.value.status}${r.value.bytes === DOWNLOAD_BYTES ? '' : ` with ${r.value.bytes} bytes`}`,
          );
        }
      }
      ctx.note(
        `${(bytes / 2 ** 20).toFixed(0)} MiB in ${took.toFixed(2)} s (${(bytes / 2 ** 20 / took).toFixed(0)} MiB/s)`,
      );
    }
  },
};

// ---------------------------------------------------------------------------------------------------
// 7. Stalled request bodies

const STALLS = 20;
/** How long a stalled connection is held at most, from its opening: past the soak's timeout + 30 s. */
const STALL_HOLD_MS = 40_000;

const stalled: Attack = {
  name: 'stalled bodies',
  item: '7',
  what: `${STALLS} \`POST\` with \`Content-Length: 100000\`, 1,000 bytes of it, then silence; each held up to ${STALL_HOLD_MS / 1000} s (past the phase) to see when the server cuts it`,
  run: async (ctx) => {
    const cutAfterMs: number[] = [];
    const answers = new Map<string, number>();
    const held = Array.from({ length: STALLS }, () => {
      const opened = performance.now();
      const socket = connect(ctx.port, '127.0.0.1');
      socket.setEncoding('latin1');
      let head = '';
      socket.on('data', (chunk: string) => {
        if (head.length < 64) head += chunk;
      });
      socket.on('error', () => {});
      socket.write(
        `POST /soak/stalled HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\nContent-Length: 100000\r\n\r\n${'s'.repeat(1000)}`,
      );
      return new Promise<void>((resolve) => {
        const timer = setTimeout(() => socket.destroy(), STALL_HOLD_MS);
        const abort = () => socket.destroy();
        ctx.signal.addEventListener('abort', abort, { once: true });
        socket.on('close', () => {
          clearTimeout(timer);
          ctx.signal.removeEventListener('abort', abort);
          const ms = performance.now() - opened;
          if (ms < STALL_HOLD_MS - 50 && !ctx.signal.aborted) {
            cutAfterMs.push(ms);
            const status = /^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 'no answer';
            answers.set(status, (answers.get(status) ?? 0) + 1);
          }
          resolve();
        });
      });
    });
    ctx.background(
      Promise.all(held).then(() => {
        const sorted = cutAfterMs.sort((a, b) => a - b);
        ctx.note(
          sorted.length === 0
            ? `none of ${STALLS} was cut by the server within ${ctx.signal.aborted ? 'the rest of the run' : `${STALL_HOLD_MS / 1000} s`}`
            : `${sorted.length} of ${STALLS} cut by the server${ctx.signal.aborted ? ' before the run ended' : ''}, after ${(sorted[0]! / 1000).toFixed(1)} to ${(sorted.at(-1)! / 1000).toFixed(1)} s (answers: ${[...answers].map(([s, n]) => `${s} ×${n}`).join(', ')})`,
        );
      }),
    );
    for (let i = 0; i < STALLS; i++) ctx.seen('connection stalled');
    // The phase lasts its time with the connections open (the probes meanwhile are this attack's).
    const wait = ctx.deadlineMs - Date.now();
    if (wait > 0) await sleep(wait, undefined, { signal: ctx.signal }).catch(() => {});
  },
};

// ---------------------------------------------------------------------------------------------------
// 8. Bad control inputs

/** 12 scenarios of a 1 MiB body: 12 MiB, under the set's 16 MiB ceiling, over the default 10 MB body. */
function oversizedSet(): string {
  const body = 'b'.repeat(1_048_576);
  return JSON.stringify(
    Array.from({ length: 12 }, (_, i) => ({
      name: `soak-big-${i}`,
      path: `/soak/big/${i}`,
      responses: [{ status: 200, body }],
    })),
  );
}

/** 1,000 `re:` scenarios (the set's ceiling), none matching the normal traffic's paths. */
function regexSet(): string {
  return JSON.stringify(
    Array.from({ length: 1000 }, (_, i) => ({
      name: `soak-re-${i}`,
      pathPattern: `re:/soak-re-${i}/[a-z0-9]+`,
      responses: [{ status: 200 }],
    })),
  );
}

const badInputs: Attack = {
  name: 'bad control inputs',
  item: '8',
  what: 'a scenario set and an echo body with a `__proto__` key, a gzip `Content-Encoding` set, a 12 MiB set, then 1,000 `re:` scenarios held for the rest of the phase',
  run: (ctx) =>
    holdScenarios(ctx, async () => {
      const proto =
        '[{"name":"soak-proto","path":"/soak/proto","responses":[{"status":200}],"__proto__":{"polluted":true}}]';
      await postNoted(ctx, 'POST /scenario with __proto__', proto);
      await timed(ctx, 'POST echo JSON with __proto__', '/soak/proto', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"__proto__":{"polluted":true},"a":1}',
      });
      const gzipped = gzipSync(JSON.stringify(normalSet(200)));
      await postNoted(ctx, 'POST /scenario gzip', gzipped, { 'content-encoding': 'gzip' });
      // A server that refuses it early may close the connection while the body is still being sent.
      await postNoted(ctx, 'POST /scenario of 12 MiB', oversizedSet());
      await postNoted(ctx, 'POST /scenario of 1,000 re:', regexSet());
      // The normal traffic runs against the 1,000 patterns meanwhile (issue #30, item 8: matching is
      // linear in the set).
      const wait = ctx.deadlineMs - Date.now();
      if (wait > 0) await sleep(wait, undefined, { signal: ctx.signal }).catch(() => {});
    }),
};

// ---------------------------------------------------------------------------------------------------
// 9. Secrets in history, and their replay

const secrets: Attack = {
  name: 'secrets in history',
  item: '9',
  what: 'a form body with `password=` and `token=`, a query with `access_token=` and `api_key=`, a text body with `Authorization: Bearer`, a JSON body with an email, a Bearer header; then `GET /history` and a replay of each; up to 5 rounds',
  run: async (ctx) => {
    let sent = 0;
    let shown = 0;
    for (let round = 0; round < 5 && Date.now() < ctx.deadlineMs && !ctx.signal.aborted; round++) {
      const r = `${Date.now().toString(36)}${round}`;
      const values = [
        `pw-${r}`,
        `tk-${r}`,
        `at-${r}`,
        `ak-${r}`,
        `bt-${r}`,
        `soak-${r}@example.com`,
        `hd-${r}`,
      ];
      const post = (path: string, type: string, body: string) =>
        timed(ctx, `POST ${path}`, path, { method: 'POST', headers: { 'content-type': type }, body });
      await post(
        '/soak/secret/form',
        'application/x-www-form-urlencoded',
        `user=soak&password=pw-${r}&token=tk-${r}`,
      );
      await timed(ctx, 'GET /soak/secret/query', `/soak/secret/query?access_token=at-${r}&api_key=ak-${r}`);
      await post('/soak/secret/text', 'text/plain', `Authorization: Bearer bt-${r}\n`);
      await post(
        '/soak/secret/json',
        'application/json',
        JSON.stringify({ email: `soak-${r}@example.com`, card: '4111 1111 1111 1111' }),
      );
      await timed(ctx, 'GET /soak/secret/header', '/soak/secret/header', {
        headers: { authorization: `Bearer hd-${r}` },
      });
      const res = await fetch(`${ctx.base}/history`, { signal: signalFor(ctx) });
      const text = await res.text();
      ctx.seen(`GET /history ${res.status}`);
      sent += values.length;
      shown += values.filter((v) => text.includes(v)).length;
      for (const id of historyIds(text, r)) {
        const replay = await fetch(`${ctx.base}/replay`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ id }),
          signal: signalFor(ctx),
        });
        ctx.seen(`POST /replay ${(await label(replay)).label}`);
      }
    }
    if (sent > 0)
      ctx.note(
        `secret values \`GET /history\` showed as sent: ${shown} of ${sent} (the history may have moved on before the read)`,
      );
  },
};

/** The ids of the history entries of this round's secret requests (history as an array, or a page). */
function historyIds(text: string, round: string): string[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return [];
  }
  const entries = entriesOf(parsed);
  return entries
    .filter((e) => typeof e.path === 'string' && e.path.startsWith('/soak/secret/'))
    .filter((e) => JSON.stringify(e).includes(round) || e.path === '/soak/secret/header')
    .map((e) => e.id)
    .filter((id): id is string => typeof id === 'string')
    .slice(-5);
}

/** History entries from `GET /history`'s answer: an array, or the first array an object holds (a page). */
export function entriesOf(
  parsed: unknown,
): { id?: unknown; path?: unknown; method?: unknown; status?: unknown }[] {
  if (Array.isArray(parsed)) return parsed as { id?: unknown }[];
  if (typeof parsed === 'object' && parsed !== null)
    for (const value of Object.values(parsed)) if (Array.isArray(value)) return value as { id?: unknown }[];
  return [];
}

/** In the order they run in each rotation. */
export const ATTACKS: readonly Attack[] = [
  glob,
  regex,
  history,
  pipelined,
  downloads,
  stalled,
  badInputs,
  secrets,
];
