/**
 * The one scenario schema. It is the source of the TypeScript types, of `validateScenarios` (and so
 * of `POST /scenario`, the file loader and the operator) and of the `EchoScenario` CRD's
 * `openAPIV3Schema`. That last use keeps it structural: no `$ref`, no unions, a `type` and a
 * `description` on every node, and a bound on every string, array and map. The one exception is
 * Kubernetes' own: an integer-or-string (`grpcStatus`), a union of an integer and a string marked
 * `x-kubernetes-int-or-string`, which {@link toOpenApiV3Schema} writes in the form a CRD takes.
 */
import { type Static, Type } from '@sinclair/typebox';
import { MAX_DOCUMENT_DEPTH } from './bounds.ts';
import { DELAY_SPEC_PATTERN } from './duration.ts';
import { MAX_GLOB_GLOBSTARS, MAX_GLOB_WILDCARDS } from './glob.ts';
import {
  GRPC_METADATA_VALUE_PATTERN,
  GRPC_STATUS_NAMES,
  GRPC_STATUS_PATTERN,
  MAX_GRPC_MESSAGE_LENGTH,
  MAX_GRPC_METADATA,
  MAX_GRPC_METADATA_VALUE_LENGTH,
  MAX_GRPC_STATUS,
  MAX_GRPC_STATUS_LENGTH,
} from './grpc-answer.ts';
import {
  DEFAULT_WEIGHT,
  MAX_ORDER_LENGTH,
  MAX_WEIGHT,
  ORDER_PATTERN,
  SCENARIO_ORDERS,
  type ScenarioOrder,
} from './order.ts';
import { MAX_SESSIONS } from './sessions.ts';
import { MAX_UPSTREAM_LENGTH, UPSTREAM_PATTERN } from './upstream.ts';
import { MAX_WEIGHTED_LIST_LENGTH } from './weighted.ts';
import { ACTIVE_FOR_PATTERN, MAX_ACTIVE_FOR_LENGTH, MAX_TIMES } from './windows.ts';

/** Most scenarios in one set (one file, one `POST /scenario`, one pod's merged array). */
export const MAX_SCENARIOS = 1000;
/**
 * Most text in one whole set, in characters: every string (bodies, headers, patterns) and key, plus
 * one a value: 16 MiB. A YAML alias repeats a node without repeating its text, so a small document
 * can expand to gigabytes; this bounds what is checked, stored and served by `GET /scenario`.
 */
export const MAX_SET_SIZE = 16 * 1024 * 1024;
/**
 * Most values (arrays, objects, strings, numbers, booleans; YAML aliases expanded) in one set: 32 Ki.
 * Checking a set and building its index take about a microsecond a value, in one turn of the event
 * loop (docs/adr/0031-scenario-set-work.md): 32 Ki values keep that to tens of milliseconds, where 4 Mi
 * held `/health` for seconds. A scenario of three responses with a few headers each is about 25
 * values, so 1,000 such scenarios fit; the bytes of a set are in its strings, bounded apart.
 */
export const MAX_SET_NODES = 32 * 1024;
/**
 * Deepest nesting of arrays and objects in one set. A valid set nests 5 deep (the list, a scenario,
 * its responses, a response, its headers); anything deeper is refused before it is walked.
 */
export const MAX_SET_DEPTH = MAX_DOCUMENT_DEPTH;
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
/** Longest `pathPattern`, and longest `re:` text anywhere in a scenario, in characters. */
export const MAX_PATTERN_LENGTH = 512;
/**
 * Largest program a `re:` pattern may compile to, in RE2 instructions (about one a character or
 * class, `{n}` repeating its group n times: `/api/v[0-9]+/items` is 16, a UUID 38). The program runs
 * on a bit-parallel automaton that keeps its live instructions in two 32-bit words
 * (`regex-automaton.ts`, at most 63 rune instructions); each character costs one OR per live
 * instruction that accepts it, so a 1 KiB text costs tens of microseconds even at this bound.
 */
