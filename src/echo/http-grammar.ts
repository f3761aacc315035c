/** An HTTP token (RFC 9110 §5.6.2): what a header name may be. */
export const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** Response headers a client or a setting may not set: the scenario's rule, one for all. */
export { UNSETTABLE_HEADERS } from '../scenario/index.ts';

import { HEADER_VALUE_PATTERN, MAX_HEADER_VALUE_LENGTH } from '../scenario/index.ts';

/**
 * A header value HTTP/1.1 and HTTP/2 both carry (visible ASCII, Latin-1, spaces and tabs; node
 * refuses anything else when the response is written): the one rule for scenario headers and
 * `ECHO_HEADER_*`, at most {@link MAX_HEADER_VALUE_LENGTH} characters.
 */
export const HEADER_VALUE = new RegExp(HEADER_VALUE_PATTERN);
export { MAX_HEADER_VALUE_LENGTH };
