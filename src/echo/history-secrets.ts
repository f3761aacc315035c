/**
 * What `GET /history` shows of a stored request when secrets are masked (the default,
 * `ECHO_HISTORY_SECRETS=mask`): the credentials headers and the secret-named members of a JSON body
 * are replaced with `[MASKED]`. Only the view is masked: `POST /replay` re-sends the original.
 */
import { isSecretName, MASK } from '@echo-chaos/obs';
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
    body: entry.body_encoding === 'utf8' ? maskedJsonBody(entry.body) : entry.body,
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
    return body;
  }
  let masked = false;
  const walk = (value: unknown, depth: number): unknown => {
    if (depth > MAX_DEPTH || typeof value !== 'object' || value === null) return value;
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