export const MAX_REGEX_PROGRAM_SIZE = 64;
/**
 * Most `re:` patterns one set may hold in all (path patterns and header, query and body
 * conditions). RE2 takes tens of microseconds to check one and the set is checked a slice at a time,
 * but validating and loading it end in one turn of the event loop each (the set is swapped whole):
 * at 65,000 patterns (every condition of 1,000 scenarios) that turn took 0.1-0.35 s, at this bound
 * about 10-20 ms.
 */
export const MAX_SET_PATTERNS = 4096;
/** Longest scenario `name`, in characters: a Kubernetes object name fits (the operator uses it). */
export const MAX_NAME_LENGTH = 253;
/** Most methods in one scenario's `method` list. */
export const MAX_METHODS = 16;
/** Longest method name, in characters. */
export const MAX_METHOD_LENGTH = 32;
/** Most entries in one scenario's `headers` or `query` condition map. */
export const MAX_CONDITIONS = 32;
/** Longest query parameter value (or `re:` text) a condition may name, in characters. */
export const MAX_QUERY_VALUE_LENGTH = 2048;
/** Longest `body.contains`, `body.equals` or `body.value`, in characters. */
export const MAX_BODY_CONDITION_LENGTH = 65_536;
/** Largest `repeat` of one response. */
export const MAX_REPEAT = 1_000_000;
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

/**
 * Response headers nobody but the server may set, in lower case: one rule for `X-Echo-Set-Header-*`,
 * `ECHO_HEADER_*` and a scenario's `headers`. They frame the message (a chosen `Content-Length`
 * would corrupt the response) or are connection-specific, which HTTP/2 forbids outright (RFC 9113
 * 8.2.2: Node's HTTP/2 layer throws on them).
 */
