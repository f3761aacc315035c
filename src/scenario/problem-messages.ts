/**
 * The wording of validation problems: one clear message per schema error, whatever TypeBox's own
 * wording, and how values and locations are shown in every message.
 */

import { type ValueError, ValueErrorType } from '@sinclair/typebox/errors';
import { DELAY_SPEC_FORM } from './duration.ts';
import { ERROR_FAULT_FORM, MAX_CHUNK_BYTES, MAX_RETRY_AFTER_SECONDS, RATE_FORM } from './faults.ts';
import {
  GRPC_STATUS_FORM,
  MAX_GRPC_MESSAGE_LENGTH,
  MAX_GRPC_METADATA,
  MAX_GRPC_METADATA_VALUE_LENGTH,
} from './grpc-answer.ts';
import { MAX_WEIGHT, SCENARIO_ORDERS } from './order.ts';
import {
  BodyConditionSchema,
  MAX_BODY_CONDITION_LENGTH,
  MAX_BODY_LENGTH,
  MAX_CONDITIONS,
  MAX_HEADERS,
  MAX_METHODS,
  MAX_NAME_LENGTH,
  MAX_PATH_LENGTH,
  MAX_PATTERN_LENGTH,
  MAX_REPEAT,
  MAX_RESPONSES,
  MAX_SCENARIOS,
  MAX_STATUS,
  MIN_STATUS,
  ScenarioResponseSchema,
  ScenarioSchema,
} from './schema.ts';
import { UPSTREAM_FORM } from './upstream.ts';
import { ACTIVE_FOR_FORM, MAX_TIMES } from './windows.ts';

// From the schema, so that a field added there is named here too.
const SCENARIO_KEYS = Object.keys(ScenarioSchema.properties).join(', ');
const RESPONSE_KEYS = Object.keys(ScenarioResponseSchema.properties).join(', ');
const BODY_KEYS = Object.keys(BodyConditionSchema.properties).join(', ');
const PATH_FORM =
  'a string starting with "/" of visible ASCII characters (percent-encode others), without "?" or "#"';
const HEADER_VALUE_FORM = 'printable ASCII or Latin-1 text (no CR, LF, NUL or other control characters)';
const GRPC_METADATA_VALUE_FORM = `printable ASCII (space to ~; base64 text under a key ending in -bin), at most ${MAX_GRPC_METADATA_VALUE_LENGTH} characters`;

/** What a location holds, worded for messages: its label and the expected form. */
interface Field {
  readonly label: string;
  readonly expected: string;
  /** What the counted items are called, for count errors. */
  readonly unit?: string;
}

const RESPONSE_FIELDS: Readonly<Record<string, Field>> = {
  status: { label: 'status', expected: `an integer ${MIN_STATUS}-${MAX_STATUS}` },
  delay: { label: 'delay', expected: `a string holding ${DELAY_SPEC_FORM}` },
  body: { label: 'body', expected: `a string of at most ${MAX_BODY_LENGTH} characters` },
  repeat: { label: 'repeat', expected: `an integer 1-${MAX_REPEAT}` },
  weight: { label: 'weight', expected: `an integer 0-${MAX_WEIGHT}` },
  // The fault fields: the text their header takes, so a number is given as a string ("1024").
  error: { label: 'error', expected: `a string holding ${ERROR_FAULT_FORM}, or a weighted list of them` },
  size: {
    label: 'size',
    expected: 'a string holding a number of bytes or a weighted list of them, e.g. "1024"',
  },
  compress: { label: 'compress', expected: 'a string: "gzip", "br" or "deflate"' },
  contentType: { label: 'contentType', expected: 'a string holding a media type such as "application/json"' },
  throttle: { label: 'throttle', expected: `a string holding ${RATE_FORM}` },
  chunkDelay: { label: 'chunkDelay', expected: 'a string holding a duration such as "100ms"' },
  chunkSize: {
    label: 'chunkSize',
    expected: `a string holding a number of bytes 1-${MAX_CHUNK_BYTES}, e.g. "512"`,
  },
  bodyDelay: { label: 'bodyDelay', expected: 'a string holding a duration such as "1s"' },
  retryAfter: {
    label: 'retryAfter',
    expected: `a string holding whole seconds 0-${MAX_RETRY_AFTER_SECONDS} (e.g. "30") or an HTTP date`,
  },
  headers: {
    label: 'headers',
    expected: `an object of header names to string values, at most ${MAX_HEADERS} entries`,
    unit: 'entries',
  },
  grpcStatus: { label: 'grpcStatus', expected: GRPC_STATUS_FORM },
  grpcMessage: {
    label: 'grpcMessage',
    expected: `a string of at most ${MAX_GRPC_MESSAGE_LENGTH} characters`,
  },
  grpcMetadata: {
    label: 'grpcMetadata',
    expected: `an object of metadata keys to string values, at most ${MAX_GRPC_METADATA} entries`,
    unit: 'entries',
  },
  grpcTrailers: {
    label: 'grpcTrailers',
    expected: `an object of trailer keys to string values, at most ${MAX_GRPC_METADATA} entries`,
    unit: 'entries',
  },
};

