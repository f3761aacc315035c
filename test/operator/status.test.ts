import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { EchoScenario, EchoScenarioStatus } from '../../src/operator/echo-scenario.ts';
import type { Endpoint } from '../../src/operator/endpoints.ts';
import type { DesiredEndpoint, ScenarioState } from '../../src/operator/plan.ts';
import { PushLedger } from '../../src/operator/push-ledger.ts';
import { buildStatus, READY, type StatusInput, sameStatus } from '../../src/operator/status.ts';
import { stripEchoScenario } from '../../src/operator/strip.ts';

const NOW = new Date('2026-03-01T12:00:00.750Z');
const NOW_TEXT = '2026-03-01T12:00:00Z';
const EARLIER = '2026-02-01T08:00:00Z';
const SCENARIO = { path: '/a', responses: [{ status: 503 }] };

function endpoint(pod: string): Endpoint {
  return { key: `uid-${pod}:8080`, podName: pod, podUid: `uid-${pod}`, ip: '10.0.0.1', port: 8080 };
}

function es(status?: EchoScenarioStatus, generation = 3): EchoScenario {
  return {
    metadata: { name: 'a', namespace: 'ns', generation },
    spec: { target: { service: 'echo', port: 'http' }, path: '/a', responses: SCENARIO.responses },
    ...(status === undefined ? {} : { status }),
  };
}

/** The plan for an Active EchoScenario on `endpoints`: each should hold `[SCENARIO]`. */
function active(endpoints: Endpoint[]): Pick<StatusInput, 'state' | 'desired'> {
  const desired = new Map<string, DesiredEndpoint>(
    endpoints.map((e) => [e.key, { endpoint: e, scenarios: [SCENARIO], owners: ['a'] }]),
  );
  return { state: { kind: 'Active', endpoints }, desired };
}

function build(input: Partial<StatusInput> & Pick<StatusInput, 'state'>): EchoScenarioStatus | undefined {
  return buildStatus({
    echoScenario: es(),
    desired: new Map(),
    pushes: new PushLedger(),
    now: NOW,
    ...input,
  });
}

test('status – every endpoint holds its array: Ready True, Synced, counts, lastSyncTime now', () => {
  const endpoints = [endpoint('p'), endpoint('q')];
  const ledger = new PushLedger();
  const at = new Date(EARLIER);
  for (const e of endpoints)
    ledger.succeeded(e, 'ns', JSON.stringify([SCENARIO]), ['a'], { hash: 'sha256-x', at });
  assert.deepEqual(build({ ...active(endpoints), pushes: ledger }), {
    observedGeneration: 3,
    conditions: [
      {
        type: READY,
        status: 'True',
        reason: 'Synced',
        message: 'scenario pushed to 2 of 2 endpoints',
        observedGeneration: 3,
        lastTransitionTime: NOW_TEXT,
      },
    ],
    syncedEndpoints: 2,
    totalEndpoints: 2,
    endpoints: ['p', 'q'].map((pod) => ({
      pod,
      ip: '10.0.0.1',
      synced: true,
      hash: 'sha256-x',
      lastSyncTime: EARLIER,
      lastError: '',
    })),
    lastSyncTime: NOW_TEXT,
  });
});

test('status – pushes still under way and none failed: nothing to say yet', () => {
  const endpoints = [endpoint('p'), endpoint('q')];
  const ledger = new PushLedger();
  ledger.succeeded(endpoints[0]!, 'ns', JSON.stringify([SCENARIO]), ['a']);
  assert.equal(build({ ...active(endpoints), pushes: ledger }), undefined);
  // An endpoint holding an older array is not synced either.
  ledger.succeeded(endpoints[1]!, 'ns', '[]', []);
  assert.equal(build({ ...active(endpoints), pushes: ledger }), undefined);
});

test('status – a failed push: PushFailed naming each failing pod, the synced ones still counted', () => {
  const endpoints = [endpoint('p'), endpoint('q'), endpoint('r')];
  const ledger = new PushLedger();
  ledger.succeeded(endpoints[0]!, 'ns', JSON.stringify([SCENARIO]), ['a']);
  ledger.pushFailed(endpoints[1]!, 'ns', ['a'], 'POST http://10.0.0.1:8080/scenario: ECONNREFUSED');
  const status = build({ ...active(endpoints), pushes: ledger });
  assert.equal(status?.syncedEndpoints, 1);
  assert.equal(status?.totalEndpoints, 3);
  assert.equal(status?.lastSyncTime, undefined);
  assert.deepEqual(
    status?.conditions?.map(({ status: s, reason, message }) => ({ s, reason, message })),
    [
      {
        s: 'False',
        reason: 'PushFailed',
        message: '1 of 3 endpoints failed: q: POST http://10.0.0.1:8080/scenario: ECONNREFUSED',
      },
    ],
  );
});

