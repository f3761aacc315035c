// The docs site (VitePress): `npm run docs:build` writes it to docs/.vitepress/dist (gitignored).
// The pages are the reference; they include the READMEs' first-hour sections (and a few rows of
// another page's table) with <!--@section: FILE#anchor--> (scripts/docs-site.ts), so each text is
// written once (docs/adr/0039-readme-path-docs-reference.md); test/docs/site.integration.test.ts
// builds the site, checks every link and that the sidebar reaches every page.
// vitepress, vitepress-plugin-mermaid and vite resolve from docs/node_modules, the docs tools of
// docs/package.json, which npm run docs:build and npm run typecheck install (scripts/docs-tools.ts).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Plugin } from 'vite';
import { defineConfig } from 'vitepress';
import { withMermaid } from 'vitepress-plugin-mermaid';
import { expandForSearch, REPO_URL, sectionsPlugin, titledPages } from '../../scripts/docs-site.ts';

const DOCS_DIR = new URL('..', import.meta.url).pathname.replace(/\/$/, '');

/** A project site on GitHub Pages lives under /<repository>/; DOCS_BASE overrides it (a fork's). */
const base = process.env['DOCS_BASE'] ?? '/echo-chaos/';

const adrs = titledPages('docs/adr').map(({ file, title }) => ({
  text: title.replace(/^\d+\.\s*/, `${file.slice(0, 4)} `),
  link: `/adr/${file.replace(/\.md$/, '')}`,
}));

const obsFeatures: [string, string][] = [
  ['Request context', 'request-context'],
  ['Timeout budget (deadline propagation)', 'timeout-budget'],
  ['Enforcement mode (dry run)', 'enforcement'],
  ['Cardinality firewall', 'cardinality'],
  ['Structured logs and PII masking', 'logging'],
  ['Exception fingerprints', 'exception-fingerprints'],
  ['Trace-context guard', 'trace-guard'],
  ['Sampling', 'sampling'],
  ['Wide events', 'wide-events'],
  ['Retry amplification', 'retry'],
  ['Request priority', 'priority'],
  ['Multi-tenant context', 'tenant'],
  ['Health and readiness', 'health'],
  ['Dependency health map', 'dependencies'],
  ['Request fan-out', 'fan-out'],
  ['Kafka', 'kafka'],
  ['Resilience', 'resilience'],
  ['Database N+1 and slow queries', 'db'],
  ['Background jobs', 'jobs'],
  ['Cache observability', 'cache'],
  ['Feature flags', 'feature-flags'],
  ['Continuous profiling', 'profiling'],
  ['SLO-as-code', 'slo'],
  ['Container memory', 'container-memory'],
  ['Graceful drain and flush', 'shutdown'],
  ['Live diagnostics', 'diagnostics'],
  ['Actuator routes and errors', 'actuator'],
  ['API', 'api'],
];

/**
 * vitepress-plugin-mermaid registers its component with a static import in VitePress's app entry,
 * which put mermaid (680 kB) into the script every page runs first. Registered as an async
 * component, it runs on the pages with a diagram only (the plugin renders it inside <Suspense>).
 */
function lazyMermaid(): Plugin {
  const eager = "import Mermaid from 'vitepress-plugin-mermaid/Mermaid.vue';";
  return {
    name: 'echo-chaos-lazy-mermaid',
    enforce: 'post',
    transform(code, id) {
      if (!id.includes('vitepress/dist/client/app/index.js')) return undefined;
      if (!code.includes(eager)) {
        throw new Error('vitepress-plugin-mermaid no longer imports Mermaid.vue as lazyMermaid expects');
      }
      const lazy =
        "import { defineAsyncComponent as lazyMermaidComponent } from 'vue';\n" +
        "const Mermaid = lazyMermaidComponent(() => import('vitepress-plugin-mermaid/Mermaid.vue'));";
      return { code: code.replace(eager, lazy), map: null };
    },
  };
}

