import type { IncomingHttpHeaders } from 'node:http';

/** A source of randomness in `[0, 1)`, injected so that chaos and jitter are testable. */
export type RandomSource = () => number;

/** Fills a buffer with random bytes and returns it (`crypto.randomFillSync`'s shape). */
export type ByteSource = (target: Buffer) => Buffer;

const TWO_TO_32 = 4294967296;
const SEED = /^\d{1,10}$/;

/** mulberry32's step: the next 32-bit output of the state `state`. */
function mulberry32(state: number): number {
  let t = state;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return (t ^ (t >>> 14)) >>> 0;
}
const INCREMENT = 0x6d2b79f5;

/**
 * mulberry32: a small, fast, seedable generator. Not cryptographic; it only decides which
 * requests fail and how long they wait, reproducibly for a given seed (`X-Echo-Seed`, `ECHO_SEED`).
 */
export function seededRandom(seed: number): RandomSource {
  let state = seed >>> 0;
  return () => {
    state = (state + INCREMENT) >>> 0;
    return mulberry32(state) / TWO_TO_32;
  };
}

/** A 32-bit seed drawn from `random`: how a seeded source hands out the seeds of its children. */
export function drawSeed(random: RandomSource): number {
  return Math.floor(random() * TWO_TO_32) >>> 0;
}

/**
 * The bytes of mulberry32 from `seed`, little-endian, as one stream: the bytes depend on the seed
 * only, not on how the stream is cut into buffers. About as fast as `randomFillSync` for the
 * generated bodies of seeded requests.
 */
export function seededBytes(seed: number): ByteSource {
  let state = seed >>> 0;
  let carry = 0;
  let carryBytes = 0;
  return (target) => {
    const n = target.length;
    let i = 0;
    while (carryBytes > 0 && i < n) {
      target[i++] = carry & 0xff;
      carry >>>= 8;
      carryBytes--;
    }
    for (; i + 4 <= n; i += 4) {
      state = (state + INCREMENT) >>> 0;
      const word = mulberry32(state);
      target[i] = word & 0xff;
      target[i + 1] = (word >>> 8) & 0xff;
      target[i + 2] = (word >>> 16) & 0xff;
      target[i + 3] = word >>> 24;
    }
    if (i < n) {
      state = (state + INCREMENT) >>> 0;
      carry = mulberry32(state);
      carryBytes = 4;
      while (i < n) {
        target[i++] = carry & 0xff;
        carry >>>= 8;
        carryBytes--;
      }
    }
    return target;
  };
}

/** A seed as written in `X-Echo-Seed`: an integer 0-4294967295, else `undefined`. */
export function parseSeed(text: string): number | undefined {
  const t = text.trim();
  const seed = SEED.test(t) ? Number(t) : -1;
  return seed >= 0 && seed <= 0xffffffff ? seed : undefined;
}

/**
 * The request's `X-Echo-Seed`, read before the other controls so that all of them draw from the
 * source it seeds. `undefined` when absent or malformed (parsing reports the malformed one).
 */
export function requestSeed(headers: IncomingHttpHeaders): number | undefined {
  const raw = headers['x-echo-seed'];
  return raw === undefined || Array.isArray(raw) ? undefined : parseSeed(raw);
}

/** One of `items`, drawn from `random`. */
export function pick<T>(items: readonly T[], random: RandomSource): T {
  return items[Math.min(items.length - 1, Math.floor(random() * items.length))] as T;
}
