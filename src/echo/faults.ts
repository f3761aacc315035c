/**
 * The failures a request can have injected: what a chaos draw answers with, and what
 * `X-Echo-Error` accepts (a status 400-599, a name for one, `random`, or a failure that is not a
 * status: `timeout`, `reset`, `close`, and the broken bodies `empty`, `truncate`, `malformed`,
 * `garbage`). The grammar is the one fault vocabulary's (`src/scenario/faults.ts`), shared with
 * environment defaults and scenario responses.
 */
export {
  type BrokenBodyKind,
  CHAOS_STATUSES,
  ERROR_FAULT_FORM,
  type ErrorFault,
  NAMED_ERRORS,
  parseErrorFault,
  RANDOM_ERROR_STATUSES,
} from '../scenario/faults.ts';
