/**
 * Masking of personal data and secrets, as pure functions: in text ({@link maskText}), in any value
 * ({@link maskSecrets}) and in a finished log line ({@link maskLogLine}). Every function never
 * throws and its work is bounded (see {@link MASK_LIMITS}). Structured logs (`logging.ts`) mask
 * every line with it; exception fingerprints and wide events mask what they record.
 */

/** What a masked value is replaced with. */
export const MASK = '[MASKED]';
/** Replacements of secrets found in text, by kind. */
export const MASKS = {
  email: '[MASKED:email]',
  bearer: 'Bearer [MASKED]',
  jwt: '[MASKED:jwt]',
  card: '[MASKED:card]',
  ssn: '[MASKED:ssn]',
} as const;

/** The bounds of one {@link maskSecrets} call: beyond them values are cut, never left unmasked. */
export const MASK_LIMITS = {
  /** Characters of one string masked; the rest is replaced with a truncation note. */
  maxStringChars: 64 * 1024,
  /** Nesting depth of objects, arrays and JSON text inside strings. */
  maxDepth: 16,
  /** Values (object members, array items) visited; later ones are replaced. */
  maxNodes: 10_000,
  /** Characters of all strings of one value masked together; later strings are replaced. */
  maxTotalChars: 1024 * 1024,
  /** Characters of one log line parsed for masking; a longer line is replaced by a notice. */
  maxLineChars: 4 * 1024 * 1024,
} as const;

// ---------------------------------------------------------------------------------------------
// Secret names

/** Names (lower case, without `-`, `_`, `.`) whose values are secrets, and that end a secret name. */
const SECRET_SUFFIXES = [
  'password',
  'passwd',
  'secret',
  'token',
  'apikey',
  'privatekey',
  'authorization',
  'cookie',
  'sessionid',
  'secretaccesskey',
] as const;
const SECRET_EXACT = new Set(['pwd']);

/** The same names in text: an optional prefix of name characters, then one of the suffixes. */
const SECRET_NAME_SOURCE =
  '(?:pwd|[A-Za-z0-9_.-]{0,48}?(?:pass(?:word|wd)|secret|token|api[-_.]?key|private[-_.]?key|authori[sz]ation|cookie|session[-_.]?id|secret[-_.]?access[-_.]?key))';

/**
 * Whether a field, header or parameter of this name holds a secret: `password`, `passwd`, `secret`,
 * `token`, `api_key`/`apikey`, `authorization`, `cookie`, `set-cookie`, `private_key`,
 * `client_secret` and names ending with one of them (`x-api-key`, `access_token`,
 * `db_password`), in any case.
 */
export function isSecretName(name: string): boolean {
  if (name.length > 128) return false;
  const key = name.toLowerCase().replace(/[-_.\s]/g, '');
  if (SECRET_EXACT.has(key)) return true;
  for (const suffix of SECRET_SUFFIXES) if (key.endsWith(suffix)) return true;
  return false;
}

// ---------------------------------------------------------------------------------------------
// Text

/** A cheap test: could this text hold anything {@link maskText} replaces? */
const MAYBE_SECRET =
  /@|bearer|eyJ|pwd|pass(?:word|wd)|secret|token|api[-_.]?key|private[-_.]?key|authori[sz]ation|cookie|session[-_.]?id|\d{3}-\d{2}-\d{4}/i;
/** Runs of 13 to 19 digits, single spaces or dashes between them allowed. */
const CARD = /(?<![\d])\d(?:[ -]?\d){12,18}(?![\d])/g;
const EMAIL =
  /(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]{1,64}@(?:[A-Za-z0-9-]{1,63}\.){1,8}[A-Za-z]{2,24}(?![A-Za-z0-9-])/g;
