/**
 * What `GET /history` shows of a stored request when secrets are masked (the default,
 * `ECHO_HISTORY_SECRETS=mask`), with the rules of obs's logs (`maskText`, `isSecretName`): the
 * credentials headers and secret-named headers, the values of secret-named query parameters and
 * form fields, the secret-named members of a JSON body, and in every text (header values, the path,
 * query values, JSON strings, text bodies, the bytes of a binary body) bearer tokens, JWTs,
 * `password: ...` lines, emails and card numbers. `POST /replay` sends this view too unless
 * `ECHO_REPLAY_CREDENTIALS=original` (see {@link replayableEntry}).
 */
import { maskText } from '@echo-chaos/obs';
import { isSecretName, MASK, mayHoldSecret } from '@echo-chaos/obs/internal';
import type { HistoryEntry } from './history.ts';

/** Request headers that carry credentials, in lower case. */
export const SECRET_HEADERS: ReadonlySet<string> = new Set([
  'authorization',
  'proxy-authorization',
  'cookie',
  'set-cookie',
]);

/**
 * Headers whose value is a number by their protocol (a length, a budget, an epoch-millisecond
 * deadline), in lower case: a whole value of digits there is never a card number, however its
 * digits fall (one 13-digit timestamp in ten passes the Luhn check).
 */
const NUMERIC_HEADERS: ReadonlySet<string> = new Set([
  'content-length',
  'obs-timeout-ms',
  'obs-timeout-deadline-ms',
  'x-request-start',
]);

/** A header value as `GET /history` shows it: a number of a numeric header as it is, else masked text. */
function maskedHeaderValue(name: string, value: string): string {
  if (NUMERIC_HEADERS.has(name) && /^\d+$/.test(value)) return value;
  return maskText(value);
}

/** Whether a header of this name is a credential: shown as `[MASKED]`, not replayed when masked. */
export function isCredentialHeader(name: string): boolean {
  return SECRET_HEADERS.has(name.toLowerCase()) || isSecretName(name);
}

/** What a masked body too deep to print back shows instead. */
export const UNPRINTABLE = '[body with secrets masked: nests too deep to show]';

/** Deepest JSON body walked for secret-named members; deeper members are shown as they are. */
const MAX_DEPTH = 32;

/**
 * Characters masked by one `maskText` call: obs cuts a longer text at 64 Ki characters (a log line
 * needs no more), and a history body may hold up to `ECHO_HISTORY_MAX_BODY` (10 MiB), so a longer
 * text is masked in pieces of this size.
 */
const PIECE_CHARS = 32 * 1024;
/** Where a piece may end, looked for in its last characters: between pairs, lines or words. */
const PIECE_BREAKS = ['\n', '&', ',', ' '] as const;
const PIECE_LOOK_BACK_CHARS = 4096;

/** The media type of a form body, whose `name=value` pairs are masked like a query's. */
const FORM_TYPE = 'application/x-www-form-urlencoded';

/**
 * The entry as `GET /history` shows it with secrets masked: a copy; the stored entry is unchanged.
 * A pure function of the entry, linear in its size (a 64 KiB body costs about a millisecond).
 */
export function maskedEntry(entry: HistoryEntry): HistoryEntry {
  const plain = toPlain(entry);
  const headers: Record<string, string | string[] | undefined> = {};
  for (const [name, value] of Object.entries(plain.headers)) {
    if (value === undefined) headers[name] = value;
    else if (isCredentialHeader(name)) headers[name] = Array.isArray(value) ? value.map(() => MASK) : MASK;
    else
      headers[name] = Array.isArray(value)
        ? value.map((v) => maskedHeaderValue(name, v))
        : maskedHeaderValue(name, value);
  }
  const path = maskedPath(plain.path);
  const query = maskedPairs(plain.query);
  const q = plain.url.indexOf('?');
  return {
    ...plain,
    url: q === -1 ? path : `${path}?${query}`,
    path,
    query,
    headers,
    body:
      plain.body_encoding === 'utf8'
        ? maskedTextBody(plain.body, contentType(plain.headers))
        : maskedBinaryBody(plain.body),
  };
}