const SCENARIO_FIELDS: Readonly<Record<string, Field>> = {
  name: {
    label: 'name',
    expected: `a string of letters, digits, ".", "_" and "-" starting with a letter or digit, at most ${MAX_NAME_LENGTH} characters`,
  },
  path: { label: 'path', expected: `${PATH_FORM}, at most ${MAX_PATH_LENGTH} characters long` },
  pathPattern: {
    label: 'pathPattern',
    expected: `a glob starting with "/" (visible ASCII, * and **) or re:<regex>, at most ${MAX_PATTERN_LENGTH} characters long`,
  },
  method: {
    label: 'method',
    expected: `an HTTP method (letters only) or a list of 1-${MAX_METHODS} of them`,
    unit: 'methods',
  },
  headers: {
    label: 'headers',
    expected: `an object of header names to exact values or re:<regex>, at most ${MAX_CONDITIONS} entries`,
    unit: 'entries',
  },
  query: {
    label: 'query',
    expected: `an object of parameter names to exact values or re:<regex>, at most ${MAX_CONDITIONS} entries`,
    unit: 'entries',
  },
  body: { label: 'body', expected: `an object with one of ${BODY_KEYS.replace(', value', '')} (with value)` },
  cycle: { label: 'cycle', expected: 'true or false' },
  order: { label: 'order', expected: SCENARIO_ORDERS.map((order) => JSON.stringify(order)).join(' or ') },
  activeFor: { label: 'activeFor', expected: `a string holding ${ACTIVE_FOR_FORM}` },
  upstream: { label: 'upstream', expected: UPSTREAM_FORM },
  times: { label: 'times', expected: `an integer 1-${MAX_TIMES}` },
  responses: { label: 'responses', expected: `an array of 1-${MAX_RESPONSES} responses`, unit: 'responses' },
};

const BODY_FIELD: Field = {
  label: 'body condition',
  expected: `a string of at most ${MAX_BODY_CONDITION_LENGTH} characters`,
};

/** One clear message for a schema error, whatever TypeBox's own wording. */
export function schemaMessage(error: ValueError): string {
  const segments = error.path.split('/').slice(1).map(unescapePointer);
  const key = segments.at(-1) ?? '';
  if (error.type === ValueErrorType.ObjectAdditionalProperties) {
    const [owner, allowed] =
      segments[1] === 'responses'
        ? ['response', RESPONSE_KEYS]
        : segments[1] === 'body'
          ? ['body condition', BODY_KEYS]
          : ['scenario', SCENARIO_KEYS];
    return `unknown property ${quote(key)} in ${owner}; expected only ${allowed}`;
  }
  const field = fieldAt(segments);
  if (error.type === ValueErrorType.ObjectRequiredProperty)
    return `${field.label} is required: ${field.expected}`;
  const value: unknown = error.value;
  switch (error.type) {
    case ValueErrorType.StringMaxLength:
      return `${field.label} must be at most ${String(error.schema['maxLength'])} characters long, got ${(value as string).length} characters`;
    case ValueErrorType.ArrayMinItems:
    case ValueErrorType.ArrayMaxItems:
      return `${field.label} must be ${field.expected}, got ${(value as unknown[]).length} ${field.unit ?? 'items'}`;
    case ValueErrorType.ObjectMaxProperties:
      return `${field.label} must be ${field.expected}, got ${Object.keys(value as object).length} ${field.unit ?? 'entries'}`;
    default: {
      const hint =
        (key === 'delay' || key === 'activeFor') && typeof value === 'number'
          ? ` (write it as a string, e.g. "${value}ms")`
          : '';
      return `${field.label} must be ${field.expected}, got ${describe(value)}${hint}`;
    }
  }
}

