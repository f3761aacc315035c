/**
 * planner.ts, pure: the plans the operator keeps between reconciles (issue #16). Caches are maps here;
 * what is checked is when a plan is made again, which targets' endpoints are worked out again, and
 * what a new plan reports as changed.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { V1EndpointSlice, V1Pod, V1Service } from '@kubernetes/client-node';
import { type EchoScenario, FINALIZER } from '../../src/operator/echo-scenario.ts';
import { Planner } from '../../src/operator/planner.ts';
import { planNamespace } from './plan-namespace.ts';

const NS = 'ns';

function pod(name: string, labels: Record<string, string>, ip = '10.0.0.1'): V1Pod {
  return {
    metadata: { name, namespace: NS, uid: `uid-${name}`, labels },
    spec: { containers: [{ name: 'echo', ports: [{ name: 'http', containerPort: 8080 }] }] },
    status: { phase: 'Running', podIP: ip, conditions: [{ type: 'Ready', status: 'True' }] },
  };
}

function es(name: string, path: string, target: object, at = '2026-01-01T00:00:00Z'): EchoScenario {
  return {
    metadata: { name, namespace: NS, uid: `uid-${name}`, generation: 1, creationTimestamp: at as never },
    spec: { target: { port: 'http', ...target }, path, responses: [{ status: 503 }] },
  };
}

const a = { selector: { matchLabels: { app: 'a' } } };
const b = { selector: { matchLabels: { app: 'b' } } };

/** A planner over maps, fed events as the informers would. */
function world() {
  const scenarios = new Map<string, EchoScenario>();
  const pods = new Map<string, V1Pod>();
  const services = new Map<string, V1Service>();
  const slices = new Map<string, V1EndpointSlice>();
  const reports: Array<{ scenarios: string[]; pods: string[] }> = [];
  const planner = new Planner({
    caches: {
      scenarios: () => [...scenarios.values()],
      pod: (name) => pods.get(name),
      service: (name) => services.get(name),
      slice: (name) => slices.get(name),
    },
    stopped: () => undefined,
    onChange: (_ns, s, p) => reports.push({ scenarios: [...s].sort(), pods: [...p].sort() }),
  });
  return {
    planner,
    reports,
    scenarios,
    pods,
    putScenario(e: EchoScenario) {
      const type = scenarios.has(e.metadata.name!) ? 'update' : 'add';
      scenarios.set(e.metadata.name!, e);
      return planner.scenarioChanged(type, e);
    },
    deleteScenario(name: string) {
      const e = scenarios.get(name)!;
      scenarios.delete(name);
      planner.scenarioChanged('delete', e);
    },
    putPod(p: V1Pod) {
      const type = pods.has(p.metadata!.name!) ? 'update' : 'add';
      pods.set(p.metadata!.name!, p);
      planner.podChanged(type, p);
    },
    putService(name: string) {
      const svc = { metadata: { name, namespace: NS } };
      services.set(name, svc);
      return planner.serviceChanged(svc);
    },
    putSlice(s: V1EndpointSlice) {
      const type = slices.has(s.metadata!.name!) ? 'update' : 'add';
      slices.set(s.metadata!.name!, s);
      return planner.sliceChanged(type, s);
    },
    /** The same cluster, planned from scratch by planNamespace. */
    fresh() {
      return planNamespace(
        [...scenarios.values()],
        [...pods.values()],
        [...services.values()],
        [...slices.values()],
      );
    },
  };
}

function paths(plan: { byPod: ReadonlyMap<string, readonly { scenarios: readonly { path?: string }[] }[]> }) {
  return Object.fromEntries(
    [...plan.byPod].map(([name, list]) => [
      name,
      list.flatMap((d) => d.scenarios.map((s) => s.path)).join(','),
    ]),
  );
}

test('planner – a plan is made again only after a change it reads; status and finalizers are not one', () => {
  const w = world();
  w.putPod(pod('a-0', { app: 'a' }));
  w.putScenario(es('sa', '/a', a));
  const first = w.planner.plan(NS);
  assert.equal(w.planner.builds, 1);
  assert.equal(w.planner.plan(NS), first, 'nothing changed: the same plan');
  // A status write and the finalizer: the same spec, no new plan.
  const written = structuredClone(w.scenarios.get('sa')!);
  written.status = { observedGeneration: 1 };
  written.metadata.finalizers = [FINALIZER];
  w.putScenario(written);
  assert.equal(w.planner.plan(NS), first);
  assert.equal(w.planner.builds, 1);
  // A new spec: a new plan, with the new array.
  const updated = structuredClone(written);
  updated.spec!.path = '/a2';
  w.putScenario(updated);
  assert.deepEqual(paths(w.planner.plan(NS)), { 'a-0': '/a2' });
  assert.equal(w.planner.builds, 2);
});

