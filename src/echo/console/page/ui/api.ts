/**
 * The console's calls to the service: with the admin token from this tab's session storage, sent
 * only as `Authorization: Bearer`, never in a URL. A 401 locks the page (console.ts asks again).
 */

/** The session-storage key of the admin token (this tab only; gone when it closes). */
export const TOKEN_KEY = 'echo-chaos.console.token';

export function token(): string | null {
  return sessionStorage.getItem(TOKEN_KEY);
}

let onRefused: (message: string) => void = () => {};

/** What to do when the service refuses the token (console.ts shows the login). */
export function whenRefused(handler: (message: string) => void): void {
  onRefused = handler;
}

/** A call with the token; undefined when it was refused (the login shows). */
export async function apiFetch(path: string, init: RequestInit = {}): Promise<Response | undefined> {
  const headers = new Headers(init.headers);
  const saved = token();
  if (saved !== null) headers.set('authorization', `Bearer ${saved}`);
  const res = await fetch(path, { ...init, headers, cache: 'no-store' });
  if (res.status === 401) {
    onRefused(saved === null ? '' : 'The service refused that token.');
    return undefined;
  }
  return res;
}

/** A JSON body sent with the token. */
export function apiSend(path: string, method: string, body: unknown, headers: HeadersInit = {}) {
  const all = new Headers(headers);
  all.set('content-type', 'application/json');
  return apiFetch(path, { method, headers: all, body: JSON.stringify(body) });
}

/** What an error answer of the service says (`{"error": {"code", "message"}}`), else its status. */
export async function errorText(res: Response): Promise<string> {
  try {
    const body = (await res.json()) as { error?: { code?: string; message?: string } };
    if (body.error?.message !== undefined) return `${body.error.message} (${body.error.code ?? res.status})`;
  } catch {
    // Not JSON: the status says enough.
  }
  return `the service answered ${res.status}`;
}
