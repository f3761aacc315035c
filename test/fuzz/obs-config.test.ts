/**
 * Properties of the `obs.*` configuration loader: whatever the environment, the file named by
 * `OBS_CONFIG_FILE` and the code options hold, `loadObsConfig` gives a configuration or throws its
 * documented `OBS_ERR_CONFIG` (an `ObsConfigError` listing the problems), never a TypeError.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import fc from 'fast-check';
import { dump } from 'js-yaml';
import { ENV_VARIABLES, OBS_CONFIG_FILE_VARIABLE } from '../../src/obs/core/config/config-env.ts';
import { isObsError, loadObsConfig, ObsConfigError } from '../../src/obs/index.ts';
import { fuzzParameters, GRAMMAR_PIECES, headerValue } from './fuzz.ts';

const FILE = 'obs-config';
const directory = mkdtempSync(join(tmpdir(), 'obs-config-fuzz-'));
after(() => rmSync(directory, { recursive: true, force: true }));

const VARIABLES = [...ENV_VARIABLES.keys()];
const PATHS = [...ENV_VARIABLES.values()].map((v) => v.path);

/** Values as an environment or a file would hold them, near each field kind's forms and off them. */
const textValue = fc.oneof(
  headerValue,
  fc.constantFrom(
    'true',
    'false',
    'DRY_RUN',
    'ENFORCING',
    'OFF',
    '0',
    '1',
    '0.5',
    '1.5',
    '-1',
    '2s',
    '10m',
    '99999999999d',
    '[]',
    '["a"]',
    '[1]',
    '{"a":"b"}',
    '{',
    'a=b,c=d',
    '=',
    ' ',
    '',
  ),
  fc.array(fc.constantFrom(...GRAMMAR_PIECES), { maxLength: 5 }).map((p) => p.join('')),
);
const anyValue = fc.oneof(
  { weight: 3, arbitrary: textValue },
  { weight: 1, arbitrary: fc.anything({ maxDepth: 2 }) },
  { weight: 1, arbitrary: fc.double() },
);

const envArb = fc.dictionary(
  fc.oneof(
    { weight: 8, arbitrary: fc.constantFrom(...VARIABLES) },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        'OBS_PROFILE',
        'OBS_RUNTIME_MODE',
        'OTEL_TRACES_SAMPLER',
        'OTEL_TRACES_SAMPLER_ARG',
        'OBS_NO_SUCH_THING',
      ),
    },
  ),
  textValue,
  { maxKeys: 5 },
);

/** A tree setting some of the schema's paths (and some it does not have). */
const treeArb = fc
  .array(
    fc.tuple(
      fc.oneof(
        fc.constantFrom(...PATHS),
        fc.constantFrom('obs.nope', 'obs', 'obs.slo.objectives', 'obs.__proto__.x', 'obs.constructor'),
      ),
      anyValue,
    ),
    { maxLength: 5 },
  )
  .map((pairs) => {
    const root: Record<string, unknown> = {};
    for (const [path, value] of pairs) {
      let node: Record<string, unknown> = root;
      const parts = path.split('.');
      parts.forEach((part, i) => {
        if (i === parts.length - 1) {
          Object.defineProperty(node, part, { value, enumerable: true, writable: true, configurable: true });
          return;
        }
        const next = Object.hasOwn(node, part) ? node[part] : undefined;
        if (typeof next !== 'object' || next === null || Array.isArray(next)) {
          const child: Record<string, unknown> = {};
          Object.defineProperty(node, part, {
            value: child,
            enumerable: true,
            writable: true,
            configurable: true,
          });
          node = child;
        } else node = next as Record<string, unknown>;
      });
    }
    return root;
  });

let fileCount = 0;
function loadOrConfigError(input: Parameters<typeof loadObsConfig>[0]): void {
  try {
    const resolved = loadObsConfig(input);
    assert.equal(typeof resolved.config, 'object');
  } catch (error) {
    if (error instanceof assert.AssertionError) throw error;
    assert.ok(
      error instanceof ObsConfigError && isObsError(error) && error.code === 'OBS_ERR_CONFIG',
      `not OBS_ERR_CONFIG: ${(error as Error)?.stack ?? String(error)}`,
    );
  }
}

test('loadObsConfig – random environment variables load or throw OBS_ERR_CONFIG', () => {
  fc.assert(
    fc.property(envArb, (env) => loadOrConfigError({ env })),
    fuzzParameters(FILE, 'env', 600),
  );
});

test('loadObsConfig – random code options and application defaults load or throw OBS_ERR_CONFIG', () => {
  fc.assert(
    fc.property(treeArb, treeArb, (options, defaults) =>
      loadOrConfigError({
        options: (options['obs'] ?? options) as never,
        defaults: (defaults['obs'] ?? defaults) as never,
      }),
    ),
    fuzzParameters(FILE, 'options', 600),
  );
});

test('loadObsConfig – a random OBS_CONFIG_FILE (YAML trees and broken text) loads or throws OBS_ERR_CONFIG', () => {
  fc.assert(
    fc.property(
      fc.oneof(
        treeArb.map((tree) => {
          try {
            return dump(tree);
          } catch {
            return JSON.stringify(tree) ?? '';
          }
        }),
        fc
          .array(
            fc.constantFrom(
              'obs:',
              '\n',
              '  ',
              'enforcement:',
              'mode: ',
              '&a',
              '*a',
              '<<: *a',
              '[',
              '{',
              '- ',
              '---',
              '!!binary x',
              'x: 1',
              '\t',
            ),
            { maxLength: 15 },
          )
          .map((p) => p.join('')),
      ),
      envArb,
      (text, env) => {
        const path = join(directory, `obs-${fileCount++ % 8}.yaml`);
        writeFileSync(path, text);
        loadOrConfigError({ env: { ...env, [OBS_CONFIG_FILE_VARIABLE]: path } });
      },
    ),
    fuzzParameters(FILE, 'file', 400),
  );
});
