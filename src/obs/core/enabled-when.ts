/**
 * `enabled-when`: the per-request gate of a feature. A request is skipped by a feature when it
 * carries one of the `header-not-equals` headers with exactly that value, or when its path is one
 * of `path-excludes` or lies below one. An empty block matches every request.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { EnabledWhen, EnabledWhenFeature, ObsConfig } from './config/config-schema.ts';

/** What a matcher looks at: the request URL (path and query) and its headers. */
export interface MatchableRequest {
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
}

/** Decides whether a feature runs for a request. Never throws. */
export type RequestMatcher = (request: MatchableRequest) => boolean;

/** Matches every request. */
export const MATCH_ALL: RequestMatcher = () => true;

/**
 * Compiles an `enabled-when` block. Header names compare case-insensitively, values exactly; a
 * header sent more than once skips the feature when any of its values matches. A path excluded as
 * `/internal` also excludes `/internal/x` but not `/internals`; the query string is ignored.
 */
export function createRequestMatcher(block: EnabledWhen): RequestMatcher {
  const headers = Object.entries(block['header-not-equals']).map(([n, v]) => [n.toLowerCase(), v] as const);
  const paths = block['path-excludes'].map((p) => (p.length > 1 && p.endsWith('/') ? p.slice(0, -1) : p));
  if (headers.length === 0 && paths.length === 0) return MATCH_ALL;
  return (request) => {
    for (const [name, forbidden] of headers) {
      const sent = request.headers[name];
      if (sent === undefined) continue;
      if (Array.isArray(sent) ? sent.includes(forbidden) : sent === forbidden) return false;
    }
    if (paths.length > 0) {
      const url = request.url;
      const q = url.indexOf('?');
      const path = q === -1 ? url : url.slice(0, q);
      for (const excluded of paths) {
        if (excluded === '/') return false;
        if (path === excluded || (path.startsWith(excluded) && path.charCodeAt(excluded.length) === 47))
          return false;
      }
    }
    return true;
  };
}

/**
 * The matcher of every feature that has an `enabled-when` block; every one matches all requests
 * when `obs.conditional-features.enabled` is false.
 */
export function featureMatchers(config: ObsConfig): ReadonlyMap<EnabledWhenFeature, RequestMatcher> {
  const matchers = new Map<EnabledWhenFeature, RequestMatcher>();
  for (const [key, value] of Object.entries(config)) {
    if (typeof value === 'object' && value !== null && 'enabled-when' in value) {
      const feature = key as EnabledWhenFeature;
      matchers.set(
        feature,
        config['conditional-features'].enabled
          ? createRequestMatcher(config[feature]['enabled-when'])
          : MATCH_ALL,
      );
    }
  }
  return matchers;
}
