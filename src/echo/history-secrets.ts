/**
 * What `GET /history` shows of a stored request when secrets are masked (the default,
 * `ECHO_HISTORY_SECRETS=mask`): the credentials headers and the secret-named members of a JSON body
 * are replaced with `[MASKED]`. Only the view is masked: `POST /replay` re-sends the original.
 */
import { isSecretName, MASK, maskText } from '@echo-chaos/obs';
import type { HistoryEntry } from './history.ts';

/** Request headers that carry credentials, in lower case. */
export const SECRET_HEADERS: ReadonlySet<string> = new Set([
  'authorization',
  'proxy-authorization',
  'cookie',
  'set-cookie',
]);

/** What a masked body too deep to print back shows instead. */
export const UNPRINTABLE = '[body with secrets masked: nests too deep to show]';

/** Deepest JSON body walked for secret-named members; deeper members are shown as they are. */
const MAX_DEPTH = 32;

/** The entry as `GET /history` shows it with secrets masked: a copy; the stored entry is unchanged. */
export function maskedEntry(entry: HistoryEntry): HistoryEntry {
  const headers: Record<string, string | string[] | undefined> = {};
  for (const [name, value] of Object.entries(entry.headers)) {
    headers[name] =
      value !== undefined && (SECRET_HEADERS.has(name) || isSecretName(name))
        ? Array.isArray(value)
          ? value.map(() => MASK)
          : MASK
        : value;
  }
  return {
    ...toPlain(entry),
    headers,
    body: entry.body_encoding === 'utf8' ? maskedJsonBody(entry.body) : maskedBinaryBody(entry.body),
  };
}

function toPlain(entry: HistoryEntry): HistoryEntry {
  const withJson = entry as HistoryEntry & { toJSON?: () => HistoryEntry };
  return typeof withJson.toJSON === 'function' ? withJson.toJSON() : { ...entry };
}

/** A JSON body with its secret-named members masked, written back compactly; other text as it is. */
function maskedJsonBody(body: string): string {
  const first = body.trimStart()[0];
  if (first !== '{' && first !== '[') return body;
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    // JSON cut at ECHO_HISTORY_MAX_BODY (or broken): no tree to walk, so the text is masked as text
    // (`"password": ...` pairs at any escaping, bearer tokens, ...).
    return maskText(body);
  }
  let masked = false;
  const walk = (value: unknown, depth: number): unknown => {
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
      if (maskText(text) === text) return value;
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
      } else out[key] = walk(member, depth + 1);
    }
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
 * A body that is not UTF-8 text is shown as base64; decoded, it may still carry a secret-named
 * field or a token next to the bytes that made it binary. Such a body is hidden whole.
 */
function maskedBinaryBody(base64: string): string {
  const text = Buffer.from(base64, 'base64').toString('latin1');
  return maskText(text) === text ? base64 : BINARY_WITH_SECRETS;
}

export const BINARY_WITH_SECRETS = '[binary body with secrets: masked]';