export const UNSETTABLE_HEADERS: ReadonlySet<string> = new Set([
  'connection',
  'content-length',
  'http2-settings',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

/**
 * A `pathPattern`: a glob starting with `/` (`*` is any characters of one segment, `**` any
 * characters at all), or a regular expression written `re:<regex>`. Whether the regex compiles is
 * checked by `validateScenarios`, once.
 */
export const PATH_GLOB_OR_REGEX_PATTERN = '^(?:re:[ -~]+|/[!"$->@-~]*)$';

/** A scenario `name`: letters, digits, `.`, `_` and `-`, starting with a letter or digit. */
export const NAME_PATTERN = '^[A-Za-z0-9][-A-Za-z0-9_.]*$';

/** An HTTP method as a scenario names it: letters only, any case (matched case-insensitively). */
export const METHOD_PATTERN = '^[A-Za-z]+$';

/** A JSON Pointer (RFC 6901): empty (the whole document) or `/`-separated segments, `~` escaped. */
export const JSON_POINTER_PATTERN = '^(?:/(?:[^~]|~[01])*)*$';

const HeaderValueSchema = Type.String({
  description: 'Header value: printable ASCII or Latin-1 text; no CR, LF, NUL or other control characters.',
  maxLength: MAX_HEADER_VALUE_LENGTH,
  pattern: HEADER_VALUE_PATTERN,
});

/**
 * A map of gRPC metadata (`grpcMetadata`, `grpcTrailers`): a map, like the response headers, so that
 * Kubernetes accepts it; keys and `-bin` values are checked by `validateScenarios`.
 */
function grpcMetadataMap(description: string) {
  return Type.Unsafe<Record<string, string>>(
    Type.Object(
      {},
      {
        description,
        maxProperties: MAX_GRPC_METADATA,
        additionalProperties: Type.String({
          description:
            'Metadata value: printable ASCII (space to ~); under a key ending in -bin, base64 text of the bytes.',
          maxLength: MAX_GRPC_METADATA_VALUE_LENGTH,
          pattern: GRPC_METADATA_VALUE_PATTERN,
        }),
      },
    ),
  );
}

/** Longest text of a scenario response's fault field other than `error` and `size` (weighted lists). */
export const MAX_FAULT_TEXT_LENGTH = 256;

/**
 * A fault field of a scenario response: the text its control header takes, checked by that header's
 * parser (`faults.ts`) in `validateScenarios`; the schema bounds it and keeps it one line.
 */
function faultText(description: string, maxLength: number) {
  return Type.String({ description, minLength: 1, maxLength, pattern: HEADER_VALUE_PATTERN });
}

/** The JSON schema of one scripted response. */
export const ScenarioResponseSchema = Type.Object(
  {
    status: Type.Optional(
      Type.Integer({
        description: `HTTP status of the response, ${MIN_STATUS}-${MAX_STATUS}. Without it: X-Echo-Status or ECHO_STATUS when given, else 200 (or, when the scenario forwards to an upstream, the upstream's).`,
        minimum: MIN_STATUS,
        maximum: MAX_STATUS,
      }),
    ),
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
    repeat: Type.Optional(
      Type.Integer({
        description: `How many matching requests get this response before the cycle moves on, 1-${MAX_REPEAT} (default 1).`,
        minimum: 1,
        maximum: MAX_REPEAT,
      }),
    ),
    weight: Type.Optional(
      Type.Integer({
        description:
          `Under order: random, how likely this response is, relative to the others: a whole number 0-${MAX_WEIGHT} ` +
          `(default ${DEFAULT_WEIGHT}; 0 never drawn). Only with order: random.`,
        minimum: 0,
        maximum: MAX_WEIGHT,
      }),
    ),
    error: Type.Optional(
      faultText(
        'Fault instead of the response, the text X-Echo-Error takes: a status 400-599, internal, ' +
          'bad-gateway, unavailable, gateway-timeout, rate-limit, random, timeout, reset, close, empty, ' +
          'truncate, malformed, garbage or blackhole; or slow-close, which sends this response and keeps ' +
          'the connection open for the service ECHO_ERROR_TIMEOUT before closing it; or a weighted list ' +
          'of them (reset:50,503:10; the rest answers normally).',
        MAX_WEIGHTED_LIST_LENGTH,
      ),
    ),
    size: Type.Optional(
      faultText(
        'Random body of this many bytes instead of body, the text X-Echo-Response-Size takes ("1024", ' +
          'or a weighted list such as 1024:90,1048576:10); at most the service maximum response size.',
        MAX_WEIGHTED_LIST_LENGTH,
      ),
    ),
    compress: Type.Optional(
      faultText('Compress the body, as X-Echo-Compress: gzip, br or deflate.', MAX_FAULT_TEXT_LENGTH),
    ),
    contentType: Type.Optional(
      faultText(
        'Content-Type of the answer, as X-Echo-Content-Type (a media type such as application/json); ' +
          'wins over a Content-Type in headers.',
        MAX_FAULT_TEXT_LENGTH,
      ),
    ),
    throttle: Type.Optional(
      faultText(
        'Bandwidth cap of the body, as X-Echo-Throttle: a rate such as 500B/s, 10KB/s, 1MiB/s.',
        MAX_FAULT_TEXT_LENGTH,
      ),
    ),
    chunkDelay: Type.Optional(
      faultText(
        'Wait between chunks of the body, as X-Echo-Chunk-Delay: a duration (100ms, 1s) up to the maximum delay.',
        MAX_FAULT_TEXT_LENGTH,
      ),
    ),
    chunkSize: Type.Optional(
      faultText(
        'Size of those chunks in bytes, as X-Echo-Chunk-Size: "1" to "1048576" (a string).',
        MAX_FAULT_TEXT_LENGTH,
      ),
    ),
    bodyDelay: Type.Optional(
      faultText(
        'Wait after the headers, before the body, as X-Echo-Body-Delay: a duration up to the maximum delay.',
        MAX_FAULT_TEXT_LENGTH,
      ),
    ),
    retryAfter: Type.Optional(
      faultText(
        'Retry-After of the answer, as X-Echo-Retry-After: whole seconds "0" to "86400" (a string) or an ' +
          'HTTP date (Sun, 06 Nov 1994 08:49:37 GMT).',
        MAX_FAULT_TEXT_LENGTH,
      ),
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
    grpcStatus: Type.Optional(
      // Kubernetes' integer-or-string: YAML gives `14` as a number, `UNAVAILABLE` as text.
      Type.Union(
        [
          Type.Integer({
            description: `A gRPC status code, 0-${MAX_GRPC_STATUS}.`,
            minimum: 0,
            maximum: MAX_GRPC_STATUS,
          }),
          Type.String({
            description: 'A gRPC status code in digits, or its name in any case.',
            minLength: 1,
            maxLength: MAX_GRPC_STATUS_LENGTH,
            pattern: GRPC_STATUS_PATTERN,
          }),
        ],
        {
          description:
            `Status of the gRPC calls this response answers: a code 0-${MAX_GRPC_STATUS} or its name in any case ` +
            `(${GRPC_STATUS_NAMES.join(', ')}). OK answers the call as usual; any other ends it with that status. ` +
            'HTTP requests do not use it.',
          'x-kubernetes-int-or-string': true,
        },
      ),
    ),
    grpcMessage: Type.Optional(
      Type.String({
        description: `Status message of the gRPC answer, at most ${MAX_GRPC_MESSAGE_LENGTH} characters; only beside a grpcStatus other than OK.`,
        maxLength: MAX_GRPC_MESSAGE_LENGTH,
      }),
    ),
    grpcMetadata: Type.Optional(
      grpcMetadataMap(
        `Metadata added to the gRPC answer's initial metadata, key to value; at most ${MAX_GRPC_METADATA}. ` +
          'Keys are lower-case (a-z, 0-9, _, ., -), not grpc-* nor content-type, te, user-agent or a ' +
          'connection header; a key ending in -bin takes base64 text.',
      ),
    ),
    grpcTrailers: Type.Optional(
      grpcMetadataMap(
        `Metadata added to the gRPC answer's trailers (beside grpc-status), key to value; at most ${MAX_GRPC_METADATA}. ` +
          'Keys as in grpcMetadata.',
      ),
    ),
  },
  {
    description:
      'One scripted response: status, and optionally delay, body, repeat, weight, headers, and any fault a control header gives (error, size, compress, contentType, throttle, chunkDelay, chunkSize, bodyDelay, retryAfter); for gRPC calls, grpcStatus, grpcMessage, grpcMetadata and grpcTrailers.',
    additionalProperties: false,
  },
);

/**
 * A condition map (`headers`, `query`): name to an exact value or `re:<regex>`. A map, like the
 * response headers, so that Kubernetes accepts it; names are checked by `validateScenarios`.
 */
function conditionMap(description: string, valueMaxLength: number) {
  return Type.Unsafe<Record<string, string>>(
    Type.Object(
      {},
      {
        description,
        maxProperties: MAX_CONDITIONS,
        additionalProperties: Type.String({
          description: 'The exact value, or re:<regex> matched against the whole value.',
          maxLength: valueMaxLength,
          pattern: HEADER_VALUE_PATTERN,
        }),
      },
    ),
  );
}

/** The JSON schema of a request body condition: one of `contains`, `equals`, or `jsonPointer` with `value`. */
export const BodyConditionSchema = Type.Object(
  {
    contains: Type.Optional(
      Type.String({
        description: 'The request body (as UTF-8 text) contains this text.',
        maxLength: MAX_BODY_CONDITION_LENGTH,
      }),
    ),
    equals: Type.Optional(
      Type.String({
        description: 'The request body (as UTF-8 text) is exactly this text.',
        maxLength: MAX_BODY_CONDITION_LENGTH,
      }),
    ),
    jsonPointer: Type.Optional(
      Type.String({
        description:
          'A JSON Pointer (RFC 6901, e.g. /order/id) into the request body parsed as JSON; needs value.',
        maxLength: MAX_PATTERN_LENGTH,
        pattern: JSON_POINTER_PATTERN,
      }),
    ),
    value: Type.Optional(
      Type.String({
        description:
          'What jsonPointer must point at: a string is compared as is, any other JSON value by its JSON ' +
          'text (42, true, null); or re:<regex> matched against that text.',
        maxLength: MAX_BODY_CONDITION_LENGTH,
      }),
    ),
  },
  {
    description: 'Request body condition: exactly one of contains, equals, or jsonPointer with value.',
    additionalProperties: false,
  },
);

/**
 * The JSON schema of one scenario: what it matches (exactly one of `path` and `pathPattern`, plus
 * optional conditions) and the responses it serves.
 */
export const ScenarioSchema = Type.Object(
  {
    name: Type.Optional(
      Type.String({
        description: `Name of the scenario, unique in the set (letters, digits, ., _, -; at most ${MAX_NAME_LENGTH}); used by the state routes and in X-Echo-Applied.`,
        maxLength: MAX_NAME_LENGTH,
        pattern: NAME_PATTERN,
      }),
    ),
    path: Type.Optional(
      Type.String({
        description:
          'Request path the scenario matches exactly: starts with /, visible ASCII (percent-encode the rest), ' +
          'no query or fragment. Exactly one of path and pathPattern.',
        maxLength: MAX_PATH_LENGTH,
        pattern: PATH_PATTERN,
      }),
    ),
    pathPattern: Type.Optional(
      Type.String({
        description:
          'Request path pattern: a glob starting with / (visible ASCII; * matches within one segment, ** across ' +
          `segments; at most ${MAX_GLOB_GLOBSTARS} ** and ${MAX_GLOB_WILDCARDS} wildcards) ` +
          `or re:<regex> (JavaScript syntax run on a linear-time RE2 engine: no backreferences or lookaround) matched against the whole path; at most ${MAX_PATTERN_LENGTH} characters. ` +
          'Exactly one of path and pathPattern.',
        maxLength: MAX_PATTERN_LENGTH,
        pattern: PATH_GLOB_OR_REGEX_PATTERN,
      }),
    ),
    method: Type.Optional(
      Type.Array(
        Type.String({
          description: 'An HTTP method, e.g. GET; matched case-insensitively.',
          maxLength: MAX_METHOD_LENGTH,
          pattern: METHOD_PATTERN,
        }),
        {
          description:
            'Request methods the scenario matches, any of them. A list; the file and POST /scenario also ' +
            'take a single string.',
          minItems: 1,
          maxItems: MAX_METHODS,
        },
      ),
    ),
    headers: Type.Optional(
      conditionMap(
        `Request headers that must be present: name (case-insensitive) to exact value or re:<regex>; at most ${MAX_CONDITIONS}.`,
        MAX_HEADER_VALUE_LENGTH,
      ),
    ),
    query: Type.Optional(
      conditionMap(
        `Query parameters that must be present: name to exact value or re:<regex> (any of a repeated parameter's values); at most ${MAX_CONDITIONS}.`,
        MAX_QUERY_VALUE_LENGTH,
      ),
    ),
    body: Type.Optional(BodyConditionSchema),
    upstream: Type.Optional(
      Type.String({
        description:
          'Forward the requests this scenario matches to this upstream (an absolute http:// or https:// URL without query, fragment or credentials; a path is its base path) instead of answering them: each response then gives the faults for the forwarded request (error, delay, throttle, ...), its status (when given) replaces the upstream status and its headers are added to the answer; its body is not used.',
        maxLength: MAX_UPSTREAM_LENGTH,
        pattern: UPSTREAM_PATTERN,
      }),
    ),
    cycle: Type.Optional(
      Type.Boolean({
        description:
          'Whether to start again after the last response (default true); false stays on the last one. ' +
          'Only with order: cycle.',
      }),
    ),
    order: Type.Optional(
      Type.Unsafe<ScenarioOrder>(
        Type.String({
          description:
            'How responses are served: cycle (in turn, the default) or random (each answer drawn by the ' +
            "responses' weight, seeded like every draw by X-Echo-Seed or ECHO_SEED; a drawn response is served " +
            'repeat times in a row).',
          maxLength: MAX_ORDER_LENGTH,
          pattern: ORDER_PATTERN,
          enum: [...SCENARIO_ORDERS],
        }),
      ),
    ),
    activeFor: Type.Optional(
      Type.String({
        description:
          'How long the scenario matches, from when the set was stored (or the scenario reset): a duration ' +
          '(30s, 5m, 1.5h; a bare number is milliseconds), above 0 and at most 366d. Past it the scenario is ' +
          'expired: it stops matching and GET /scenario/state says so. Apart from spec.duration, which ' +
          'removes an EchoScenario from its pods.',
        maxLength: MAX_ACTIVE_FOR_LENGTH,
        pattern: ACTIVE_FOR_PATTERN,
      }),
    ),
    times: Type.Optional(
      Type.Integer({
        description:
          `How many requests the scenario answers, 1-${MAX_TIMES}; then it is expired and stops matching. ` +
          `Counted per X-Echo-Session (at most ${MAX_SESSIONS} sessions are kept), and apart for requests without one.`,
        minimum: 1,
        maximum: MAX_TIMES,
      }),
    ),
    responses: Type.Array(ScenarioResponseSchema, {
      description:
        'Responses returned in order, one per matching request (each repeat times), wrapping after the last; ' +
        'under order: random, drawn by weight instead.',
      minItems: 1,
      maxItems: MAX_RESPONSES,
    }),
  },
  {
    description: 'A scripted response sequence for the requests that match a path or pattern and conditions.',
    additionalProperties: false,
  },
);

/** The JSON schema of a scenario set: the body of `POST /scenario` and the scenario file. */
export const ScenarioListSchema = Type.Array(ScenarioSchema, {
  description: 'Scenarios; the first that matches a request serves it.',
  maxItems: MAX_SCENARIOS,
});

/** One scripted response, as validated. */
export type ScenarioResponse = Static<typeof ScenarioResponseSchema>;
/** A request body condition, as validated. */
export type BodyCondition = Static<typeof BodyConditionSchema>;
/** One scenario, as validated. */
export type Scenario = Static<typeof ScenarioSchema>;

/** A plain JSON Schema node, as found in a CRD's `openAPIV3Schema`. */
export type JsonSchemaObject = { [keyword: string]: unknown };

/**
 * Converts a schema of this module to the plain JSON a CRD's `openAPIV3Schema` accepts.
 * Kubernetes forbids `additionalProperties` beside `properties` (even `false`: it prunes unknown
 * fields instead), so that pair is dropped, as are an empty `properties` beside a map's
 * `additionalProperties` and TypeBox's symbol keys. An `x-kubernetes-int-or-string` union becomes the
 * exact `anyOf` Kubernetes takes (`[{type: integer}, {type: string}]`) with each branch's bounds
 * beside it, where JSON Schema applies them to their own type (`minimum` to the number, `pattern`
 * to the text). The result is a new object.
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
    } else if (keyword === 'anyOf' && node['x-kubernetes-int-or-string'] === true && Array.isArray(value)) {
      const branches = value.filter(isObject);
      out[keyword] = branches.map((branch) => ({ type: branch['type'] }));
      for (const branch of branches) {
        for (const [bound, limit] of Object.entries(branch)) {
          if (bound !== 'type' && bound !== 'description') out[bound] = limit;
        }
      }
    } else {
      out[keyword] = value;
    }
  }
  return out;
}

function isObject(value: unknown): value is JsonSchemaObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