test('status – Invalid, TargetNotFound and Conflict: Ready False with the plan’s reason and message', () => {
  const cases: Array<[ScenarioState & { kind: 'Invalid' | 'TargetNotFound' | 'Conflict' }, number]> = [
    [{ kind: 'Invalid', message: 'spec.target: required' }, 0],
    [{ kind: 'TargetNotFound', message: 'Service echo not found' }, 0],
    [
      {
        kind: 'Conflict',
        message: 'path /a is already served by older EchoScenario b',
        endpoints: [endpoint('p')],
      },
      1,
    ],
  ];
  for (const [state, total] of cases) {
    assert.deepEqual(
      build({ state }),
      {
        observedGeneration: 3,
        conditions: [
          {
            type: READY,
            status: 'False',
            reason: state.kind,
            message: state.message,
            observedGeneration: 3,
            lastTransitionTime: NOW_TEXT,
          },
        ],
        syncedEndpoints: 0,
        totalEndpoints: total,
        endpoints: [],
      },
      state.kind,
    );
  }
});

test('status – lastTransitionTime moves only when Ready changes; lastSyncTime stays until the next sync', () => {
  const was = (status: 'True' | 'False', reason: string): EchoScenarioStatus => ({
    observedGeneration: 3,
    conditions: [{ type: READY, status, reason, message: '', lastTransitionTime: EARLIER }],
    syncedEndpoints: 1,
    totalEndpoints: 1,
    lastSyncTime: EARLIER,
  });
  const invalid: ScenarioState = { kind: 'Invalid', message: 'bad' };

  // False to False (another reason): the transition time and the last sync stay.
  const stillFalse = build({ echoScenario: es(was('False', 'TargetNotFound')), state: invalid });
  assert.equal(stillFalse?.conditions?.[0]?.lastTransitionTime, EARLIER);
  assert.equal(stillFalse?.lastSyncTime, EARLIER);

  // True to False: a transition now; the last sync stays.
  const fell = build({ echoScenario: es(was('True', 'Synced')), state: invalid });
  assert.equal(fell?.conditions?.[0]?.lastTransitionTime, NOW_TEXT);
  assert.equal(fell?.lastSyncTime, EARLIER);

  // True to True: the transition time stays, the sync is now.
  const endpoints = [endpoint('p')];
  const ledger = new PushLedger();
  ledger.succeeded(endpoints[0]!, 'ns', JSON.stringify([SCENARIO]), ['a']);
  const synced = build({ echoScenario: es(was('True', 'Synced')), ...active(endpoints), pushes: ledger });
  assert.equal(synced?.conditions?.[0]?.lastTransitionTime, EARLIER);
  assert.equal(synced?.lastSyncTime, NOW_TEXT);
});

test('status – observedGeneration is the generation the status was built from', () => {
  const status = buildStatus({
    echoScenario: es(undefined, 7),
    state: { kind: 'Invalid', message: 'bad' },
    desired: new Map(),
    pushes: new PushLedger(),
    now: NOW,
  });
  assert.equal(status?.observedGeneration, 7);
  assert.equal(status?.conditions?.[0]?.observedGeneration, 7);
});

test('status – sameStatus sees every change but the timestamps', () => {
  const base = build({ state: { kind: 'TargetNotFound', message: 'Service echo not found' } })!;
  const later = buildStatus({
    echoScenario: es(),
    state: { kind: 'TargetNotFound', message: 'Service echo not found' },
    desired: new Map(),
    pushes: new PushLedger(),
    now: new Date('2026-03-02T00:00:00Z'),
  })!;
  assert.equal(sameStatus(base, { ...later, lastSyncTime: '2026-03-02T00:00:00Z' }), true);
  assert.equal(sameStatus(undefined, base), false);
  assert.equal(sameStatus({}, base), false);
  assert.equal(sameStatus(base, { ...base, observedGeneration: 4 }), false);
  assert.equal(sameStatus(base, { ...base, totalEndpoints: 1 }), false);
  assert.equal(sameStatus(base, { ...base, syncedEndpoints: 1 }), false);
  const otherMessage = build({ state: { kind: 'TargetNotFound', message: 'Service other not found' } })!;
  assert.equal(sameStatus(base, otherMessage), false);
  const otherReason = build({ state: { kind: 'Invalid', message: 'Service echo not found' } })!;
  assert.equal(sameStatus(base, otherReason), false);
});

