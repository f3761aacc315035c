/**
 * The language the `obs.*` schema is written in: the kinds of key (boolean, integer, duration,
 * list, map, ...), the TypeScript types derived from a tree of them (what the library reads,
 * {@link Resolved}, and what code may pass, {@link Input}), and the builders `config-schema.ts`
 * writes its tree with. How a value of each kind is read and worded lives in `config-values.ts`.
 */
import assert from 'node:assert/strict';
import { parseDurationMs } from '../duration.ts';

interface FieldBase {
  /** One sentence for the reference: what the key does. */
  readonly doc: string;
}

/** `true` or `false`. */
export interface BooleanField extends FieldBase {
  readonly kind: 'boolean';
  readonly default: boolean;
}

/** A whole number within `[min, max]`. */
export interface IntegerField extends FieldBase {
  readonly kind: 'integer';
  readonly default: number;
  readonly min: number;
  readonly max: number;
}

/** A number within `[min, max]`. */
export interface NumberField extends FieldBase {
  readonly kind: 'number';
  readonly default: number;
  readonly min: number;
  readonly max: number;
}

/** A duration, held in milliseconds, within `[min, max]` milliseconds. */
export interface DurationField extends FieldBase {
  readonly kind: 'duration';
  readonly default: number | undefined;
  readonly min: number;
  readonly max: number;
  readonly optional?: true;
}

/** Text, optionally matching a pattern. */
export interface StringField extends FieldBase {
  readonly kind: 'string';
  readonly default: string | undefined;
  readonly pattern?: RegExp;
  /** The accepted form, for error messages, when there is a pattern. */
  readonly form?: string;
  readonly optional?: true;
}

/** One of a fixed set of words. */
export interface EnumField<V extends string = string> extends FieldBase {
  readonly kind: 'enum';
  readonly values: readonly V[];
  readonly default: V;
}

/** An ordered list of text items. Later sources replace the whole list. */
export interface StringListField extends FieldBase {
  readonly kind: 'string-list';
  readonly default: readonly string[];
  readonly pattern?: RegExp;
  readonly form?: string;
}

/** A map of free-form keys (header names, host names) to text. Later sources merge key by key. */
export interface StringMapField extends FieldBase {
  readonly kind: 'string-map';
  readonly default: Readonly<Record<string, string>>;
  /** What a key is, for the reference: `header name`, `host`. */
  readonly keyForm: string;
  /** Keys are compared case-insensitively and held in lower case (header names). */
  readonly lowerCaseKeys?: true;
}

/** A list of objects of one shape (SLO objectives). */
export interface ObjectListField<F extends Fields = Fields> extends FieldBase {
  readonly kind: 'object-list';
  readonly item: F;
  /** Item keys that must be present. */
  readonly required: readonly string[];
  readonly default: readonly never[];
}

/** A subtree: a feature, or a block inside one. */
export interface GroupField<F extends Fields = Fields> extends FieldBase {
  readonly kind: 'group';
  readonly fields: F;
}

export type LeafField =
  | BooleanField
  | IntegerField
  | NumberField
  | DurationField
  | StringField
  | EnumField
  | StringListField
  | StringMapField
  | ObjectListField;
export type Field = LeafField | GroupField;
export type Fields = { readonly [key: string]: Field };

/** The resolved value of a field: what the library reads. */
export type Resolved<F> =
  F extends GroupField<infer G>
    ? { readonly [K in keyof G]: Resolved<G[K]> }
    : F extends ObjectListField<infer G>
      ? ReadonlyArray<{ readonly [K in keyof G]: Resolved<G[K]> }>
      : F extends EnumField<infer V>
        ? V
        : F extends BooleanField
          ? boolean
          : F extends IntegerField | NumberField | DurationField
            ? F extends { optional: true }
              ? number | undefined
              : number
            : F extends StringField
              ? F extends { optional: true }
                ? string | undefined
                : string
              : F extends StringListField
                ? readonly string[]
                : F extends StringMapField
                  ? Readonly<Record<string, string>>
                  : never;

