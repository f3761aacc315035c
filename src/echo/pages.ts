import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';
import { registerConsole } from './console/index.ts';
import { registerSse } from './sse.ts';
import type { EchoState } from './state.ts';
import { registerWebSocket } from './ws.ts';

/** A page served as it is: self-contained HTML and the headers that lock it down. */
export interface Page {
  readonly path: string;
  readonly html: string;
  readonly contentSecurityPolicy: string;
}

function sha256Sources(html: string, tag: 'script' | 'style'): string {
  const sources: string[] = [];
  for (const match of html.matchAll(new RegExp(`<${tag}>([\\s\\S]*?)</${tag}>`, 'g'))) {
    sources.push(
      `'sha256-${createHash('sha256')
        .update(match[1] ?? '')
        .digest('base64')}'`,
    );
  }
  return sources.length > 0 ? sources.join(' ') : "'none'";
}

/**
 * Loads a page from `pages/` and derives its Content-Security-Policy: its inline script and style
 * run by hash, and nothing else loads: no CDN, no other origin, no plugin, no frame.
 */
export function loadPage(path: string, file: string): Page {
  const html = readFileSync(new URL(`./pages/${file}`, import.meta.url), 'utf8');
  const contentSecurityPolicy = [
    "default-src 'none'",
    `script-src ${sha256Sources(html, 'script')}`,
    `style-src ${sha256Sources(html, 'style')}`,
    // 'self' covers /sse; ws: and wss: cover /ws, whose scheme differs from the page's.
    "connect-src 'self' ws: wss:",
    'img-src data:',
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
  return { path, html, contentSecurityPolicy };
}

/** `/web-ws` and `/web-sse`: pages that drive `/ws` and `/sse` from a browser. */
export const PAGES: readonly Page[] = [
  loadPage('/web-ws', 'web-ws.html'),
  loadPage('/web-sse', 'web-sse.html'),
];

export function registerPages(app: FastifyInstance): void {
  for (const page of PAGES) {
    app.get(page.path, async (_request, reply) =>
      reply
        .type('text/html; charset=utf-8')
        .header('content-security-policy', page.contentSecurityPolicy)
        .header('x-content-type-options', 'nosniff')
        .header('referrer-policy', 'no-referrer')
        .header('cache-control', 'no-cache')
        .send(page.html),
    );
  }
}

/** The streaming endpoints, `/ws` and `/sse`, the pages that drive them, and the console (`/console`). */
export function registerStreamEndpoints(app: FastifyInstance, state: EchoState): void {
  registerWebSocket(app, state);
  registerSse(app, state);
  registerPages(app);
  registerConsole(app, state);
}
