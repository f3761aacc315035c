import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Type } from '@sinclair/typebox';
import { HTTP_URL, loadSettings, setting, settingsRows, settingsTable } from '../../src/obs/internal.ts';

const SETTINGS = {
  port: setting('PORT', Type.Integer({ minimum: 0, maximum: 65535, default: 8080 }), 'The port.'),
  ratio: setting('RATIO', Type.Number({ minimum: 0, maximum: 1, default: 0.5 }), 'A share.'),
  verbose: setting('VERBOSE', Type.Boolean({ default: false }), 'Say more.'),
  level: setting(
    'LEVEL',
    Type.Union([Type.Literal('info'), Type.Literal('debug')], { default: 'info' }),
    'How much.',
  ),
  url: setting('UPSTREAM', Type.Optional(HTTP_URL), 'Where to.', { trim: true }),
  token: setting('TOKEN', Type.Optional(Type.String({ pattern: '^[a-z]+$' })), 'A secret.', {
    secret: true,
    form: 'lower-case letters',
  }),
} as const;

test('settings – unset and empty variables take the defaults; optional ones stay undefined', () => {
  const loaded = loadSettings(SETTINGS, { PORT: '', VERBOSE: undefined });
  assert.ok(loaded.ok);
  assert.deepEqual(loaded.value, {
    port: 8080,
    ratio: 0.5,
    verbose: false,
    level: 'info',
    url: undefined,
    token: undefined,
  });
});

test('settings – each value is read through its schema, typed', () => {
  const loaded = loadSettings(SETTINGS, {
    PORT: '9090',
    RATIO: '0.25',
    VERBOSE: 'true',
    LEVEL: 'debug',
    UPSTREAM: ' https://api.example:8443/v1\n',
    TOKEN: 'abc',
  });
  assert.ok(loaded.ok);
  assert.deepEqual(loaded.value, {
    port: 9090,
    ratio: 0.25,
    verbose: true,
    level: 'debug',
    url: 'https://api.example:8443/v1',
    token: 'abc',
  });
});

test('settings – every problem at once, one line each, naming the variable, the value and the form', () => {
  const loaded = loadSettings(SETTINGS, {
    PORT: '2.5',
    RATIO: '1e3',
    VERBOSE: 'yes',
    LEVEL: 'loud',
    UPSTREAM: 'ftp://files',
    TOKEN: 'S3CRET value',
  });
  assert.equal(loaded.ok, false);
  assert.deepEqual(!loaded.ok && loaded.problems, [
    'PORT="2.5" is invalid: expected integer 0-65535',
    'RATIO="1e3" is invalid: expected number 0-1',
    'VERBOSE="yes" is invalid: expected true or false',
    'LEVEL="loud" is invalid: expected one of info, debug',
    'UPSTREAM="ftp://files" is invalid: expected an http or https URL',
    'TOKEN is invalid: expected lower-case letters',
  ]);
});

test('settings – a number is written as digits: no hex, exponent, spaces or trailing text', () => {
  for (const bad of ['0x10', '1e2', ' 80', '80 ', '80a', 'Infinity', '-', '.']) {
    const loaded = loadSettings({ port: SETTINGS.port }, { PORT: bad });
    assert.equal(loaded.ok, false, JSON.stringify(bad));
  }
  for (const [text, value] of [
    ['0', 0],
    ['65535', 65535],
    ['+80', 80],
  ] as const) {
    const loaded = loadSettings({ port: SETTINGS.port }, { PORT: text });
    assert.deepEqual(loaded, { ok: true, value: { port: value } }, text);
  }
});

test('settings – the reference table comes from the same definitions', () => {
  const rows = settingsRows(SETTINGS);
  assert.deepEqual(rows[0], {
    env: 'PORT',
    default: '`8080`',
    form: 'integer 0-65535',
    description: 'The port.',
  });
  assert.equal(rows[4]?.default, 'unset');
  const table = settingsTable(SETTINGS).split('\n');
  assert.equal(table.length, 2 + Object.keys(SETTINGS).length);
  assert.equal(table[2], '| `PORT` | `8080` | integer 0-65535 | The port. |');
  assert.equal(table[5], '| `LEVEL` | `info` | one of info, debug | How much. |');
});

test('settings – a decoder reads a form a schema cannot state; the default as written is read the same way', () => {
  const seconds = (text: string) =>
    /^\d+s$/.test(text)
      ? { ok: true as const, value: Number(text.slice(0, -1)) * 1000 }
      : { ok: false as const };
  const DEFINITION = {
    delayMs: setting('DELAY', Type.Integer({ maximum: 60_000 }), 'A delay.', {
      decode: seconds,
      defaultText: '5s',
      form: 'whole seconds, at most 60s',
    }),
    chaos: setting('CHAOS', Type.Integer(), 'Empty is none.', {
      decode: (text) => (text === '' ? { ok: true, value: 0 } : seconds(text)),
      emptyIsValue: true,
      defaultText: '',
    }),
  } as const;
  assert.deepEqual(loadSettings(DEFINITION, {}), { ok: true, value: { delayMs: 5000, chaos: 0 } });
  assert.deepEqual(loadSettings(DEFINITION, { DELAY: '30s', CHAOS: '' }), {
    ok: true,
    value: { delayMs: 30_000, chaos: 0 },
  });
  const refused = loadSettings(DEFINITION, { DELAY: '90s', CHAOS: 'x' });
  assert.equal(refused.ok, false);
  assert.deepEqual(!refused.ok && refused.problems, [
    'DELAY="90s" is invalid: expected whole seconds, at most 60s',
    'CHAOS="x" is invalid: expected integer',
  ]);
  assert.deepEqual(!refused.ok && refused.partial, {}, 'nothing valid to report');
  assert.equal(settingsRows(DEFINITION)[0]?.default, '`5s`', 'the table shows the default as written');
  const broken = { d: setting('D', Type.Integer(), 'x', { decode: seconds, defaultText: 'soon' }) };
  assert.throws(
    () => loadSettings(broken, {}),
    TypeError,
    'a default that does not read is a bug of the definition',
  );
});
