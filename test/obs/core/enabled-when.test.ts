import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createRequestMatcher, MATCH_ALL } from '../../../src/obs/core/enabled-when.ts';

const request = (url: string, headers: Record<string, string | string[]> = {}) => ({ url, headers });

test('enabled-when – an empty block matches every request', () => {
  assert.equal(createRequestMatcher({ 'header-not-equals': {}, 'path-excludes': [] }), MATCH_ALL);
});

test('enabled-when – header-not-equals skips a request carrying exactly that value; a missing header does not', () => {
  const match = createRequestMatcher({ 'header-not-equals': { 'X-Synthetic': 'true' }, 'path-excludes': [] });
  assert.equal(match(request('/', { 'x-synthetic': 'true' })), false);
  assert.equal(match(request('/', { 'x-synthetic': 'TRUE' })), true, 'values compare exactly');
  assert.equal(match(request('/', { 'x-synthetic': 'false' })), true);
  assert.equal(match(request('/')), true);
  assert.equal(match(request('/', { 'x-synthetic': ['no', 'true'] })), false, 'any of repeated values');
});

test('enabled-when – path-excludes skips the path and what lies below it, not look-alikes, ignoring the query', () => {
  const match = createRequestMatcher({ 'header-not-equals': {}, 'path-excludes': ['/internal', '/health/'] });
  assert.equal(match(request('/internal')), false);
  assert.equal(match(request('/internal/jobs?x=1')), false);
  assert.equal(match(request('/internal?x=1')), false);
  assert.equal(match(request('/internals')), true);
  assert.equal(match(request('/health')), false, 'a trailing slash in the setting is ignored');
  assert.equal(match(request('/api/internal')), true);
  const all = createRequestMatcher({ 'header-not-equals': {}, 'path-excludes': ['/'] });
  assert.equal(all(request('/anything')), false);
});

test('enabled-when – both fields must admit the request', () => {
  const match = createRequestMatcher({
    'header-not-equals': { 'client-id': 'probe' },
    'path-excludes': ['/x'],
  });
  assert.equal(match(request('/y', { 'client-id': 'app' })), true);
  assert.equal(match(request('/x', { 'client-id': 'app' })), false);
  assert.equal(match(request('/y', { 'client-id': 'probe' })), false);
});
