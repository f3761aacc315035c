/** A source of randomness in `[0, 1)`, injected so that chaos and jitter are testable. */
export type RandomSource = () => number;

/**
 * mulberry32: a small, fast, seedable generator. Not cryptographic; it only decides which
 * requests fail and how long they wait, reproducibly for a given `ECHO_RANDOM_SEED`.
 */
export function seededRandom(seed: number): RandomSource {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** One of `items`, drawn from `random`. */
export function pick<T>(items: readonly T[], random: RandomSource): T {
  return items[Math.min(items.length - 1, Math.floor(random() * items.length))] as T;
}
