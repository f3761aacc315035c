/** An HTTP token (RFC 9110 §5.6.2): what a header name may be. */
export const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** Headers whose value frames the message: a client-chosen value would corrupt the response. */
export const FRAMING_HEADERS: ReadonlySet<string> = new Set([
  'content-length',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'upgrade',
  'trailer',
  'te',
]);
