/** The faults panel's facts (issue #37): each environment default named by its variable. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadConfig } from '../../../src/echo/config.ts';
import { describeFaultDefaults } from '../../../src/echo/console/fault-summary.ts';

const defaultsOf = (env: Record<string, string>) => {
  const config = loadConfig(env);
  return describeFaultDefaults(config.faultDefaults, config.chaosPercent);
};

test('fault summary – no variable, no default', () => {
  assert.deepEqual(defaultsOf({}), []);
});

test('fault summary – each default by its variable, weighted lists in the grammar of their header', () => {
  assert.deepEqual(
    defaultsOf({
      ECHO_STATUS: '503:30,429:10',
      ECHO_JITTER: '200,50',
      ECHO_CHAOS: '5',
      ECHO_THROTTLE: '1KB/s',
      ECHO_RETRY_AFTER: '3',
    }),
    [
      { variable: 'ECHO_JITTER', value: 'up to 250 ms' },
      { variable: 'ECHO_STATUS', value: '503:30,429:10' },
      { variable: 'ECHO_CHAOS', value: '5%' },
      { variable: 'ECHO_THROTTLE', value: '1KB/s' },
      { variable: 'ECHO_RETRY_AFTER', value: '3' },
    ],
  );
  assert.deepEqual(defaultsOf({ ECHO_STATUS: '503' }), [{ variable: 'ECHO_STATUS', value: '503' }]);
});
