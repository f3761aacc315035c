/**
 * One row of the console's live log: what the list shows of a finished request. The page reads
 * the rest (headers, body) from `GET /console/api/entries/<id>` when a row is opened, so a row
 * stays small whatever the request carried. Shared by the service and the page: it imports nothing
 * of node's (the page is type-checked against the DOM alone, page/tsconfig.json).
 */
import type { AppliedFault } from '../applied.ts';

export interface LiveRow {
  /** The history entry's id (`GET /console/api/entries/<id>`, `POST /replay`). */
  readonly id: string;
  /** Its place among every entry recorded: the stream's event id. */
  readonly seq: number;
  /** When it was recorded, epoch milliseconds. */
  readonly timeMs: number;
  readonly method: string;
  /** The path as `GET /history` shows it (secrets masked unless `ECHO_HISTORY_SECRETS=show`). */
  readonly path: string;
  /** The answered status (0: no response on purpose, 499: the client left). */
  readonly status: number;
  readonly durationMs: number;
  readonly faults: readonly AppliedFault[];
  /** `X-Echo-Session`, when the request named one. */
  readonly session?: string;
  /** `HTTP/1.1`, `HTTP/2`, `gRPC`. */
  readonly protocol: string;
  /** A forwarded request's upstream (`ECHO_UPSTREAM`) and its status (`null`: none). */
  readonly upstream?: { readonly url: string; readonly status: number | null };
  /** A gRPC call's status name (`OK`, `UNAVAILABLE`, ...). */
  readonly grpcStatus?: string;
}
