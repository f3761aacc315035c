/** Every kind of fault the echo can inject, the `kind` label of `echo_faults_injected_total`. */
export const FAULT_KINDS = [
  'delay',
  'status',
  'error',
  'chaos',
  'scenario',
  'throttle',
  'reset',
  'close',
  'empty',
  'truncate',
  'malformed',
  'garbage',
  'slow-close',
  'blackhole',
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

/** Where a fault's control came from. */
export type FaultSource = 'header' | 'env' | 'scenario';

/** One applied fault: its kind, the control that asked for it, where that came from, the drawn value. */
export interface AppliedFault {
  readonly kind: FaultKind;
  /** The control: a header name (`X-Echo-Delay`), a variable (`ECHO_DELAY`) or `scenario <path>`. */
  readonly control: string;
  readonly source: FaultSource;
  /** The value in effect after every draw: milliseconds, a status, a rate, an error kind. */
  readonly value: string | number;
}

/** The meters a gate reports to. */
export interface FaultMeters {
  faultInjected(kind: FaultKind): void;
  faultOverflow(): void;
}

/**
 * The safety valve, one per process. A request that is about to get its first fault takes a slot,
 * held until its response ends (delays, held timeouts and throttled bodies included), so
 * `active` is the number of faults in progress (`echo_active_faults`). Past `maxActive`, new
 * faults are skipped, the request is served plainly and `echo_faults_overflow_total` counts it.
 * `enabled: false` (`ECHO_FAULTS_ENABLED=false`, `PUT /control/faults`) skips every fault.
 */
export class FaultGate {
  enabled: boolean;
  readonly maxActive: number;
  #active = 0;

  constructor(enabled: boolean, maxActive: number) {
    this.enabled = enabled;
    this.maxActive = maxActive;
  }

  /** Faults (requests with at least one fault) in progress now. */
  get active(): number {
    return this.#active;
  }

  /** Takes a slot; `false` when the cap is reached (the caller counts the overflow). */
  acquire(): boolean {
    if (this.#active >= this.maxActive) return false;
    this.#active++;
    return true;
  }

  release(): void {
    if (this.#active > 0) this.#active--;
  }
}

/** A request's fault state: `admitted` holds a slot, `plain` was refused one (or faults are off). */
export interface RequestFaults {
  readonly list: AppliedFault[];
  state: 'admitted' | 'plain';
}

/**
 * What {@link applyFault} reads and writes of a request: a fastify request's state (request-state.ts),
 * or the handshake of a WebSocket upgrade the reverse proxy tunnels (which no fastify request speaks for).
 */
export interface FaultSubject {
  faults: RequestFaults | undefined;
  readonly explain: boolean;
  readonly historyEntry: { faults: readonly AppliedFault[] } | undefined;
}

/** Where {@link applyFault} writes its headers while they can still go, and learns of the end. */
export interface FaultAnswer {
  readonly raw: { readonly headersSent: boolean; once(event: 'close', listener: () => void): unknown };
  header(name: string, value: string): unknown;
}

/**
 * Applies one fault to a request, or refuses it. The first fault of a request takes a slot of the
 * gate (released when the response closes); when faults are off, or the gate is full, this fault
 * and every later one of the request is refused and the request is served plainly.
 * Call it before doing the fault, and only do the fault when it returns `true`.
 * Headers are updated only while they can still be sent.
 */
export function applyFault(
  request: FaultSubject,
  reply: FaultAnswer,
  gate: FaultGate,
  meters: FaultMeters,
  fault: AppliedFault,
): boolean {
  let faults = request.faults;
  if (faults === undefined) {
    if (!gate.enabled) {
      request.faults = { list: [], state: 'plain' };
      return false;
    }
    if (!gate.acquire()) {
      meters.faultOverflow();
      request.faults = { list: [], state: 'plain' };
      return false;
    }
    faults = { list: [], state: 'admitted' };
    request.faults = faults;
    reply.raw.once('close', () => gate.release());
  }
  if (faults.state === 'plain') return false;
  faults.list.push(fault);
  meters.faultInjected(fault.kind);
  const entry = request.historyEntry;
  if (entry !== undefined) entry.faults = faults.list;
  if (!reply.raw.headersSent) {
    reply.header('x-echo-fault', faultHeader(faults.list));
    if (request.explain) reply.header('x-echo-applied', JSON.stringify(faults.list));
  }
  return true;
}

/**
 * Whether a request may still get faults: faults are on and the gate has room, or the request
 * already holds a slot. Lets a caller skip a draw (or a scenario step) that could not apply.
 */
export function faultsAllowed(request: FaultSubject, gate: FaultGate): boolean {
  const faults = request.faults;
  return faults === undefined ? gate.enabled && gate.active < gate.maxActive : faults.state === 'admitted';
}

/**
 * Whether `kind` was applied to the request. The ledger is what a later step of the answer reads
 * (the `slow-close` of `connection-faults.ts`), so a fault the safety valve refused never acts.
 */
export function wasApplied(request: FaultSubject, kind: FaultKind): boolean {
  const faults = request.faults;
  if (faults === undefined || faults.state !== 'admitted') return false;
  for (const fault of faults.list) if (fault.kind === kind) return true;
  return false;
}

/** The kinds applied, in order, each once: `delay,status`. */
export function faultHeader(list: readonly AppliedFault[]): string {
  const kinds: FaultKind[] = [];
  for (const fault of list) if (!kinds.includes(fault.kind)) kinds.push(fault.kind);
  return kinds.join(',');
}