/**
 * The path of an entry as {@link maskedEntry} shows it; filters on `path` compare this, so a prefix
 * filter cannot spell out a masked secret a character at a time.
 */
export function maskedPath(path: string): string {
  return maskText(path);
}

/**
 * The entry `POST /replay` sends with `ECHO_REPLAY_CREDENTIALS=masked`: what {@link maskedEntry}
 * shows, without the headers it shows as `[MASKED]` (a credential made of the mask text would only
 * fail at the target, and look like one sent on purpose).
 */
export function replayableEntry(entry: HistoryEntry): HistoryEntry {
  const masked = maskedEntry(entry);
  const headers: Record<string, string | string[] | undefined> = {};
  for (const [name, value] of Object.entries(masked.headers)) {
    if (!isCredentialHeader(name)) headers[name] = value;
  }
  return { ...masked, headers };
}

function toPlain(entry: HistoryEntry): HistoryEntry {
  const withJson = entry as HistoryEntry & { toJSON?: () => HistoryEntry };
  return typeof withJson.toJSON === 'function' ? withJson.toJSON() : { ...entry };
}

function contentType(headers: HistoryEntry['headers']): string {
  const value = headers['content-type'];
  return (Array.isArray(value) ? (value[0] ?? '') : (value ?? '')).toLowerCase();
}

function maskedTextBody(body: string, type: string): string {
  if (type.startsWith(FORM_TYPE)) return maskedPairs(body);
  const first = body.trimStart()[0];
  if (first === '{' || first === '[') return maskedJsonBody(body);
  return maskLongText(body);
}

/** {@link maskText} for text of any length: in pieces that end between pairs, lines or words. */
function maskLongText(text: string): string {
  if (text.length <= PIECE_CHARS) return maskText(text);
  if (!mayHoldSecret(text)) return text;
  let out = '';
  for (let from = 0; from < text.length; ) {
    let to = Math.min(from + PIECE_CHARS, text.length);
    if (to < text.length) {
      const tail = text.slice(to - PIECE_LOOK_BACK_CHARS, to);
      for (const mark of PIECE_BREAKS) {
        const at = tail.lastIndexOf(mark);
        if (at !== -1) {
          to = to - PIECE_LOOK_BACK_CHARS + at + 1;
          break;
        }
      }
    }
    out += maskText(text.slice(from, to));
    from = to;
  }
  return out;
}

/**
 * `name=value&...` (a query, a form body) with the value of each secret-named parameter replaced
 * by `[MASKED]` (its name kept), and the other pairs masked as text. Names and values are compared
 * decoded (`api%5Fkey`, `+`); a masked value is written back percent-encoded, the mask readable.
 */
function maskedPairs(pairs: string): string {
  if (pairs === '') return pairs;
  const out: string[] = [];
  // Pairs with nothing encoded are masked together, in one `maskText` pass over the run: a pass per
  // pair costs more than the masking itself on a form of thousands of short fields.
  let run: string[] = [];
  const flush = () => {
    if (run.length > 0) out.push(maskLongText(run.join('&')));
    run = [];
  };
  for (const pair of pairs.split('&')) {
    const eq = pair.indexOf('=');
    const rawName = eq === -1 ? pair : pair.slice(0, eq);
    if (eq !== -1 && isSecretName(decodePart(rawName))) {
      flush();
      out.push(`${rawName}=${MASK}`);
    } else if (!pair.includes('%') && !pair.includes('+')) {
      run.push(pair);
    } else {
      flush();
      out.push(maskedEncodedPair(pair, eq));
    }
  }
  flush();
  const shown = out.join('&');
  return shown === pairs ? pairs : shown;
}

