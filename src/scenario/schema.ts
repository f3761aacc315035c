/**
 * The one scenario schema. It is the source of the TypeScript types, of `validateScenarios` (and so
 * of `POST /scenario`, the file loader and the operator) and of the `EchoScenario` CRD's
 * `openAPIV3Schema`. That last use keeps it structural: no `$ref`, no unions, a `type` and a
 * `description` on every node, and a bound on every string, array and map.
 */
import { type Static, Type } from '@sinclair/typebox';
import { DELAY_SPEC_PATTERN } from './duration.ts';

/** Most scenarios in one set (one file, one `POST /scenario`, one pod's merged array). */
export const MAX_SCENARIOS = 1000;
/** Most responses in one scenario's cycle. */
export const MAX_RESPONSES = 1000;
/** Longest scenario `path`, in characters. */
export const MAX_PATH_LENGTH = 2048;
/** Longest response `body`, in characters (UTF-16 code units, as JavaScript counts): 1 MiB. */
export const MAX_BODY_LENGTH = 1_048_576;
/** Most entries in one response's `headers` map. */
export const MAX_HEADERS = 100;
/** Longest header name, in characters. */
export const MAX_HEADER_NAME_LENGTH = 256;
/** Longest header value, in characters. */
export const MAX_HEADER_VALUE_LENGTH = 8192;
/** Longest `delay` text, in characters: room for a weighted list of 32 entries. */
export const MAX_DELAY_LENGTH = 512;
/** Lowest response status. */
export const MIN_STATUS = 100;
/** Highest response status. */
export const MAX_STATUS = 599;
/**
 * Longest delay any scenario may ask for, in milliseconds: the largest timer Node can set
 * (2^31 - 1 ms, about 24.8 days; a longer one would fire at once). Applies with or without
 * `maxDelayMs`.
 */
export const MAX_TIMER_DELAY_MS = 2_147_483_647;

/**
 * A path: starts with `/`, then visible ASCII only (no space, control character or raw non-ASCII:
 * those arrive percent-encoded, so a scenario naming them raw would never match), and no query
 * (`?`) or fragment (`#`), since a scenario matches the request path exactly. Written so that
 * ECMAScript and RE2 read it the same way: the class is U+0021-U+007E without `#` (U+0023) and
 * `?` (U+003F), i.e. `!"`, `$` to `>`, `@` to `~`.
 */
export const PATH_PATTERN = '^/[!"$->@-~]*$';

/**
 * A header value Node's HTTP stack accepts: tab, visible ASCII, space and Latin-1 (obs-text). So no
 * CR, LF, NUL or other control characters, and no character above U+00FF.
 */
export const HEADER_VALUE_PATTERN = String.raw`^[\t\x20-\x7e\x80-\xff]*$`;

/**
 * A header name: an RFC 9110 token. Kubernetes structural schemas cannot constrain map keys, so
 * `validateScenarios` checks names rather than the schema.
 */
export const HEADER_NAME_PATTERN = "^[!#$%&'*+\\-.^_`|~0-9A-Za-z]+$";

const HeaderValueSchema = Type.String({
  description: 'Header value: printable ASCII or Latin-1 text; no CR, LF, NUL or other control characters.',
  maxLength: MAX_HEADER_VALUE_LENGTH,
  pattern: HEADER_VALUE_PATTERN,
});