const BEARER = /\bbearer\s+[A-Za-z0-9\-._~+/]+=*/gi;
const JWT = /\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*/g;
const SSN = /(?<![\d-])(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}(?![\d-])/g;
/** `"password": ...` in JSON text, also escaped once or more (`\"password\":`). */
const JSON_PAIR = new RegExp(`(?<!\\\\)(\\\\*)"(${SECRET_NAME_SOURCE})\\1"\\s*:\\s*`, 'gi');
/** `password=...` in query strings, form bodies and text. */
const QUERY_PAIR = new RegExp(`(?<![A-Za-z0-9_.-])(${SECRET_NAME_SOURCE})=[^&\\s"'<>;,]*`, 'gi');
/** `Authorization: Basic ...`, `password: hunter2`: a secret name and a colon mask the rest of the line. */
const COLON_PAIR = new RegExp(`(?<![A-Za-z0-9_.-])(${SECRET_NAME_SOURCE})([ \\t]*:[ \\t]*)[^\\r\\n]+`, 'gi');

/**
 * Keywords (lower case) whose presence may mean a secret, by their first letter: a superset of what
 * {@link MAYBE_SECRET} matches (`pass` for `password`/`passwd`, `api` for `api-key`, …) and
 * `buffer` for a serialized Buffer.
 */
const SECRET_STARTS: ReadonlyArray<readonly string[] | undefined> = (() => {
  const table: Array<string[] | undefined> = [];
  const words = ['bearer', 'buffer', 'eyj', 'pwd', 'pass', 'private', 'secret', 'session', 'token'];
  for (const word of [...words, 'api', 'authori', 'cookie']) {
    const first = word.charCodeAt(0);
    const list = table[first] ?? [];
    list.push(word);
    table[first] = list;
  }
  return table;
})();

/** What each ASCII character is to {@link mayHoldSecret}. */
const OTHER = 0;
const DIGIT = 1;
const SEPARATOR = 2;
const AT = 3;
const WORD_START = 4;
const CHARS = (() => {
  const table = new Uint8Array(128);
  for (let c = 0x30; c <= 0x39; c++) table[c] = DIGIT;
  table[0x20] = SEPARATOR;
  table[0x2d] = SEPARATOR;
  table[0x40] = AT;
  SECRET_STARTS.forEach((words, c) => {
    if (words === undefined) return;
    table[c] = WORD_START;
    table[c - 0x20] = WORD_START;
  });
  return table;
})();

/**
 * The first two letters (lower case) of each keyword of {@link SECRET_STARTS}, as `first * 128 +
 * second`: most letters that start a keyword in a log line are not followed by its second letter,
 * and this tells so in one look instead of a comparison per keyword.
 */
const SECRET_PAIRS = (() => {
  const table = new Uint8Array(128 * 128);
  SECRET_STARTS.forEach((words, c) => {
    for (const word of words ?? []) table[c * 128 + word.charCodeAt(1)] = 1;
  });
  return table;
})();

function startsWithWord(text: string, at: number, word: string): boolean {
  if (at + word.length > text.length) return false;
  // ASCII letters only: `| 0x20` lowers A-Z and maps no other character onto a-z.
  for (let k = 1; k < word.length; k++)
    if ((text.charCodeAt(at + k) | 0x20) !== word.charCodeAt(k)) return false;
  return true;
}

/**
 * A fast, one-pass test that is true whenever {@link MAYBE_SECRET}, {@link hasCard} or a serialized
 * Buffer could match (it may be true when none does): an `@`, a keyword of {@link SECRET_STARTS} in
 * any case, 13 digits in a row with single spaces or dashes between them (the fewest a card number
 * has), or digit groups shaped like an SSN (`123-45-6789`). Almost every log line holds none of
 * them (a request id's UUID cannot: its groups are 4 characters or more), so masking it costs this
 * scan.
 */
