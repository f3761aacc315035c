import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import pino from 'pino';
import { loadObsConfig, obsFastifyOptions, obsLoggerOptions } from '../../../../src/obs/index.ts';

/** The lines a pino logger built from `options` writes, parsed. */
function linesOf(options: pino.LoggerOptions, log: (logger: pino.Logger) => void): Record<string, unknown>[] {
  const raw: string[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      raw.push(String(chunk));
      done();
    },
  });
  log(pino(options, stream));
  return raw
    .join('')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

test('logging – time is ISO 8601 UTC in obs logger options, as the echo service logs it', () => {
  const { config } = loadObsConfig({ env: {} });
  const before = Date.now();
  const [line] = linesOf(obsLoggerOptions({ config }), (l) => l.info('hello'));
  assert.match(String(line?.['time']), ISO_UTC);
  const at = Date.parse(String(line?.['time']));
  assert.ok(at >= before - 1000 && at <= Date.now() + 1000, `time ${String(line?.['time'])}`);
  // obsFastifyOptions hands out the same logger options.
  const [viaFastify] = linesOf(obsFastifyOptions({ config }).logger as pino.LoggerOptions, (l) =>
    l.info('x'),
  );
  assert.match(String(viaFastify?.['time']), ISO_UTC);
});

test("logging – the application's own timestamp wins, and a disabled obs.logging leaves pino's default", () => {
  const { config } = loadObsConfig({ env: {} });
  const [own] = linesOf(obsLoggerOptions({ config, base: { timestamp: () => ',"time":"own"' } }), (l) =>
    l.info('x'),
  );
  assert.equal(own?.['time'], 'own');
  const [none] = linesOf(obsLoggerOptions({ config, base: { timestamp: false } }), (l) => l.info('x'));
  assert.equal(none?.['time'], undefined);
  const off = loadObsConfig({ env: { OBS_LOGGING_ENABLED: 'false' } }).config;
  const [plain] = linesOf(obsLoggerOptions({ config: off }), (l) => l.info('x'));
  assert.equal(typeof plain?.['time'], 'number', 'obs.logging off: the options are the base, pino decides');
});
