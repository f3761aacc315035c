/**
 * YAML files as sources of the `obs.*` configuration: the file named by `OBS_CONFIG_FILE` and the
 * shipped presets, each a top-level `obs:` mapping.
 */
import { readFileSync, statSync } from 'node:fs';
import { CORE_SCHEMA, loadAll, YAMLException } from 'js-yaml';
import type { ConfigProblem } from '../errors.ts';
import { problem, unknownKey } from './config-problems.ts';
import { OBS_SCHEMA, type PresetProfile } from './config-schema.ts';
import { isPlainObject } from './config-values.ts';

/** Largest configuration file read, in bytes (a Kubernetes ConfigMap holds at most 1 MiB). */
export const MAX_CONFIG_FILE_BYTES = 1024 * 1024;
/** Most YAML aliases a configuration file may use (each may repeat a subtree). */
export const MAX_YAML_ALIASES = 100;

/** Where each preset file lives. */
export function presetFileUrl(profile: PresetProfile): URL {
  return new URL(`../../presets/application-obs-${profile}.yml`, import.meta.url);
}

/**
 * The one YAML document of a file (`undefined` for an empty file); a missing, oversized or invalid
 * file is a problem of `variable`, the setting that named it.
 */
export function readYamlFile(
  path: string,
  source: string,
  problems: ConfigProblem[],
  variable: string,
): unknown {
  let text: string | undefined;
  let reason: string | undefined;
  try {
    const info = statSync(path);
    if (!info.isFile()) reason = 'not a regular file';
    else if (info.size > MAX_CONFIG_FILE_BYTES) reason = `larger than ${MAX_CONFIG_FILE_BYTES} bytes`;
    else text = readFileSync(path, 'utf8');
  } catch (error) {
    reason =
      (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'it does not exist' : (error as Error).message;
  }
  if (text === undefined) {
    problems.push(problem(variable, path, 'environment', `a readable YAML file; ${reason}`));
    return undefined;
  }
  try {
    // loadAll: an empty (or comments-only) file is no document rather than an error.
    const documents = loadAll(text, { filename: path, schema: CORE_SCHEMA, maxAliases: MAX_YAML_ALIASES });
    if (documents.length > 1) {
      problems.push(problem(variable, path, source, `one YAML document, found ${documents.length}`));
      return undefined;
    }
    return documents[0];
  } catch (error) {
    const where =
      error instanceof YAMLException
        ? `line ${(error.mark?.line ?? 0) + 1}, column ${(error.mark?.column ?? 0) + 1}: ${error.reason}`
        : String(error);
    problems.push(problem(variable, path, source, `valid YAML; ${where}`));
    return undefined;
  }
}

/** The `obs:` mapping of a file; anything else at the top level is a problem. */
export function obsSubtree(document: unknown, source: string, problems: ConfigProblem[]): unknown {
  if (document === undefined || document === null) return undefined;
  if (!isPlainObject(document)) {
    problems.push(problem('(top level)', document, source, 'a mapping with the key obs'));
    return undefined;
  }
  for (const [key, value] of Object.entries(document)) {
    if (key === 'obs' || key.startsWith('_')) continue;
    const hint = Object.hasOwn(OBS_SCHEMA.properties, key)
      ? `did you mean obs.${key}? (the file's settings go under a top-level obs: mapping)`
      : `the file holds a top-level obs: mapping only`;
    problems.push(unknownKey(key, value, source, hint));
  }
  return document.obs;
}