/** Whether a page (`getting-started.md`), with the sections it includes, has a ```mermaid block. */
function hasDiagram(page: string): boolean {
  const file = join(DOCS_DIR, page);
  return /^```mermaid\s*$/m.test(expandForSearch(DOCS_DIR, file, readFileSync(file, 'utf8')));
}

// The READMEs' ```mermaid diagrams are drawn in the browser by mermaid, bundled into the site (no
// CDN); test/docs/site.integration.test.ts checks they become SVG.
const site = defineConfig({
  title: 'echo-chaos',
  description: 'HTTP echo and fault-injection service, observability library and Kubernetes operator',
  base,
  lang: 'en',
  // Built and checked by test/docs/site.integration.test.ts; nothing of the build reaches the network.
  outDir: '.vitepress/dist',
  cacheDir: '.vitepress/cache',
  cleanUrls: false,
  lastUpdated: false,
  // VitePress fails the build on a link to a page that does not exist (anchors are checked by the
  // test), except links to a running service (http://localhost:8080/..., the README's tour).
  ignoreDeadLinks: 'localhostLinks',
  markdown: { theme: { light: 'github-light', dark: 'github-dark' } },
  // VitePress preloads every chunk its app entry may import on every page: mermaid's only on the
  // pages with a diagram, the others fetch it when idle (a prefetch).
  shouldPreload: (link, page) => !/(^|\/)Mermaid\.[\w-]+\.js$/.test(link) || hasDiagram(page),
  vite: {
    plugins: [sectionsPlugin(DOCS_DIR)],
    // Above Vite's 500 kB: mermaid (680 kB) and its diagram parsers (690 kB), chunks that only a page
    // with a diagram loads (lazyMermaid). The search index (460 kB) and every page's own script stay under.
    build: { chunkSizeWarningLimit: 750 },
  },
  themeConfig: {
    nav: [
      { text: 'Getting started', link: '/getting-started' },
      { text: 'Service', link: '/service/' },
      { text: 'Faults', link: '/faults/' },
      { text: 'obs', link: '/obs/' },
      { text: 'Kubernetes', link: '/kubernetes/' },
      { text: 'Decisions', link: '/decisions' },
    ],
    socialLinks: [{ icon: 'github', link: REPO_URL }],
    search: {
      provider: 'local',
      options: {
        // Search reads the page files itself: give it the pages with their sections included.
        _render: (src, env, md) => md.render(expandForSearch(DOCS_DIR, env.path, src), env),
      },
    },
    outline: { level: [2, 3] },
    sidebar: [
      {
        text: 'The service',
        items: [
          { text: 'Getting started', link: '/getting-started' },
          { text: 'Overview', link: '/service/' },
          { text: 'Testing your own service', link: '/service/testing-your-service' },
          { text: 'In front of a real service', link: '/service/proxy' },
          { text: 'More than one replica', link: '/service/replicas' },
          { text: 'Control headers', link: '/service/control-headers' },
          { text: 'Endpoints', link: '/service/endpoints' },
          { text: 'Scenarios', link: '/scenarios' },
          { text: 'History and replay', link: '/service/history-replay' },
          { text: 'WebSocket and SSE', link: '/service/websocket-sse' },
          { text: 'Web console', link: '/service/console' },
          { text: 'gRPC', link: '/service/grpc' },
          { text: 'Protocols and TLS', link: '/service/protocols' },
          { text: 'Shutdown', link: '/service/shutdown' },
          { text: 'Configuration', link: '/service/configuration' },
          { text: 'Errors', link: '/service/errors' },
          { text: 'Security', link: '/security' },
        ],
      },
      {
        text: 'Faults',
        items: [
          { text: 'Overview and telemetry', link: '/faults/' },
          { text: 'Delay and latency', link: '/faults/delay' },
          { text: 'Status', link: '/faults/status' },
          { text: 'Error (reset, close, timeout, slow-close, blackhole)', link: '/faults/error' },
          { text: 'Chaos', link: '/faults/chaos' },
          { text: 'Slow and broken bodies', link: '/faults/bodies' },
          { text: 'Size and compression', link: '/faults/size-compression' },
          { text: 'Readiness and liveness', link: '/faults/lifecycle' },
        ],
      },
      {
        text: 'obs',
        collapsed: true,
        items: [
          { text: 'Overview: features and configuration', link: '/obs/' },
          ...obsFeatures.map(([text, page]) => ({ text, link: `/obs/${page}` })),
        ],
      },
      {
        text: 'Kubernetes',
        items: [
          { text: 'The bundle', link: '/kubernetes/' },
          { text: 'Chart values', link: '/kubernetes/chart-values' },
          { text: 'The operator', link: '/kubernetes/operator' },
        ],
      },
      {
        text: 'Project',
        items: [
          { text: 'Benchmarks', link: '/benchmarks' },
          { text: 'Development', link: '/development' },
        ],
      },
      { text: 'Decisions (ADRs)', collapsed: true, items: [{ text: 'All', link: '/decisions' }, ...adrs] },
    ],
  },
});

const config = withMermaid(site);
// After the plugin's own (both run last, in this order).
config.vite?.plugins?.push(lazyMermaid());

export default config;
