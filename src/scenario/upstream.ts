/**
 * The upstream grammar of the reverse proxy (issue #32), one rule for `ECHO_UPSTREAM` and a
 * scenario's `upstream`: an absolute `http://` or `https://` URL naming a host, without query,
 * fragment or credentials; a path is the upstream's base path.
 */

/** Longest upstream URL, in characters. */
export const MAX_UPSTREAM_LENGTH = 2048;

/** The form an upstream takes, worded for messages. */
export const UPSTREAM_FORM =
  'an absolute http:// or https:// URL without query, fragment or credentials (a path is the base path)';

/** A structural pattern of it (the rest is checked by {@link parseUpstreamUrl}). */
export const UPSTREAM_PATTERN = '^https?://[^\\s?#@]+$';

/** The upstream `text` names, or `undefined` when it is not one. */
export function parseUpstreamUrl(text: string): URL | undefined {
  if (text.length > MAX_UPSTREAM_LENGTH) return undefined;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return undefined;
  }
  const usable =
    (url.protocol === 'http:' || url.protocol === 'https:') &&
    url.hostname !== '' &&
    url.search === '' &&
    url.hash === '' &&
    url.username === '' &&
    url.password === '';
  return usable ? url : undefined;
}
