/**
 * The builders the `obs.*` schema is written with (`config-schema.ts`): each returns a TypeBox
 * schema (docs/adr/0045-one-settings-mechanism.md), with its `default`, its `description` and the
 * few keywords of obs's own the readers need ({@link ObsKeywords}). The TypeScript types of a tree
 * of them (what the library reads, {@link Resolved}, and what code may pass, {@link Input}) are
 * mapped over the schemas, and the guards below tell the readers which kind of key a schema is.
 * How a value of each kind is read and worded lives in `config-values.ts`.
 *
 * | kind | schema |
 * | --- | --- |
 * | subtree (a feature, a block) | `Type.Object` with a `description` |
 * | `true` or `false` | `Type.Boolean` |
 * | whole number, number | `Type.Integer`, `Type.Number` with `minimum` and `maximum` |
 * | duration | `Type.Number` of milliseconds marked `'x-obs': 'duration'` (written `300ms`, `2s`) |
 * | text | `Type.String` with a `pattern` and its `form` for messages |
 * | one of some words | `Type.Union` of `Type.Literal` |
 * | list of text | `Type.Array(Type.String(...))` |
 * | map of text | `Type.Record` with `keyForm` (and `lowerCaseKeys`) |
 * | list of objects | `Type.Array(Type.Object(...))` with `requiredKeys` |
 *
 * A key that may be unset (no default) is `Type.Optional`.
 */
import assert from 'node:assert/strict';
import {
  KindGuard,
  type TArray,
  type TBoolean,
  type TInteger,
  type TLiteral,
  type TNumber,
  type TObject,
  type TOptional,
  type TProperties,
  type TRecord,
  type TSchema,
  type TString,
  type TUnion,
  Type,
} from '@sinclair/typebox';
import { literalsOf } from '../../settings.ts';
import { parseDurationMs } from '../duration.ts';

/** The keywords of obs's own a schema of the tree may carry (JSON Schema ignores unknown keywords). */
export interface ObsKeywords {
  /** `duration`: a number of milliseconds, written as text (`300ms`, `2s`) or a bare number. */
  readonly 'x-obs'?: 'duration';
  /** What an accepted text looks like, for messages and the reference (a text, an item of a list). */
  readonly form?: string;
  /** What a key of a map is, for messages and the reference: `header name`, `host`. */
  readonly keyForm?: string;
  /** The keys of a map are compared case-insensitively and held in lower case (header names). */
  readonly lowerCaseKeys?: boolean;
  /** The keys an item of a list of objects must carry. */
  readonly requiredKeys?: readonly string[];
  /** TypeBox's own keywords (`default`, `description`, `minimum`, ...). */
  readonly [keyword: string]: unknown;
}

/** The keywords of obs's own of a schema. */
export const keywords = (schema: TSchema): ObsKeywords => schema;

/** A duration: milliseconds within `[minimum, maximum]`. */
export interface TDuration extends TNumber {
  readonly 'x-obs': 'duration';
}

/** The keys of a subtree (or of an item of a list of objects), each a schema. */
export type Fields = TProperties;
/** One key of the tree. */
export type Field = TSchema;

// Guards: which kind of key a schema is.

/** A subtree. */
export const isGroup = (schema: TSchema): schema is TObject => KindGuard.IsObject(schema);
/** A duration ({@link TDuration}). */
export const isDuration = (schema: TSchema): schema is TDuration =>
  KindGuard.IsNumber(schema) && keywords(schema)['x-obs'] === 'duration';
/** One of some words (read as the settings of ADR 0045 read a union of literals). */
export const isEnum = (schema: TSchema): schema is TUnion<TLiteral<string>[]> =>
  literalsOf(schema)?.every((value) => typeof value === 'string') === true;
/** A list of objects. */
export const isObjectList = (schema: TSchema): schema is TArray<TObject> =>
  KindGuard.IsArray(schema) && KindGuard.IsObject(schema.items);
/** A list of text. */
export const isStringList = (schema: TSchema): schema is TArray<TString> =>
  KindGuard.IsArray(schema) && KindGuard.IsString(schema.items);
/** A map of text. */
export const isStringMap = (schema: TSchema): schema is TRecord<TString, TString> =>
  KindGuard.IsRecord(schema);
/** A key that may be unset. */
export const isOptional = (schema: TSchema): boolean => KindGuard.IsOptional(schema);

/** The words of a {@link isEnum} schema, in order. */
export const enumValues = (schema: TUnion<TLiteral<string>[]>): string[] =>
  schema.anyOf.map((member) => member.const);

/**
 * The word of `words` that `raw` stands for, or undefined: relaxed like Spring's enum binding, so
 * case, surrounding blanks and `-` against `_` do not matter (`dry-run` is `DRY_RUN`). The one rule
 * for every word obs reads, from the configuration and from the enforcement routes alike.
 */
export function matchWord<W extends string>(words: readonly W[], raw: unknown): W | undefined {
  if (typeof raw !== 'string') return undefined;
  const wanted = raw.trim().toUpperCase().replaceAll('-', '_');
  return words.find((w) => w.toUpperCase().replaceAll('-', '_') === wanted);
}

/** The limits of a number or a duration (the builders always set both). */
export function bounds(schema: TNumber | TInteger): { readonly min: number; readonly max: number } {
  const { minimum: min, maximum: max } = schema;
  assert.ok(min !== undefined && max !== undefined, 'obs schema: a number without its limits');
  return { min, max };
}

// The types of a tree.

/** `undefined` for a key that may be unset (`Type.Optional`). */
type OptionalOf<S> = S extends TOptional<TSchema> ? undefined : never;