/** A table's own entry for a name from the input (never a property of Object's prototype). */
function own<T>(table: Readonly<Record<string, T>>, name: string): T | undefined {
  return Object.hasOwn(table, name) ? table[name] : undefined;
}

/** What the value at a location is, from its place: `/i/key`, `/i/responses/j/key`, ... */
function fieldAt(segments: string[]): Field {
  const [, key = '', third, fourth, fifth] = segments;
  if (segments.length === 0)
    return { label: 'input', expected: `an array of at most ${MAX_SCENARIOS} scenarios` };
  if (segments.length === 1)
    return { label: 'scenario', expected: 'an object with path or pathPattern, and responses' };
  if (segments.length === 2)
    return (
      (Object.hasOwn(SCENARIO_FIELDS, key) ? SCENARIO_FIELDS[key] : undefined) ?? {
        label: key,
        expected: 'valid',
      }
    );
  if (key === 'responses') {
    if (segments.length === 3)
      return {
        label: 'response',
        expected: `an object with status and optionally ${RESPONSE_KEYS.replace('status, ', '')}`,
      };
    if (segments.length === 4)
      return own(RESPONSE_FIELDS, fourth ?? '') ?? { label: fourth ?? '', expected: 'valid' };
    if (fourth === 'grpcMetadata' || fourth === 'grpcTrailers') {
      const what = fourth === 'grpcMetadata' ? 'metadata' : 'trailer';
      return {
        label: `${what} ${quote(fifth ?? '')} value`,
        expected: `a string of ${GRPC_METADATA_VALUE_FORM}`,
      };
    }
    return { label: `header ${quote(fifth ?? '')} value`, expected: `a string of ${HEADER_VALUE_FORM}` };
  }
  if (key === 'method')
    return { label: 'method', expected: 'an HTTP method: letters only, at most 32 characters' };
  if (key === 'body') {
    const expected =
      third === 'jsonPointer'
        ? `a JSON Pointer such as "/order/id" ("~" written ~0, "/" in a key ~1), at most ${MAX_PATTERN_LENGTH} characters`
        : BODY_FIELD.expected;
    return { label: `body.${third ?? ''}`, expected };
  }
  const what = key === 'headers' ? 'header' : 'query parameter';
  return { label: `${what} ${quote(third ?? '')} condition`, expected: `a string of ${HEADER_VALUE_FORM}` };
}

/** A short, exact account of a value found where something else was expected. */
export function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  switch (typeof value) {
    case 'string':
      return quote(value);
    case 'number':
    case 'bigint':
    case 'boolean':
      return String(value);
    case 'undefined':
      return 'nothing';
    default:
      return typeof value;
  }
}

const QUOTE_MAX = 60;

/** A text as a JSON string, cut after `QUOTE_MAX` characters with its length said. */
export function quote(text: string): string {
  if (text.length <= QUOTE_MAX) return JSON.stringify(text);
  return `${JSON.stringify(text.slice(0, QUOTE_MAX))}... (${text.length} characters)`;
}

/** A key as one segment of a JSON pointer (RFC 6901: `~` is `~0`, `/` is `~1`). */
export function escapePointer(key: string): string {
  return key.replaceAll('~', '~0').replaceAll('/', '~1');
}

function unescapePointer(segment: string): string {
  return segment.replaceAll('~1', '/').replaceAll('~0', '~');
}