test('status – endpoints: a pod that read back another hash is listed first, unsynced, with its hash and error', () => {
  const endpoints = [endpoint('a-synced'), endpoint('b-dropped'), endpoint('c-pending')];
  const ledger = new PushLedger();
  const at = new Date(EARLIER);
  ledger.succeeded(endpoints[0]!, 'ns', JSON.stringify([SCENARIO]), ['a'], { hash: 'sha256-new', at });
  ledger.succeeded(endpoints[1]!, 'ns', '[]', [], { hash: 'sha256-old', at });
  ledger.pushFailed(
    endpoints[1]!,
    'ns',
    ['a'],
    'GET http://10.0.0.1:8080/scenario: the pod holds sha256-old, not the sha256-new pushed',
  );
  ledger.readBackDiffers(endpoints[1]!.key, 'sha256-old');
  const status = build({ ...active(endpoints), pushes: ledger });
  assert.equal(status?.syncedEndpoints, 1);
  assert.equal(status?.conditions?.[0]?.reason, 'PushFailed');
  assert.deepEqual(status?.endpoints, [
    {
      pod: 'b-dropped',
      ip: '10.0.0.1',
      synced: false,
      hash: 'sha256-old',
      lastSyncTime: EARLIER,
      lastError: 'GET http://10.0.0.1:8080/scenario: the pod holds sha256-old, not the sha256-new pushed',
    },
    { pod: 'c-pending', ip: '10.0.0.1', synced: false, hash: '', lastError: '' },
    {
      pod: 'a-synced',
      ip: '10.0.0.1',
      synced: true,
      hash: 'sha256-new',
      lastSyncTime: EARLIER,
      lastError: '',
    },
  ]);
});

test('status – endpoints are compared without their read-back times; a change of a pod’s hash is news', () => {
  const entry = { pod: 'p', ip: '10.0.0.1', synced: true, hash: 'sha256-a', lastError: '' };
  const base: EchoScenarioStatus = { observedGeneration: 3, syncedEndpoints: 1, totalEndpoints: 1 };
  assert.equal(
    sameStatus(
      { ...base, endpoints: [{ ...entry, lastSyncTime: EARLIER }] },
      { ...base, endpoints: [{ ...entry, lastSyncTime: NOW_TEXT }] },
    ),
    true,
  );
  assert.equal(
    sameStatus({ ...base, endpoints: [entry] }, { ...base, endpoints: [{ ...entry, hash: 'sha256-b' }] }),
    false,
  );
  assert.equal(sameStatus(base, { ...base, endpoints: [entry] }), false);
});

test('status – a cached status keeps its endpoints as a digest: sameStatus answers as with the list', () => {
  const endpoints = [endpoint('a'), endpoint('b')];
  const ledger = new PushLedger();
  for (const e of endpoints)
    ledger.succeeded(e, 'ns', JSON.stringify([SCENARIO]), ['a'], {
      hash: 'sha256-new',
      at: new Date(EARLIER),
    });
  const written = build({ ...active(endpoints), pushes: ledger })!;
  assert.equal(written.endpoints?.length, 2);
  // As the informer cache holds it once the write comes back (strip.ts).
  const inCache = es(structuredClone(written));
  stripEchoScenario(inCache);
  assert.equal(inCache.status?.endpoints, undefined, 'the list itself is not kept');
  assert.equal(inCache.status?.syncedEndpoints, 2);
  // The same list, read back again later: no news.
  ledger.succeeded(endpoints[0]!, 'ns', JSON.stringify([SCENARIO]), ['a'], {
    hash: 'sha256-new',
    at: new Date('2026-03-09T00:00:00Z'),
  });
  const again = build({ ...active(endpoints), pushes: ledger })!;
  assert.notDeepEqual(again.endpoints, written.endpoints, 'a later read-back time');
  assert.equal(sameStatus(inCache.status, again), true);
  // Pod b answered another hash: its entry changes, and so does the answer.
  ledger.readBackDiffers(endpoints[1]!.key, 'sha256-other');
  const changed = build({ ...active(endpoints), pushes: ledger })!;
  assert.equal(sameStatus(inCache.status, changed), false);
  assert.equal(sameStatus(written, changed), false);
});
