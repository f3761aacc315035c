/**
 * The failures a request can have injected: what a chaos draw answers with, and what
 * `X-Echo-Error` accepts (a status 400-599, a name for one, `random`, or a failure that is not a
 * status: `timeout`, `reset`, `close`, the broken bodies `empty`, `truncate`, `malformed`,
 * `garbage`, and the connection faults `slow-close`, `blackhole`). The grammar is the one fault
 * vocabulary's (`src/scenario/faults.ts`), shared with environment defaults and scenario responses.
 */
export {
  type BrokenBodyKind,
  CHAOS_STATUSES,
  type ConnectionFaultKind,
  ERROR_FAULT_FORM,
  type ErrorFault,
  NAMED_ERRORS,
  parseErrorFault,
  RANDOM_ERROR_STATUSES,
} from '../scenario/faults.ts';