test('planner – a new plan reports only the EchoScenarios and pods it changed', () => {
  const w = world();
  for (const name of ['a-0', 'a-1']) w.putPod(pod(name, { app: 'a' }));
  for (const name of ['b-0', 'b-1']) w.putPod(pod(name, { app: 'b' }));
  w.putScenario(es('sa', '/a', a));
  w.putScenario(es('sb', '/b', b));
  w.planner.plan(NS);
  assert.deepEqual(w.reports.at(-1), { scenarios: ['sa', 'sb'], pods: ['a-0', 'a-1', 'b-0', 'b-1'] });
  // A new spec of sa: sa and its pods, not sb's.
  w.putScenario({ ...es('sa', '/a-new', a), metadata: { ...es('sa', '', a).metadata, generation: 2 } });
  w.planner.plan(NS);
  assert.deepEqual(w.reports.at(-1), { scenarios: [], pods: ['a-0', 'a-1'] });
  // A pod that leaves target a: that pod (to be cleared) and sa (one endpoint less).
  w.putPod(pod('a-1', { app: 'c' }));
  const plan = w.planner.plan(NS);
  assert.deepEqual(w.reports.at(-1), { scenarios: ['sa'], pods: ['a-1'] });
  assert.deepEqual(paths(plan), { 'a-0': '/a-new', 'b-0': '/b', 'b-1': '/b' });
  // A pod event that changes nothing planned (another label): no new plan at all.
  const builds = w.planner.builds;
  const reports = w.reports.length;
  w.putPod(pod('b-0', { app: 'b', extra: 'yes' }));
  w.planner.plan(NS);
  assert.equal(w.reports.length, reports, 'nothing to report');
  assert.equal(w.planner.builds, builds + 1, 'planned again (its target was touched), but nothing changed');
  w.putPod(pod('b-0', { app: 'b', extra: 'yes' }));
  w.planner.plan(NS);
  assert.equal(w.planner.builds, builds + 1, 'the same pod again: not even that');
  // Deleted: its pods.
  w.deleteScenario('sb');
  w.planner.plan(NS);
  assert.deepEqual(w.reports.at(-1), { scenarios: [], pods: ['b-0', 'b-1'] });
});

test('planner – a conflict across two targets that share pods is still a conflict', () => {
  const w = world();
  w.putPod(pod('p-0', { app: 'a', role: 'x' }));
  w.putScenario(es('old', '/same', a, '2026-01-01T00:00:00Z'));
  w.putScenario(es('new', '/same', { selector: { matchLabels: { role: 'x' } } }, '2026-01-01T00:00:05Z'));
  const plan = w.planner.plan(NS);
  assert.equal(plan.scenarios.get('old')?.kind, 'Active');
  assert.equal(plan.scenarios.get('new')?.kind, 'Conflict');
  assert.deepEqual(paths(plan), { 'p-0': '/same' });
  // The older one gone: the newer one serves it.
  w.deleteScenario('old');
  assert.equal(w.planner.plan(NS).scenarios.get('new')?.kind, 'Active');
});

test('planner – a Service target: endpoints from its slices, again after a slice or pod change; equal to planNamespace', () => {
  const w = world();
  for (let i = 0; i < 3; i++) w.putPod(pod(`e-${i}`, { app: 'e' }, `10.0.1.${i}`));
  w.putScenario(es('s1', '/1', { service: 'echo' }));
  w.putScenario(es('s2', '/2', { service: 'echo' }, '2026-01-01T00:00:01Z'));
  assert.equal(w.planner.plan(NS).scenarios.get('s1')?.kind, 'TargetNotFound');
  assert.deepEqual(
    w.putService('echo').sort(),
    ['s1', 's2'],
    'a Service event names the EchoScenarios on it',
  );
  const slice = (ready: boolean[]): V1EndpointSlice => ({
    metadata: { name: 'echo-abc', namespace: NS, labels: { 'kubernetes.io/service-name': 'echo' } },
    addressType: 'IPv4',
    endpoints: ready.map((r, i) => ({
      addresses: [`10.0.1.${i}`],
      conditions: { ready: r },
      targetRef: { kind: 'Pod', name: `e-${i}`, uid: `uid-e-${i}` },
    })),
  });
  assert.deepEqual(w.putSlice(slice([true, true, false])), ['e-0', 'e-1', 'e-2'], 'the pods it names');
  let plan = w.planner.plan(NS);
  assert.deepEqual(paths(plan), { 'e-0': '/1,/2', 'e-1': '/1,/2' });
  assert.deepEqual(plan.desired, w.fresh().desired);
  assert.equal(plan.byPod.get('e-0')![0]!.scenarios, plan.byPod.get('e-1')![0]!.scenarios, 'one array');
  w.putSlice(slice([true, true, true]));
  plan = w.planner.plan(NS);
  assert.deepEqual(paths(plan), { 'e-0': '/1,/2', 'e-1': '/1,/2', 'e-2': '/1,/2' });
  assert.deepEqual(w.reports.at(-1), { scenarios: ['s1', 's2'], pods: ['e-2'] });
  // A pod its slice names goes not ready (terminating): gone from the target.
  w.putPod({
    ...pod('e-0', { app: 'e' }, '10.0.1.0'),
    metadata: { ...pod('e-0', {}).metadata, labels: { app: 'e' }, deletionTimestamp: new Date() },
  });
  plan = w.planner.plan(NS);
  assert.deepEqual(paths(plan), { 'e-1': '/1,/2', 'e-2': '/1,/2' });
  assert.deepEqual(plan.desired, w.fresh().desired);
});

