import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CardinalityFirewall, type EnforcementMode } from '../../../src/obs/index.ts';

test('cardinality – keeps the cap of distinct values, then rewrites to OVERFLOW in ENFORCING', () => {
  const overflows: string[] = [];
  const firewall = new CardinalityFirewall({
    maxValuesPerTag: 2,
    onOverflow: (m, t) => overflows.push(`${m}/${t}`),
  });
  assert.equal(firewall.admit('m', 'path', '/a'), '/a');
  assert.equal(firewall.admit('m', 'path', '/b'), '/b');
  assert.equal(firewall.admit('m', 'path', '/c'), 'OVERFLOW');
  assert.equal(firewall.admit('m', 'path', '/a'), '/a', 'a kept value stays');
  assert.equal(firewall.admit('m', 'other', '/c'), '/c', 'each tag has its own cap');
  assert.equal(firewall.admit('n', 'path', '/c'), '/c', 'each meter has its own cap');
  assert.deepEqual(overflows, ['m/path']);
});

test('cardinality – DRY_RUN lets the value through but counts it; the mode is read on every value', () => {
  let mode: EnforcementMode = 'DRY_RUN';
  let counted = 0;
  const firewall = new CardinalityFirewall({
    maxValuesPerTag: 1,
    mode: () => mode,
    onOverflow: () => counted++,
  });
  firewall.admit('m', 't', 'a');
  assert.equal(firewall.admit('m', 't', 'b'), 'b');
  mode = 'ENFORCING';
  assert.equal(firewall.admit('m', 't', 'c'), 'OVERFLOW');
  assert.equal(counted, 2);
  assert.deepEqual(firewall.offenders(), [{ meter: 'm', tagKey: 't', values: 1, overflowed: 2 }]);
});

test('cardinality – overflow value, disabling and meter prefixes are configurable', () => {
  const custom = new CardinalityFirewall({ maxValuesPerTag: 1, overflowValue: '_other' });
  custom.admit('m', 't', 'a');
  assert.equal(custom.admit('m', 't', 'b'), '_other');

  const off = new CardinalityFirewall({ maxValuesPerTag: 1, enabled: false });
  off.admit('m', 't', 'a');
  assert.equal(off.admit('m', 't', 'b'), 'b');
  assert.deepEqual(off.offenders(), []);

  const scoped = new CardinalityFirewall({
    maxValuesPerTag: 1,
    meterPrefixesToProtect: ['http_'],
    exemptMeterPrefixes: ['http_internal_'],
  });
  for (const meter of ['http_requests', 'http_internal_x', 'db_queries']) scoped.admit(meter, 't', 'a');
  assert.equal(scoped.admit('http_requests', 't', 'b'), 'OVERFLOW');
  assert.equal(scoped.admit('http_internal_x', 't', 'b'), 'b');
  assert.equal(scoped.admit('db_queries', 't', 'b'), 'b');
});

test('cardinality – admitLabels guards every label of one recording', () => {
  const firewall = new CardinalityFirewall({ maxValuesPerTag: 1 });
  assert.deepEqual(firewall.admitLabels('m', { user: 'u1', status: 200 }), { user: 'u1', status: '200' });
  assert.deepEqual(firewall.admitLabels('m', { user: 'u2', status: 200 }), {
    user: 'OVERFLOW',
    status: '200',
  });
});

test('cardinality – a throwing overflow callback never fails the recording', () => {
  const firewall = new CardinalityFirewall({
    maxValuesPerTag: 0,
    onOverflow: () => {
      throw new Error('boom');
    },
  });
  assert.equal(firewall.admit('m', 't', 'x'), 'OVERFLOW');
});

test('cardinality – offenders are ordered by overflow, then by distinct values, and limited', () => {
  const firewall = new CardinalityFirewall({ maxValuesPerTag: 3 });
  for (const v of ['a', 'b']) firewall.admit('wide', 't', v);
  for (const v of ['a', 'b', 'c', 'd']) firewall.admit('over', 't', v);
  firewall.admit('narrow', 't', 'a');
  assert.deepEqual(
    firewall.offenders().map((o) => o.meter),
    ['over', 'wide', 'narrow'],
  );
  assert.equal(firewall.offenders(1).length, 1);
});