/** The JSON schema of one scripted response. */
export const ScenarioResponseSchema = Type.Object(
  {
    status: Type.Integer({
      description: `HTTP status of the response, ${MIN_STATUS}-${MAX_STATUS}.`,
      minimum: MIN_STATUS,
      maximum: MAX_STATUS,
    }),
    delay: Type.Optional(
      Type.String({
        description:
          'Delay before the response: a duration (500ms, 1.5s, 2m; a bare number is milliseconds), ' +
          'a range min-max drawn uniformly (100-500ms, 1s-2s), a weighted list of them in percent ' +
          '(100ms:90,2s:10; at most 32 entries summing to at most 100, the rest no delay), or ' +
          'lognormal:<median>,<sigma> (0 < sigma <= 5; draws capped at the maximum delay).',
        maxLength: MAX_DELAY_LENGTH,
        pattern: DELAY_SPEC_PATTERN,
      }),
    ),
    body: Type.Optional(
      Type.String({
        description: `Response body, sent as is; at most ${MAX_BODY_LENGTH} characters (1 MiB).`,
        maxLength: MAX_BODY_LENGTH,
      }),
    ),
    headers: Type.Optional(
      // A map: `additionalProperties` with a schema, and no `properties` entries, is the structural
      // form Kubernetes accepts. `Unsafe` only gives it the right static type.
      Type.Unsafe<Record<string, string>>(
        Type.Object(
          {},
          {
            description: `Response headers, name to value; at most ${MAX_HEADERS}. Names are HTTP tokens.`,
            maxProperties: MAX_HEADERS,
            additionalProperties: HeaderValueSchema,
          },
        ),
      ),
    ),
  },
  {
    description: 'One scripted response: status, and optionally delay, body and headers.',
    additionalProperties: false,
  },
);

/** The JSON schema of one scenario: a path and the responses it cycles through. */
export const ScenarioSchema = Type.Object(
  {
    path: Type.String({
      description:
        'Request path the scenario matches exactly: starts with /, visible ASCII (percent-encode the rest), ' +
        'no query or fragment.',
      maxLength: MAX_PATH_LENGTH,
      pattern: PATH_PATTERN,
    }),
    responses: Type.Array(ScenarioResponseSchema, {
      description: 'Responses returned in order, one per matching request, wrapping after the last.',
      minItems: 1,
      maxItems: MAX_RESPONSES,
    }),
  },
  {
    description: 'A scripted response sequence for one request path.',
    additionalProperties: false,
  },
);

/** The JSON schema of a scenario set: the body of `POST /scenario` and the scenario file. */
export const ScenarioListSchema = Type.Array(ScenarioSchema, {
  description: 'Scenarios, at most one per path.',
  maxItems: MAX_SCENARIOS,
});

/** One scripted response, as validated. */
export type ScenarioResponse = Static<typeof ScenarioResponseSchema>;
/** One scenario, as validated. */
export type Scenario = Static<typeof ScenarioSchema>;

/** A plain JSON Schema node, as found in a CRD's `openAPIV3Schema`. */
export type JsonSchemaObject = { [keyword: string]: unknown };

/**
 * Converts a schema of this module to the plain JSON a CRD's `openAPIV3Schema` accepts.
 * Kubernetes forbids `additionalProperties` beside `properties` (even `false`: it prunes unknown
 * fields instead), so that pair is dropped, as are an empty `properties` beside a map's
 * `additionalProperties` and TypeBox's symbol keys. The result is a new object.
 */
export function toOpenApiV3Schema(schema: object): JsonSchemaObject {
  return structural(JSON.parse(JSON.stringify(schema)) as JsonSchemaObject);
}

function structural(node: JsonSchemaObject): JsonSchemaObject {
  const out: JsonSchemaObject = {};
  for (const [keyword, value] of Object.entries(node)) {
    if (keyword === 'properties' && isObject(value)) {
      if (Object.keys(value).length === 0 && isObject(node['additionalProperties'])) continue;
      const properties: JsonSchemaObject = {};
      for (const [name, sub] of Object.entries(value)) {
        properties[name] = isObject(sub) ? structural(sub) : sub;
      }
      out[keyword] = properties;
    } else if (keyword === 'additionalProperties') {
      if (value === false && isObject(node['properties'])) continue;
      out[keyword] = isObject(value) ? structural(value) : value;
    } else if (keyword === 'items' && isObject(value)) {
      out[keyword] = structural(value);
    } else {
      out[keyword] = value;
    }
  }
  return out;
}

function isObject(value: unknown): value is JsonSchemaObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
