/**
 * Settings from the environment, described by one TypeBox schema per setting (docs/adr/0045-one-
 * settings-mechanism.md): the schema gives the value's type (`SettingsOf`), its validation, the
 * form a message and a reference table state, and its default. {@link loadSettings} reads every
 * setting at once and returns every problem, one line each, naming the variable, what it got (never
 * a secret's value) and what was expected; a table of the settings for a docs page comes from the
 * same definitions ({@link settingsRows}), so neither can drift from the code.
 *
 * ```ts
 * const SETTINGS = {
 *   port: setting('PORT', Type.Integer({ minimum: 0, maximum: 65535, default: 8081 }), 'Port of /metrics'),
 *   prometheusUrl: setting('PROMETHEUS_URL', Type.Optional(Type.String({ format: 'http-url' })), '...'),
 * };
 * const config = loadSettings(SETTINGS, process.env); // { ok: true, value } or { ok: false, problems }
 * ```
 */
import {
  FormatRegistry,
  type Static,
  type TLiteral,
  type TLiteralValue,
  type TSchema,
  Type,
  TypeGuard,
} from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';

/** One setting: its variable, its schema (with its `default`, when it has one) and its meaning. */
export interface Setting<S extends TSchema = TSchema> {
  /** The environment variable (`PORT`). */
  readonly env: string;
  readonly schema: S;
  /** One sentence for the reference table. */
  readonly description: string;
  /** What an accepted value looks like, for messages and the table; derived from the schema unless given. */
  readonly form: string;
  /** A credential: a message never quotes its value. */
  readonly secret: boolean;
  /** Trim the text before reading it (tokens and URLs from a Secret often end in a newline). */
  readonly trim: boolean;
  /** What the table's default column says when the schema has no `default` (`unset`, or what unset means). */
  readonly unset: string;
  /** Read the text in lower case (names a standard spells in either case, `OTLP` and `otlp`). */
  readonly lowercase: boolean;
  /** Reads the text instead of the schema's own conversion (see {@link SettingOptions.decode}). */
  readonly decode: Decoder | undefined;
  /** A set but empty variable is read as the empty text, not taken as unset. */
  readonly emptyIsValue: boolean;
  /** The default as a user writes it (`300s`), read like a value when the variable is unset. */
  readonly defaultText: string | undefined;
}

/** What a decoder answers: the value, or that the text is not one. */
export type Decoded = { readonly ok: true; readonly value: unknown } | { readonly ok: false };

/** Reads a setting's text into its value, for forms a JSON Schema cannot state. */
export type Decoder = (text: string) => Decoded;

/** What {@link setting} takes besides the variable, the schema and the description. */
export interface SettingOptions {
  /** What an accepted value looks like (default: derived from the schema). */
  readonly form?: string;
  /** A credential: never quoted in a message. */
  readonly secret?: boolean;
  /** Trim the text before reading it. Default false. */
  readonly trim?: boolean;
  /** What the table says for a setting without a `default` (default `unset`). */
  readonly unset?: string;
  /** Read the text in lower case. Default false. */
  readonly lowercase?: boolean;
  /**
   * Reads the text, for a form a JSON Schema cannot state (a duration `300s`, a delay spec, a URL
   * with rules of its own, a list of address blocks); the schema then checks and types what it
   * returns (`Type.Unsafe<URL>(Type.Any())` for an object).
   */
  readonly decode?: Decoder;
  /** Read a set but empty variable as the empty text (which the decoder may accept). Default false. */
  readonly emptyIsValue?: boolean;
  /**
   * The default as a user writes it (`300s`, `10485760`): the table shows it, and an unset variable
   * is read from it, so the default is stated once, in the variable's own form.
   */
  readonly defaultText?: string;
}

/** A setting: `env` read through `schema` (an unset or empty variable takes the schema's `default`). */
export function setting<S extends TSchema>(
  env: string,
  schema: S,
  description: string,
  options: SettingOptions = {},
): Setting<S> {
  return {
    env,
    schema,
    description,
    form: options.form ?? formOf(schema),
    secret: options.secret === true,
    trim: options.trim === true,
    unset: options.unset ?? 'unset',
    lowercase: options.lowercase === true,
    decode: options.decode,
    emptyIsValue: options.emptyIsValue === true,
    defaultText: options.defaultText,
  };
}

/** A set of settings, by the key each has in the loaded value. */
export type SettingsDefinition = Readonly<Record<string, Setting>>;

/** The value {@link loadSettings} returns for a definition: each key with its schema's type. */
export type SettingsOf<D extends SettingsDefinition> = {
  readonly [K in keyof D]: Static<D[K]['schema']>;
};

/** What {@link loadSettings} answers. */
export type SettingsResult<D extends SettingsDefinition> =
  | { readonly ok: true; readonly value: SettingsOf<D> }
  | {
      readonly ok: false;
      readonly problems: readonly string[];
      /** The settings that were valid (for checks between settings that report with the rest). */
      readonly partial: Partial<SettingsOf<D>>;
    };

function isHttpUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '';
  } catch {
    return false;
  }
}

if (!FormatRegistry.Has('http-url')) FormatRegistry.Set('http-url', isHttpUrl);

/** A string that `new URL` reads with the http or https scheme and a host (format `http-url`). */
export const HTTP_URL = Type.String({ format: 'http-url' });

/** A decimal number as written in a variable: digits, an optional sign and fraction, nothing else. */
const NUMBER_TEXT = /^[+-]?(?:\d+\.?\d*|\.\d+)$/;

/** The text of a variable as the value its schema takes, or the text itself when it is not one. */
function convert(schema: TSchema, text: string): unknown {
  if (TypeGuard.IsInteger(schema) || TypeGuard.IsNumber(schema))
    return NUMBER_TEXT.test(text) ? Number(text) : text;
  if (TypeGuard.IsBoolean(schema)) return text === 'true' ? true : text === 'false' ? false : text;
  return text;
}