/** One percent-encoded pair, its name and value masked decoded and encoded again where changed. */
function maskedEncodedPair(pair: string, eq: number): string {
  const rawName = eq === -1 ? pair : pair.slice(0, eq);
  const rawValue = eq === -1 ? '' : pair.slice(eq + 1);
  const name = decodePart(rawName);
  const value = decodePart(rawValue);
  if (!mayHoldSecret(name) && !mayHoldSecret(value)) return pair;
  const maskedName = maskLongText(name);
  const shownName = maskedName === name ? rawName : encodePart(maskedName);
  if (eq === -1) return shownName;
  const maskedValue = maskLongText(value);
  return `${shownName}=${maskedValue === value ? rawValue : encodePart(maskedValue)}`;
}

function decodePart(part: string): string {
  if (!part.includes('%') && !part.includes('+')) return part;
  try {
    return decodeURIComponent(part.replaceAll('+', ' '));
  } catch {
    return part;
  }
}

/** Percent-encoded, but for the brackets and colon of a mask (`[MASKED:email]`). */
function encodePart(text: string): string {
  return encodeURIComponent(text).replace(/%5B|%5D|%3A/g, (c) => decodeURIComponent(c));
}

/** A JSON body with its secrets masked, written back compactly; a body without any as it is. */
function maskedJsonBody(body: string): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    // JSON cut at ECHO_HISTORY_MAX_BODY (or broken): no tree to walk, so the text is masked as text
    // (`"password": ...` pairs at any escaping, bearer tokens, ...).
    return maskLongText(body);
  }
  let masked = false;
  const maskString = (text: string): string => {
    // The cheap scan first: most strings of a body hold nothing to mask.
    if (!mayHoldSecret(text)) return text;
    const out = maskLongText(text);
    if (out !== text) masked = true;
    return out;
  };
  const walk = (value: unknown, depth: number): unknown => {
    if (typeof value === 'string') return maskString(value);
    // A card number sent as a JSON number (13 digits or more; a double holds 16 exactly).
    if (typeof value === 'number') return Math.abs(value) >= 1e12 ? maskedNumber(value) : value;
    if (typeof value !== 'object' || value === null) return value;
    if (depth > MAX_DEPTH) {
      // Deeper than the walk goes: hidden when its text holds anything that looks like a secret.
      let text: string;
      try {
        text = JSON.stringify(value);
      } catch {
        masked = true;
        return MASK;
      }
      if (maskLongText(text) === text) return value;
      masked = true;
      return MASK;
    }
    if (Array.isArray(value)) return value.map((item) => walk(item, depth + 1));
    // No prototype: a member named `__proto__` stays a member.
    const out: Record<string, unknown> = Object.create(null);
    for (const [key, member] of Object.entries(value)) {
      if (isSecretName(key)) {
        masked = true;
        out[key] = MASK;
      } else out[maskString(key)] = walk(member, depth + 1);
    }
    return out;
  };
  const maskedNumber = (value: number): unknown => {
    const text = String(value);
    const out = maskText(text);
    if (out === text) return value;
    masked = true;
    return out;
  };
  const result = walk(parsed, 0);
  if (!masked) return body;
  try {
    return JSON.stringify(result);
  } catch {
    // Members below MAX_DEPTH are kept as they are, and one nesting thousands deep cannot be
    // printed back (a RangeError, and GET /history a 500): the secrets stay hidden with the rest.
    return UNPRINTABLE;
  }
}

/**
 * A body that is not UTF-8 text is shown as base64; decoded, it may still carry a secret next to
 * the bytes that made it binary. Its bytes are masked as Latin-1 text (one character a byte, so
 * every other byte stays as sent) and shown as base64 again.
 */
function maskedBinaryBody(base64: string): string {
  const text = Buffer.from(base64, 'base64').toString('latin1');
  const masked = maskLongText(text);
  return masked === text ? base64 : Buffer.from(masked, 'latin1').toString('base64');
}
