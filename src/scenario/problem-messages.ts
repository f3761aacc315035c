/**
 * The wording of validation problems: one clear message per schema error, whatever TypeBox's own
 * wording, and how values and locations are shown in every message.
 */
import { type ValueError, ValueErrorType } from '@sinclair/typebox/errors';
import { DELAY_SPEC_FORM } from './duration.ts';
import {
  MAX_BODY_LENGTH,
  MAX_HEADERS,
  MAX_PATH_LENGTH,
  MAX_RESPONSES,
  MAX_SCENARIOS,
  MAX_STATUS,
  MIN_STATUS,
} from './schema.ts';

const SCENARIO_KEYS = 'path, responses';
const RESPONSE_KEYS = 'status, delay, body, headers';
const PATH_FORM =
  'a string starting with "/" of visible ASCII characters (percent-encode others), without "?" or "#"';
const HEADER_VALUE_FORM = 'printable ASCII or Latin-1 text (no CR, LF, NUL or other control characters)';

/** What a location holds, worded for messages: its label and the expected form. */
interface Field {
  readonly label: string;
  readonly expected: string;
  /** What the counted items are called, for count errors. */
  readonly unit?: string;
}

const FIELDS: Readonly<Record<string, Field>> = {
  scenario: { label: 'scenario', expected: 'an object with path and responses' },
  path: { label: 'path', expected: `${PATH_FORM}, at most ${MAX_PATH_LENGTH} characters long` },
  responses: { label: 'responses', expected: `an array of 1-${MAX_RESPONSES} responses`, unit: 'responses' },
  response: { label: 'response', expected: 'an object with status and optionally delay, body and headers' },
  status: { label: 'status', expected: `an integer ${MIN_STATUS}-${MAX_STATUS}` },
  delay: { label: 'delay', expected: `a string holding ${DELAY_SPEC_FORM}` },
  body: { label: 'body', expected: `a string of at most ${MAX_BODY_LENGTH} characters` },
  headers: {
    label: 'headers',
    expected: `an object of header names to string values, at most ${MAX_HEADERS} entries`,
    unit: 'entries',
  },
};

/** One clear message for a schema error, whatever TypeBox's own wording. */
export function schemaMessage(error: ValueError): string {
  const segments = error.path.split('/').slice(1).map(unescapePointer);
  const key = segments.at(-1) ?? '';
  if (error.type === ValueErrorType.ObjectAdditionalProperties) {
    const allowed = segments.length <= 2 ? SCENARIO_KEYS : RESPONSE_KEYS;
    const owner = segments.length <= 2 ? 'scenario' : 'response';
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
        key === 'delay' && typeof value === 'number' ? ` (write it as a string, e.g. "${value}ms")` : '';
      return `${field.label} must be ${field.expected}, got ${describe(value)}${hint}`;
    }
  }
}

function fieldAt(segments: string[]): Field {
  switch (segments.length) {
    case 0:
      return { label: 'input', expected: `an array of at most ${MAX_SCENARIOS} scenarios` };
    case 1:
      return FIELDS['scenario']!;
    case 3:
      return FIELDS['response']!;
    case 5: {
      const name = segments[4] ?? '';
      return {
        label: `header ${quote(name)} value`,
        expected: `a string of ${HEADER_VALUE_FORM}`,
      };
    }
    default: {
      const key = segments.at(-1) ?? '';
      return FIELDS[key] ?? { label: key, expected: 'valid' };
    }
  }
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
