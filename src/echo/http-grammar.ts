/** An HTTP token (RFC 9110 §5.6.2): what a header name may be. */
export const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** Response headers a client or a setting may not set: the scenario's rule, one for all. */
export { UNSETTABLE_HEADERS } from '../scenario/index.ts';
