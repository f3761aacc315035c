/**
 * The problem lines of the configuration: one line each, naming the key, the value as written, its
 * source and what was expected, or the key that was probably meant.
 */

import type { ConfigProblem } from '../errors.ts';
import { type Feature, plannedFeatureOf } from '../features.ts';
import { nearestName } from '../nearest-name.ts';
import type { Fields } from './config-fields.ts';
import { ALL_PATHS } from './config-keys.ts';

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

/**
 * A key of a planned feature, set by a source: obs has no code that would read it, so it would
 * silently do nothing.
 */
export function plannedKey(key: string, value: unknown, source: string, feature: Feature): ConfigProblem {
  const reason = `the ${feature.key} feature is not built yet (planned); remove the setting`;
  const shown = value === undefined ? '' : ` = ${show(value)}`;
  return { key, value, source, expected: reason, message: `${key}${shown} (${source}): ${reason}` };
}

/** The keys under `parent` a source may set: all of `siblings` but those of planned features. */
export function settableKeys(parent: string, siblings: Fields): string[] {
  return Object.keys(siblings).filter((k) => plannedFeatureOf(`${parent}.${k}`) === undefined);
}

/** Says what an unknown key under `parent` probably meant; keys of planned features are never offered. */
export function suggestKey(parent: string, key: string, siblings: Fields): string {
  const settable = settableKeys(parent, siblings);
  const sibling = nearestName(key, settable);
  if (sibling !== undefined) return `did you mean ${parent}.${sibling}?`;
  // A known key in the wrong place: `obs.pii-masking-enabled` for `obs.logging.pii-masking-enabled`.
  const last = key.includes('.') ? key.slice(key.lastIndexOf('.') + 1) : key;
  const elsewhere = ALL_PATHS.filter(
    (e) => e.path.endsWith(`.${last}`) && plannedFeatureOf(e.path) === undefined,
  ).map((e) => e.path);
  if (elsewhere.length > 0 && elsewhere.length <= 3) return `did you mean ${elsewhere.join(' or ')}?`;
  return `valid keys under ${parent}: ${settable.join(', ')}`;
}
