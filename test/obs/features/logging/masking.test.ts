import assert from 'node:assert/strict';
import { test } from 'node:test';
import { maskLogLine, maskText, mayHoldSecret } from '../../../../src/obs/features/logging/masking.ts';

/** The checks `mayHoldSecret` stands in front of, as they were before it: any of them true means a line is parsed. */
const MAYBE_SECRET =
  /@|bearer|eyJ|pwd|pass(?:word|wd)|secret|token|api[-_.]?key|private[-_.]?key|authori[sz]ation|cookie|session[-_.]?id|\d{3}-\d{2}-\d{4}/i;
const DIGIT_RUN = /\d(?:[ -]?\d){12,18}/;
const exact = (text: string) =>
  MAYBE_SECRET.test(text) || DIGIT_RUN.test(text) || text.includes('"type":"Buffer"');

/** A small seeded generator (mulberry32), so a failure replays. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const FRAGMENTS = [
  'Bearer ',
  'bEaReR',
  'eyJ',
  'EYJ',
  'pwd',
  'PassWord',
  'passwd',
  'pass',
  'Secret',
  'TOKEN',
  'api-key',
  'API_KEY',
  'apikey',
  'api.key',
  'private_key',
  'PrivateKey',
  'authorization',
  'AUTHORISATION',
  'cookie',
  'session-id',
  'SessionId',
  '"type":"Buffer"',
  '@',
  '123-45-6789',
  '4111 1111 1111 1111',
  '5500-0000-0000-0004',
  '378282246310005',
  '12-34',
  '2026-11-24T19:37:12.552Z',
  '87b9832f-80ee-405b-9411-5c8f5d41e2b5',
];
const ALPHABET = 'abcdeiklnoprstwyzABEJKPTY0123456789 -_.:"{}/?=@\\';

test('mayHoldSecret is true for every text the exact checks would parse (seeded random texts)', () => {
  const random = seeded(20261124);
  let positives = 0;
  for (let n = 0; n < 20_000; n++) {
    let text = '';
    const parts = 1 + Math.floor(random() * 8);
    for (let p = 0; p < parts; p++) {
      if (random() < 0.3) text += FRAGMENTS[Math.floor(random() * FRAGMENTS.length)];
      else {
        const len = Math.floor(random() * 12);
        for (let k = 0; k < len; k++) text += ALPHABET[Math.floor(random() * ALPHABET.length)];
      }
    }
    if (exact(text)) {
      positives++;
      assert.equal(mayHoldSecret(text), true, `missed: ${JSON.stringify(text)}`);
    }
  }
  // The generator must reach the interesting cases, or the loop above proves nothing.
  assert.ok(positives > 5_000, `only ${positives} texts with something to mask`);
});

test('mayHoldSecret is false for an ordinary access line, so masking it costs one scan', () => {
  const line =
    '{"level":30,"time":"2026-11-24T19:37:12.552Z","pid":9303,"hostname":"vm","reqId":"87b9832f-80ee-405b-9411-5c8f5d41e2b5","timeout_remaining_ms":1943,"retry_depth":0,"msg":"127.0.0.1 GET /bench/path?x=1 - 200 0.123ms"}\n';
  assert.equal(mayHoldSecret(line), false);
  assert.equal(maskLogLine(line), line);
  assert.equal(mayHoldSecret('{"msg":"GET /login?Password=x"}'), true);
});

test('masking still masks what the scan lets through, in any case and with separators', () => {
  const line = `${JSON.stringify({ msg: 'GET /x?API_KEY=abc123 from jane@example.com card 4111-1111-1111-1111 ssn 123-45-6789' })}\n`;
  const masked = maskLogLine(line);
  for (const secret of ['abc123', 'jane@example.com', '4111-1111-1111-1111', '123-45-6789']) {
    assert.ok(!masked.includes(secret), `${secret} left in ${masked}`);
  }
  assert.equal(maskText('token: BEARER abc.def'), 'token: [MASKED]');
  assert.equal(maskText('nothing here 12-34'), 'nothing here 12-34');
});