/** The resolved value of a key: what the library reads. */
export type Resolved<S> =
  S extends TObject<infer P>
    ? { readonly [K in keyof P]: Resolved<P[K]> }
    : S extends TArray<TObject<infer P>>
      ? ReadonlyArray<{ readonly [K in keyof P]: Resolved<P[K]> }>
      : S extends TArray<TString>
        ? readonly string[]
        : S extends TRecord<TString, TString>
          ? Readonly<Record<string, string>>
          : S extends TUnion<infer M>
            ? M[number] extends TLiteral<infer V>
              ? V
              : never
            : S extends TBoolean
              ? boolean
              : S extends TNumber | TInteger
                ? number | OptionalOf<S>
                : S extends TString
                  ? string | OptionalOf<S>
                  : never;

/** What code may pass for a key: any part of the tree, durations as text or milliseconds. */
export type Input<S> =
  S extends TObject<infer P>
    ? { readonly [K in keyof P]?: Input<P[K]> }
    : S extends TArray<TObject<infer P>>
      ? ReadonlyArray<{ readonly [K in keyof P]?: Input<P[K]> }>
      : S extends TArray<TString>
        ? readonly string[]
        : S extends TRecord<TString, TString>
          ? Readonly<Record<string, string>>
          : S extends TUnion<infer M>
            ? M[number] extends TLiteral<infer V>
              ? V
              : never
            : S extends TBoolean
              ? boolean
              : S extends TDuration
                ? string | number
                : S extends TNumber | TInteger
                  ? number
                  : S extends TString
                    ? string
                    : never;

// Builders: they keep the literal shape of each subtree so that the types above can be derived.

const MAX_DURATION_MS = 365 * 86_400_000;

function ms(text: string): number {
  const value = parseDurationMs(text);
  assert.ok(value !== undefined, `bad duration literal in the obs schema: ${text}`);
  return value;
}

export function group<const F extends Fields>(doc: string, fields: F): TObject<F> {
  return Type.Object(fields, { description: doc });
}

export function bool(value: boolean, doc: string): TBoolean {
  return Type.Boolean({ default: value, description: doc });
}

export function integer(value: number, min: number, max: number, doc: string): TInteger {
  return Type.Integer({ default: value, minimum: min, maximum: max, description: doc });
}

export function ratio(value: number, doc: string): TNumber {
  return Type.Number({ default: value, minimum: 0, maximum: 1, description: doc });
}

function durationOf(value: number | undefined, doc: string, min: number, max: number): TDuration {
  const schema = Type.Number({ minimum: min, maximum: max, description: doc });
  return { ...schema, ...(value === undefined ? {} : { default: value }), 'x-obs': 'duration' };
}

export function duration(value: string, doc: string, min = 0, max = MAX_DURATION_MS): TDuration {
  return durationOf(ms(value), doc, min, max);
}

export function optionalDuration(doc: string): TOptional<TDuration> {
  return Type.Optional(durationOf(undefined, doc, 0, MAX_DURATION_MS));
}

/** A pattern as a schema's `pattern` keyword: its source, which TypeBox reads without flags. */
function patternOf(pattern: RegExp): string {
  assert.equal(pattern.flags, '', `obs schema: a pattern with flags, which a schema cannot hold: ${pattern}`);
  return pattern.source;
}

/** An HTTP header name (RFC 9110 token), and its form for error messages. */
export const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
export const HEADER_FORM = 'an HTTP header name (a token of letters, digits and symbols such as - and _)';

export function text(value: string, doc: string, pattern?: RegExp, form?: string): TString {
  return Type.String({
    default: value,
    description: doc,
    pattern: patternOf(pattern ?? /\S/),
    form: pattern === undefined ? 'non-empty text' : (form ?? `text matching ${pattern}`),
  });
}

export function header(value: string, doc: string): TString {
  return text(value, doc, HEADER_NAME, HEADER_FORM);
}

export function optionalText(doc: string, pattern: RegExp, form: string): TOptional<TString> {
  return Type.Optional(Type.String({ description: doc, pattern: patternOf(pattern), form }));
}

/** Text without a default that an item of a list of objects must carry (see {@link objectList}). */
export function requiredText(doc: string, pattern: RegExp, form: string): TString {
  return Type.String({ description: doc, pattern: patternOf(pattern), form });
}

export function oneOf<const V extends string>(
  values: readonly V[],
  value: NoInfer<V>,
  doc: string,
): TUnion<TLiteral<V>[]> {
  return Type.Union(
    values.map((v) => Type.Literal(v)),
    { default: value, description: doc },
  );
}

export function list(
  value: readonly string[],
  doc: string,
  pattern?: RegExp,
  form?: string,
): TArray<TString> {
  const item =
    pattern === undefined
      ? Type.String()
      : Type.String({ pattern: patternOf(pattern), ...(form === undefined ? {} : { form }) });
  return Type.Array(item, { default: value, description: doc });
}

/** A map of free-form keys (`keyForm`: header names, hosts) to text. Later sources merge key by key. */
export function stringMap(keyForm: string, doc: string, lowerCaseKeys = false): TRecord<TString, TString> {
  return Type.Record(Type.String(), Type.String(), {
    default: {},
    description: doc,
    keyForm,
    ...(lowerCaseKeys ? { lowerCaseKeys } : {}),
  });
}

export function headerMap(doc: string): TRecord<TString, TString> {
  return stringMap('header name', doc, true);
}

/** A list of objects of one shape (SLO objectives); each item carries `requiredKeys`. Later sources replace it. */
export function objectList<const F extends Fields>(
  doc: string,
  requiredKeys: readonly (keyof F & string)[],
  item: F,
): TArray<TObject<F>> {
  return Type.Array(Type.Object(item), { default: [], description: doc, requiredKeys });
}

/** An absolute URL path, and its form for error messages. */
export const PATH = /^\/\S*$/;
export const PATH_FORM = 'a path starting with /';