test('planner – the finalizer coming names the pods of its target (their pushes waited for it)', () => {
  const w = world();
  for (const name of ['a-0', 'a-1']) w.putPod(pod(name, { app: 'a' }));
  w.putPod(pod('b-0', { app: 'b' }));
  assert.deepEqual(w.putScenario(es('sa', '/a', a)), []);
  const guarded = es('sa', '/a', a);
  guarded.metadata.finalizers = [FINALIZER];
  assert.deepEqual(w.putScenario(guarded).sort(), ['a-0', 'a-1']);
  assert.deepEqual(w.putScenario(structuredClone(guarded)), [], 'still guarded: nothing');
});

test('planner – a deleting EchoScenario that goes is taken out without planning again; the result is a fresh plan', () => {
  const w = world();
  for (const name of ['a-0', 'a-1']) w.putPod(pod(name, { app: 'a' }));
  w.putPod(pod('b-0', { app: 'b' }));
  w.putScenario(es('s1', '/1', a));
  w.putScenario(es('s2', '/2', a, '2026-01-01T00:00:01Z'));
  w.putScenario(es('sb', '/b', b));
  const deleting = (e: EchoScenario): EchoScenario => ({
    ...e,
    metadata: { ...e.metadata, deletionTimestamp: new Date(), finalizers: [FINALIZER] },
  });
  w.putScenario(deleting(es('s1', '/1', a)));
  w.putScenario(deleting(es('sb', '/b', b)));
  let plan = w.planner.plan(NS);
  assert.deepEqual(paths(plan), { 'a-0': '/2', 'a-1': '/2', 'b-0': '' });
  const builds = w.planner.builds;
  // s1 gone: a-0 and a-1 still hold s2; sb gone: b-0 holds nothing of anyone (reported, to forget it).
  w.deleteScenario('s1');
  w.deleteScenario('sb');
  plan = w.planner.plan(NS);
  assert.equal(w.planner.builds, builds, 'not planned again');
  assert.deepEqual(w.reports.at(-1), { scenarios: [], pods: ['b-0'] });
  assert.deepEqual(paths(plan), { 'a-0': '/2', 'a-1': '/2' });
  const fresh = w.fresh();
  assert.deepEqual(plan.desired, fresh.desired);
  assert.deepEqual(plan.scenarios, fresh.scenarios);
  // One that was not deleting (the last on its target): its pods are left with nothing.
  w.deleteScenario('s2');
  assert.deepEqual(paths(w.planner.plan(NS)), {});
  assert.deepEqual(w.reports.at(-1), { scenarios: [], pods: ['a-0', 'a-1'] });
});

test('planner – a change in one target plans only the EchoScenarios of its own set of targets sharing pods', () => {
  const w = world();
  for (const name of ['a-0', 'a-1']) w.putPod(pod(name, { app: 'a', tier: 'x' }));
  for (const name of ['b-0', 'b-1']) w.putPod(pod(name, { app: 'b' }));
  for (let i = 0; i < 3; i++) w.putScenario(es(`sa${i}`, `/a${i}`, a));
  for (let i = 0; i < 4; i++) w.putScenario(es(`sb${i}`, `/b${i}`, b));
  w.planner.plan(NS);
  assert.equal(w.planner.planned, 7);
  // A new spec in target a: the three of a planned, not the four of b.
  w.putScenario({ ...es('sa0', '/a0-new', a), metadata: { ...es('sa0', '', a).metadata, generation: 2 } });
  w.planner.plan(NS);
  assert.equal(w.planner.planned, 7 + 3);
  // A pod of b changes readiness: b's four.
  w.putPod(pod('b-1', { app: 'b' }, '10.0.0.9'));
  w.planner.plan(NS);
  assert.equal(w.planner.planned, 7 + 3 + 4);
  // A selector that takes pods of a (tier=x) joins a's set: conflicts across them are still seen.
  w.putScenario(es('sx', '/a1', { selector: { matchLabels: { tier: 'x' } } }, '2026-01-01T00:00:09Z'));
  const plan = w.planner.plan(NS);
  assert.equal(plan.scenarios.get('sx')?.kind, 'Conflict');
  assert.equal(w.planner.planned, 7 + 3 + 4 + 4, 'a and the new selector, one set');
  assert.deepEqual(plan.scenarios, w.fresh().scenarios);
  assert.deepEqual(plan.desired, w.fresh().desired);
});
