/**
 * The problem lines of the configuration: one line each, naming the key, the value as written, its
 * source and what was expected, or the key that was probably meant.
 */
import type { Fields } from './config-fields.ts';
import { ALL_PATHS } from './config-keys.ts';
import type { ConfigProblem } from './errors.ts';
import { nearestName } from './nearest-name.ts';

/** A value as a problem line shows it: JSON, cut at 80 characters. */
export function show(value: unknown): string {
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    text = String(value);
  }
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

/** A value that does not fit its key. */
export function problem(key: string, value: unknown, source: string, expected: string): ConfigProblem {
  const shown = value === undefined ? '' : ` = ${show(value)}`;
  return { key, value, source, expected, message: `${key}${shown} (${source}): expected ${expected}` };
}

/** A key the schema does not have, with a hint of what was meant. */
export function unknownKey(key: string, value: unknown, source: string, hint: string): ConfigProblem {
  return {
    key,
    value,
    source,
    expected: hint,
    message: `${key} = ${show(value)} (${source}): unknown key; ${hint}`,
  };
}

/** Says what an unknown key under `parent` probably meant. */
export function suggestKey(parent: string, key: string, siblings: Fields): string {
  const sibling = nearestName(key, Object.keys(siblings));
  if (sibling !== undefined) return `did you mean ${parent}.${sibling}?`;
  // A known key in the wrong place: `obs.skip-stale-records` for `obs.kafka.skip-stale-records`.
  const last = key.includes('.') ? key.slice(key.lastIndexOf('.') + 1) : key;
  const elsewhere = ALL_PATHS.filter((e) => e.path.endsWith(`.${last}`)).map((e) => e.path);
  if (elsewhere.length > 0 && elsewhere.length <= 3) return `did you mean ${elsewhere.join(' or ')}?`;
  return `valid keys under ${parent}: ${Object.keys(siblings).join(', ')}`;
}
