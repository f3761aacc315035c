/**
 * Every key of the `obs.*` schema by its path (`obs.trace-guard.fail-on-missing`), groups included.
 */
import { type Field, type Fields, isGroup, isStringMap } from './config-fields.ts';
import { OBS_SCHEMA } from './config-schema.ts';

/** A key of the schema and its field. */
export interface PathEntry {
  readonly path: string;
  readonly field: Field;
}

/** Every key of the schema, groups included, as `obs.a.b` (object-list items left out). */
export const ALL_PATHS: readonly PathEntry[] = (() => {
  const out: PathEntry[] = [];
  const walk = (fields: Fields, path: string): void => {
    for (const [key, field] of Object.entries(fields)) {
      out.push({ path: `${path}.${key}`, field });
      if (isGroup(field)) walk(field.properties, `${path}.${key}`);
    }
  };
  walk(OBS_SCHEMA.properties, 'obs');
  return out;
})();

/** The field of each key, by path. */
export const FIELD_BY_PATH = new Map(ALL_PATHS.map((e) => [e.path, e.field]));

/** Whether `obs.a.b` names a map setting (whose object value is a value, not a subtree). */
export function isMapKey(path: string): boolean {
  const field = FIELD_BY_PATH.get(path);
  return field !== undefined && isStringMap(field);
}