/**
 * The values of a union of literals (`Type.Union([Type.Literal('a'), Type.Literal('b')])`), in
 * order, or `undefined` for any other schema. obs's `obs.*` tree reads its enumerations with it too.
 */
export function literalsOf(schema: TSchema): TLiteralValue[] | undefined {
  if (!TypeGuard.IsUnion(schema)) return undefined;
  const members: TSchema[] = schema.anyOf;
  return members.every((member): member is TLiteral => TypeGuard.IsLiteral(member))
    ? members.map((member) => member.const)
    : undefined;
}

/** The form an accepted value takes, in words, from what the schema says. */
export function formOf(schema: TSchema): string {
  if (TypeGuard.IsInteger(schema) || TypeGuard.IsNumber(schema)) {
    // The service's wording since its start: `integer 0-65535`.
    const kind = TypeGuard.IsInteger(schema) ? 'integer' : 'number';
    const { minimum, maximum } = schema;
    if (minimum !== undefined && maximum !== undefined) return `${kind} ${minimum}-${maximum}`;
    if (minimum !== undefined) return `${kind} >= ${minimum}`;
    if (maximum !== undefined) return `${kind} <= ${maximum}`;
    return kind;
  }
  if (TypeGuard.IsBoolean(schema)) return '`true` or `false`';
  const literals = literalsOf(schema);
  if (literals !== undefined) return `one of ${literals.map(String).join(', ')}`;
  if (TypeGuard.IsString(schema)) {
    if (schema.format === 'http-url') return 'an http or https URL';
    return schema.minLength !== undefined && schema.minLength > 0 ? 'a non-empty text' : 'a text';
  }
  return 'a value of its schema';
}

function readOne(definition: Setting, raw: string): { ok: true; value: unknown } | { ok: false } {
  const trimmed = definition.trim ? raw.trim() : raw;
  const text = definition.lowercase ? trimmed.toLowerCase() : trimmed;
  let converted: unknown;
  if (definition.decode === undefined) {
    converted = convert(definition.schema, text);
  } else {
    const decoded = definition.decode(text);
    if (!decoded.ok) return { ok: false };
    converted = decoded.value;
  }
  return Value.Check(definition.schema, converted) ? { ok: true, value: converted } : { ok: false };
}

/** The value of an unset variable: its default text read as a value, else the schema's `default`. */
function defaultOf(key: string, entry: Setting): unknown {
  if (entry.defaultText === undefined) return entry.schema.default;
  const read = readOne(entry, entry.defaultText);
  // A definition whose own default is refused is a bug of the definition, not of the environment.
  if (!read.ok)
    throw new TypeError(
      `setting ${key} (${entry.env}): its default ${JSON.stringify(entry.defaultText)} is not a valid value`,
    );
  return read.value;
}

/**
 * Reads every setting of `definition` from `env`. An unset or empty variable takes its schema's
 * `default` (none: `undefined`, which the schema must allow with `Type.Optional`). Every problem is
 * returned at once, one line each: `PORT="x" is invalid: expected integer 0-65535` (a
 * secret's value is never shown: `TOKEN is invalid: expected ...`).
 */
export function loadSettings<D extends SettingsDefinition>(
  definition: D,
  env: Readonly<Record<string, string | undefined>>,
): SettingsResult<D> {
  const problems: string[] = [];
  const value: Record<string, unknown> = {};
  for (const [key, entry] of Object.entries(definition)) {
    const raw = env[entry.env];
    const empty = raw !== undefined && (entry.trim ? raw.trim() : raw) === '';
    const given = raw === undefined || (empty && !entry.emptyIsValue) ? undefined : raw;
    if (given === undefined) {
      value[key] = defaultOf(key, entry);
      continue;
    }
    const read = readOne(entry, given);
    if (read.ok) {
      value[key] = read.value;
    } else {
      // The service's form since its first release: `PORT="abc" is invalid: expected ...`.
      const shown = entry.secret ? entry.env : `${entry.env}=${JSON.stringify(given)}`;
      problems.push(`${shown} is invalid: expected ${entry.form.replaceAll('`', '')}`);
    }
  }
  return problems.length > 0
    ? { ok: false, problems, partial: value as Partial<SettingsOf<D>> }
    : { ok: true, value: value as SettingsOf<D> };
}

/** One row of a settings table: the variable, its default (Markdown), its form, its meaning. */
export interface SettingRow {
  readonly env: string;
  readonly default: string;
  readonly form: string;
  readonly description: string;
}

/** The rows of a reference table of `definition`, in its order. */
export function settingsRows(definition: SettingsDefinition): SettingRow[] {
  return Object.values(definition).map((entry) => ({
    env: entry.env,
    default:
      entry.defaultText !== undefined
        ? entry.defaultText === ''
          ? entry.unset
          : `\`${entry.defaultText}\``
        : entry.schema.default === undefined
          ? entry.unset
          : `\`${String(entry.schema.default)}\``,
    form: entry.form,
    description: entry.description,
  }));
}

/** The rows as a Markdown table (variable, default, accepted values, meaning). */
export function settingsTable(definition: SettingsDefinition): string {
  const cell = (text: string) => text.replaceAll('|', '\\|').replaceAll('\n', ' ');
  const lines = ['| Variable | Default | Accepted | Meaning |', '| --- | --- | --- | --- |'];
  for (const row of settingsRows(definition)) {
    lines.push(`| \`${row.env}\` | ${cell(row.default)} | ${cell(row.form)} | ${cell(row.description)} |`);
  }
  return lines.join('\n');
}