/** What code may pass for a field: any part of the tree, durations as text or milliseconds. */
export type Input<F> =
  F extends GroupField<infer G>
    ? { readonly [K in keyof G]?: Input<G[K]> }
    : F extends ObjectListField<infer G>
      ? ReadonlyArray<{ readonly [K in keyof G]?: Input<G[K]> }>
      : F extends EnumField<infer V>
        ? V
        : F extends BooleanField
          ? boolean
          : F extends DurationField
            ? string | number
            : F extends IntegerField | NumberField
              ? number
              : F extends StringField
                ? string
                : F extends StringListField
                  ? readonly string[]
                  : F extends StringMapField
                    ? Readonly<Record<string, string>>
                    : never;

// Builders: they keep the literal shape of each subtree so that the types above can be derived.

const MAX_DURATION_MS = 365 * 86_400_000;

function ms(text: string): number {
  const value = parseDurationMs(text);
  assert.ok(value !== undefined, `bad duration literal in the obs schema: ${text}`);
  return value;
}

export function group<const F extends Fields>(doc: string, fields: F): GroupField<F> {
  return { kind: 'group', doc, fields };
}

export function bool(value: boolean, doc: string): BooleanField {
  return { kind: 'boolean', default: value, doc };
}

export function integer(value: number, min: number, max: number, doc: string): IntegerField {
  return { kind: 'integer', default: value, min, max, doc };
}

export function ratio(value: number, doc: string): NumberField {
  return { kind: 'number', default: value, min: 0, max: 1, doc };
}

export function duration(value: string, doc: string, min = 0, max = MAX_DURATION_MS): DurationField {
  return { kind: 'duration', default: ms(value), min, max, doc };
}

export function optionalDuration(doc: string): DurationField & { readonly optional: true } {
  return { kind: 'duration', default: undefined, min: 0, max: MAX_DURATION_MS, doc, optional: true };
}

/** An HTTP header name (RFC 9110 token), and its form for error messages. */
export const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
export const HEADER_FORM = 'an HTTP header name (a token of letters, digits and symbols such as - and _)';

export function text(value: string, doc: string, pattern?: RegExp, form?: string): StringField {
  return pattern === undefined
    ? { kind: 'string', default: value, doc, form: 'non-empty text', pattern: /\S/ }
    : { kind: 'string', default: value, doc, pattern, form: form ?? `text matching ${pattern}` };
}

export function header(value: string, doc: string): StringField {
  return text(value, doc, HEADER_NAME, HEADER_FORM);
}

export function optionalText(
  doc: string,
  pattern: RegExp,
  form: string,
): StringField & { readonly optional: true } {
  return { kind: 'string', default: undefined, doc, pattern, form, optional: true };
}

/** Text without a default that an object-list item must carry (see `required`). */
export function requiredText(doc: string, pattern: RegExp, form: string): StringField {
  return { kind: 'string', default: undefined, doc, pattern, form };
}

export function oneOf<const V extends string>(
  values: readonly V[],
  value: NoInfer<V>,
  doc: string,
): EnumField<V> {
  return { kind: 'enum', values, default: value, doc };
}

export function list(
  value: readonly string[],
  doc: string,
  pattern?: RegExp,
  form?: string,
): StringListField {
  return pattern === undefined
    ? { kind: 'string-list', default: value, doc }
    : { kind: 'string-list', default: value, doc, pattern, ...(form === undefined ? {} : { form }) };
}

export function headerMap(doc: string): StringMapField {
  return { kind: 'string-map', default: {}, doc, keyForm: 'header name', lowerCaseKeys: true };
}

/** An absolute URL path, and its form for error messages. */
export const PATH = /^\/\S*$/;
export const PATH_FORM = 'a path starting with /';