export function mayHoldSecret(text: string): boolean {
  // A run of digits with single spaces or dashes between them (a card: 13 to 19 digits) ...
  let run = 0;
  let separated = false;
  // ... and the lengths of the last three groups of digits between single dashes (an SSN: a group
  // of 3 or more digits, one of exactly 2, one of 4 or more, as `\d{3}-\d{2}-\d{4}` matches).
  let before = 0;
  let previous = 0;
  let group = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    const kind = c < 0x80 ? CHARS[c] : OTHER;
    if (kind === DIGIT) {
      if (++run >= 13) return true;
      separated = false;
      if (++group >= 4 && previous === 2 && before >= 3) return true;
      continue;
    }
    if (kind === SEPARATOR && run > 0 && !separated) {
      separated = true;
      if (c === 0x2d && group > 0) {
        before = previous;
        previous = group;
        group = 0;
      } else {
        before = previous = group = 0;
      }
      continue;
    }
    run = 0;
    separated = false;
    before = previous = group = 0;
    if (kind === AT) return true;
    if (kind === WORD_START) {
      // ASCII letters only: `| 0x20` lowers A-Z and maps no other character onto a-z.
      const next = i + 1 < text.length ? text.charCodeAt(i + 1) | 0x20 : 0;
      if (next >= 0x80 || SECRET_PAIRS[(c | 0x20) * 128 + next] === 0) continue;
      // Indexed, not for-of: this runs on every log line, and the iterator was allocated each time.
      const words = SECRET_STARTS[c | 0x20]!;
      for (let w = 0; w < words.length; w++) if (startsWithWord(text, i, words[w]!)) return true;
    }
  }
  return false;
}

/** The Luhn checksum of a digit string: how card numbers are told from order ids. */
export function luhnValid(digits: string): boolean {
  let sum = 0;
  let double = false;
  for (let i = digits.length - 1; i >= 0; i--) {
    let d = digits.charCodeAt(i) - 48;
    if (d < 0 || d > 9) return false;
    if (double) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
    double = !double;
  }
  return sum % 10 === 0;
}

function hasCard(text: string): boolean {
  // exec on the one regex rather than matchAll, which clones the regex on every call (a cost on
  // every log line).
  CARD.lastIndex = 0;
  for (let match = CARD.exec(text); match !== null; match = CARD.exec(text)) {
    if (luhnValid(match[0].replace(SEPARATORS, ''))) {
      CARD.lastIndex = 0;
      return true;
    }
  }
  return false;
}
const SEPARATORS = /[ -]/g;

