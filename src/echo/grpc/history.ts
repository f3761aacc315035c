/**
 * gRPC calls in history (issue #36 item 6): each call of the echo service is recorded when it
 * starts (its method path as the url, its metadata as the headers, its request as JSON text), and
 * completed when it ends with the status its client got, the same moment the call is metered
 * (observe.ts): the handler and the interceptor both reach the call's HTTP/2 stream, so the record
 * waits in a WeakMap keyed by it and goes with it.
 */
import type { AppliedFault } from '../applied.ts';
import { completeEntry, type HistoryEntry, type RecordInput } from '../history.ts';
import { GRPC_STATUS_NAMES, type MetadataValues } from './metadata.ts';

/** Where calls are recorded: the app's history (`History.record`). */
export interface GrpcHistory {
  record(input: RecordInput): HistoryEntry | undefined;
}

/** A call's entry, and the faults applied to it so far. */
export interface GrpcCallRecord {
  readonly entry: HistoryEntry;
  readonly faults: AppliedFault[];
}

/** The `protocol` of a gRPC call's entry. */
export const GRPC_PROTOCOL = 'gRPC';
/** `CANCELLED`: the client left (or reset the stream); its entry's HTTP status is 499, as HTTP's. */
const CANCELLED = 1;

const records = new WeakMap<object, GrpcCallRecord>();

/** The metadata as an entry's headers: one value a string, several an array, binary ones in base64. */
export function metadataHeaders(metadata: MetadataValues): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [key, values] of Object.entries(metadata)) {
    const texts = values.map((v) => (typeof v === 'string' ? v : Buffer.from(v).toString('base64')));
    out[key] = texts.length === 1 ? (texts[0] as string) : texts;
  }
  return out;
}

/** Keeps `record` until the call on `stream` ends ({@link completeCall}). */
export function rememberCall(stream: object | undefined, record: GrpcCallRecord): void {
  if (stream !== undefined) records.set(stream, record);
}

/**
 * Completes the entry of the call on `stream`, if it has one: its faults, its gRPC status, its
 * duration; the HTTP/2 status 200, or 499 when the client left (as HTTP's entries say it).
 */
export function completeCall(stream: object | undefined, code: number, seconds: number): void {
  if (stream === undefined) return;
  const record = records.get(stream);
  if (record === undefined) return;
  records.delete(stream);
  const { entry } = record;
  entry.faults = record.faults.slice();
  entry.grpc = { code, status: GRPC_STATUS_NAMES[code] ?? 'UNKNOWN' };
  completeEntry(entry, code === CANCELLED ? 499 : 200, seconds * 1000);
}
