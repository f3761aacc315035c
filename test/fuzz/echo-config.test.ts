/**
 * Properties of the service's settings (`loadConfig`): whatever the environment holds, it gives a
 * configuration or throws `ECHO_ERR_CONFIG` listing the problems, never anything else; an
 * `ECHO_HEADER_*` it accepts never names a header the shared rule refuses (HTTP/2's
 * connection-specific ones included) and carries a value HTTP can send.
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import fc from 'fast-check';
import { loadConfig } from '../../src/echo/config.ts';
import { isEchoError } from '../../src/echo/errors.ts';
import { TOKEN } from '../../src/echo/http-grammar.ts';
import { UNSETTABLE_HEADERS } from '../../src/scenario/index.ts';
import { fuzzParameters, GRAMMAR_PIECES, headerValue } from './fuzz.ts';

const FILE = 'echo-config';

const VARIABLES = [
  'PORT',
  'MAX_BODY_SIZE',
  'ECHO_MAX_DELAY',
  'ECHO_MAX_RESPONSE_SIZE',
  'ECHO_RATE_LIMIT_RPS',
  'ECHO_HISTORY_SIZE',
  'ECHO_HISTORY_MAX_BODY',
  'ECHO_HISTORY_MAX_BYTES',
  'ECHO_HEADERS_TIMEOUT',
  'ECHO_REQUEST_TIMEOUT',
  'ECHO_DELAY',
  'ECHO_SEED',
  'ECHO_MAX_ACTIVE_FAULTS',
  'ECHO_FAULTS_ENABLED',
  'ECHO_HISTORY_SECRETS',
  'LOG_LEVEL',
] as const;

const headerSuffix = fc.oneof(
  fc.constantFrom(
    ...[...UNSETTABLE_HEADERS].map((n) => n.replaceAll('-', '_')),
    'Proxy_Connection',
    'HTTP2_Settings',
    'Keep_Alive',
    'TE',
    'X_Team',
    '__proto__',
    'constructor',
    '',
    '?',
  ),
  fc.stringMatching(/^[A-Za-z0-9_!#$%&'*+.^`|~-]{1,12}$/),
);

const envArb = fc
  .tuple(
    // Often no other variable, so that the headers alone decide.
    fc.oneof(
      { weight: 3, arbitrary: fc.constant({}) },
      {
        weight: 2,
        arbitrary: fc.dictionary(
          fc.constantFrom(...VARIABLES),
          fc.oneof(
            headerValue,
            fc.array(fc.constantFrom(...GRAMMAR_PIECES), { maxLength: 4 }).map((p) => p.join('')),
          ),
          { maxKeys: 2 },
        ),
      },
    ),
    fc.array(fc.tuple(headerSuffix, fc.oneof(headerValue, fc.constantFrom('a\r\nb', 'x\u0000', 'ok'))), {
      maxLength: 4,
    }),
  )
  .map(([vars, headers]) => {
    const env: Record<string, string> = { ...vars };
    for (const [suffix, value] of headers) env[`ECHO_HEADER_${suffix}`] = value;
    return env;
  });

test('loadConfig – any environment gives a configuration or ECHO_ERR_CONFIG; accepted ECHO_HEADER_* are settable and sendable', () => {
  fc.assert(
    fc.property(envArb, (env) => {
      let config: ReturnType<typeof loadConfig>;
      try {
        config = loadConfig(env);
      } catch (error) {
        assert.ok(
          isEchoError(error) && error.code === 'ECHO_ERR_CONFIG',
          String((error as Error)?.stack ?? error),
        );
        return;
      }
      for (const [name, value] of config.extraHeaders) {
        assert.ok(TOKEN.test(name), name);
        assert.ok(!UNSETTABLE_HEADERS.has(name.toLowerCase()), `${name} may not be set`);
        assert.doesNotMatch(value, /[\r\n\0]/);
      }
    }),
    fuzzParameters(FILE, 'loadConfig', 1500),
  );
});