/** Masks the values after `"secret-name":` in JSON text, at any level of escaping. */
function maskJsonPairs(text: string): string {
  let out = '';
  let from = 0;
  JSON_PAIR.lastIndex = 0;
  for (let m = JSON_PAIR.exec(text); m !== null; m = JSON_PAIR.exec(text)) {
    const slashes = m[1] ?? '';
    const valueStart = m.index + m[0].length;
    let valueEnd: number;
    if (text.startsWith(`${slashes}"`, valueStart)) {
      // A string: up to the closing quote of the same escaping level (or the end of a cut text).
      const open = valueStart + slashes.length + 1;
      if (slashes === '') {
        let i = open;
        while (i < text.length && text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
        valueEnd = Math.min(i + 1, text.length);
      } else {
        const close = text.indexOf(`${slashes}"`, open);
        valueEnd = close === -1 ? text.length : close + slashes.length + 1;
      }
    } else {
      // A number, literal, object or array: masked up to the next separator at this level.
      let i = valueStart;
      let depth = 0;
      while (i < text.length) {
        const c = text[i];
        if (c === '{' || c === '[') depth++;
        else if (c === '}' || c === ']') {
          if (depth === 0) break;
          depth--;
        } else if (c === ',' && depth === 0) break;
        else if (c === '"' && depth === 0 && slashes === '') break;
        i++;
      }
      valueEnd = i;
    }
    out += `${text.slice(from, valueStart)}${slashes}"${MASK}${slashes}"`;
    from = valueEnd;
    JSON_PAIR.lastIndex = Math.max(valueEnd, JSON_PAIR.lastIndex);
  }
  return from === 0 ? text : out + text.slice(from);
}

/**
 * Masks secrets in text: values of secret-named fields (`"password":"x"` in JSON text, escaped or
 * not; `password=x` in query strings and forms; `Authorization: Basic x` to the end of the line),
 * bearer tokens, JWTs, emails, card numbers (13 to 19 digits, spaces or dashes allowed, that pass the
 * Luhn check, so order ids stay) and US social security numbers (`123-45-6789`). Text longer than
 * {@link MASK_LIMITS}`.maxStringChars` is cut. Never throws.
 */
export function maskText(text: string): string {
  try {
    let s = text;
    let note = '';
    if (s.length > MASK_LIMITS.maxStringChars) {
      // Cut before the last word at the limit, so that no secret is left half-visible.
      let cutAt = MASK_LIMITS.maxStringChars;
      const lookBack = s.slice(cutAt - 128, cutAt).search(/[^\s,;&'"<>(){}[\]=:]*$/);
      if (lookBack > 0) cutAt = cutAt - 128 + lookBack;
      note = `…[TRUNCATED ${s.length - cutAt} chars]`;
      s = s.slice(0, cutAt);
    }
    if (!mayHoldSecret(s) || (!MAYBE_SECRET.test(s) && !hasCard(s))) return s + note;
    s = maskJsonPairs(s);
    s = s.replace(QUERY_PAIR, (_all, name: string) => `${name}=${MASK}`);
    s = s.replace(COLON_PAIR, (_all, name: string, colon: string) => `${name}${colon}${MASK}`);
    s = s.replace(BEARER, MASKS.bearer);
    s = s.replace(JWT, MASKS.jwt);
    s = s.replace(EMAIL, MASKS.email);
    s = s.replace(CARD, (digits) => (luhnValid(digits.replace(/[ -]/g, '')) ? MASKS.card : digits));
    s = s.replace(SSN, MASKS.ssn);
    return s + note;
  } catch {
    return MASK;
  }
}

// ---------------------------------------------------------------------------------------------
// Values

interface Budget {
  nodes: number;
  chars: number;
  readonly seen: WeakSet<object>;
}

/** `{"type":"Buffer","data":[...]}`: a Buffer after JSON serialization. */
function isSerializedBuffer(value: object): value is { type: 'Buffer'; data: number[] } {
  const v = value as { type?: unknown; data?: unknown };
  return v.type === 'Buffer' && Array.isArray(v.data) && Object.keys(value).length === 2;
}

function bytesToText(bytes: Uint8Array | readonly number[]): string {
  const limit = MASK_LIMITS.maxStringChars;
  const head = bytes.length > limit ? bytes.slice(0, limit) : bytes;
  const text = Buffer.from(head as Uint8Array).toString('utf8');
  return bytes.length > limit ? `${text}…[TRUNCATED ${bytes.length - limit} bytes]` : text;
}

function maskString(text: string, depth: number, budget: Budget): string {
  if (budget.chars <= 0) return '[TRUNCATED]';
  budget.chars -= Math.min(text.length, MASK_LIMITS.maxStringChars);
  const start = text.trimStart();
  if ((start.startsWith('{') || start.startsWith('[')) && text.length <= MASK_LIMITS.maxStringChars) {
    // JSON text inside a string (a logged body): masked as a structure, written back as JSON.
    try {
      const parsed: unknown = JSON.parse(text);
      if (typeof parsed === 'object' && parsed !== null) {
        return JSON.stringify(maskValue(parsed, depth + 1, budget));
      }
    } catch {
      // not JSON after all (or cut): the text patterns below cover JSON-like pairs too
    }
  }
  return maskText(text);
}

function maskValue(value: unknown, depth: number, budget: Budget): unknown {
  if (budget.nodes-- <= 0) return '[TRUNCATED]';
  switch (typeof value) {
    case 'string':
      return maskString(value, depth, budget);
    case 'object':
      break;
    default:
      return value;
  }
  if (value === null) return null;
  if (depth >= MASK_LIMITS.maxDepth) return '[TRUNCATED: too deep]';
  if (budget.seen.has(value)) return '[Circular]';
  budget.seen.add(value);
  if (value instanceof Uint8Array) return maskString(bytesToText(value), depth, budget);
  if (value instanceof Date) return value;
  if (value instanceof Error) {
    const code = (value as { code?: unknown }).code;
    return {
      type: value.name,
      message: maskText(value.message),
      ...(value.stack === undefined ? {} : { stack: maskText(value.stack) }),
      ...(typeof code === 'string' || typeof code === 'number' ? { code } : {}),
    };
  }
  if (Array.isArray(value) || value instanceof Set) return maskItems(value, depth, budget);
  if (isSerializedBuffer(value)) return maskString(bytesToText(value.data), depth, budget);
  const toJson = (value as { toJSON?: unknown }).toJSON;
  if (typeof toJson === 'function') return maskValue(toJson.call(value), depth + 1, budget);
  const entries = value instanceof Map ? value.entries() : Object.entries(value);
  const out: Record<string, unknown> = {};
  for (const [rawKey, item] of entries) {
    if (budget.nodes <= 0) {
      out['[TRUNCATED]'] = 'more members';
      break;
    }
    const key = String(rawKey);
    const maskedKey = maskText(key);
    if (isSecretName(key) && item !== null && item !== undefined && item !== '') {
      budget.nodes--;
      out[maskedKey] = MASK;
    } else {
      out[maskedKey] = maskValue(item, depth + 1, budget);
    }
  }
  return out;
}

function maskItems(items: Iterable<unknown>, depth: number, budget: Budget): unknown[] {
  const out: unknown[] = [];
  for (const item of items) {
    if (budget.nodes <= 0) {
      out.push('[TRUNCATED: more items]');
      break;
    }
    out.push(maskValue(item, depth + 1, budget));
  }
  return out;
}

/**
 * Returns a masked copy of any value, never the value itself: strings through {@link maskText}
 * (JSON text inside a string is masked as JSON and stays JSON), Buffers and byte arrays as UTF-8
 * text, errors as `{type, message, stack, code}`, maps and sets as objects and arrays, and the value
 * of every secret-named member ({@link isSecretName}) replaced with `[MASKED]` whatever its type,
 * in nested objects too. Numbers and booleans pass unchanged. Work is bounded by
 * {@link MASK_LIMITS}; cycles become `[Circular]`. Never throws.
 */
export function maskSecrets(value: string): string;
/** A masked copy of any value, by the rules above; never the value itself, never throws. */
export function maskSecrets(value: unknown): unknown;
export function maskSecrets(value: unknown): unknown {
  try {
    return maskValue(value, 0, {
      nodes: MASK_LIMITS.maxNodes,
      chars: MASK_LIMITS.maxTotalChars,
      seen: new WeakSet(),
    });
  } catch {
    return MASK;
  }
}

/**
 * Masks one finished log line (pino's JSON, with or without its newline). A line with nothing that
 * could be a secret is returned as it is; a line that is not JSON is masked as text. Never throws.
 */
export function maskLogLine(line: string): string {
  try {
    if (!mayHoldSecret(line)) return line;
    if (!MAYBE_SECRET.test(line) && !line.includes('"type":"Buffer"') && !hasCard(line)) return line;
    const newline = line.endsWith('\n') ? '\n' : '';
    if (line.length > MASK_LIMITS.maxLineChars) {
      return `${JSON.stringify({ level: 40, time: Date.now(), msg: `[obs: a log line of ${line.length} characters was dropped: too long to mask]` })}${newline}`;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(line);
    } catch {
      return maskText(line);
    }
    return `${JSON.stringify(maskSecrets(parsed))}${newline}`;
  } catch {
    return `${JSON.stringify({ level: 40, msg: '[obs: a log line was dropped: it could not be masked]' })}\n`;
  }
}
