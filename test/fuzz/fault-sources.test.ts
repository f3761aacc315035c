/**
 * One fault vocabulary (ADR 0033): the same text means the same fault whether a request's header,
 * an environment default or a scenario response's field gives it. Over near-grammar values, each
 * field's three readers agree on what they accept, and whatever they refuse is refused naming it:
 * the header in the 400's details, the variable in the startup line, the field's location in the
 * scenario problems.
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import fc from 'fast-check';
import { DEFAULT_MAX_DELAY_MS, DEFAULT_MAX_RESPONSE_BYTES, loadConfig } from '../../src/echo/config.ts';
import { parseControls } from '../../src/echo/controls.ts';
import { isEchoError } from '../../src/echo/errors.ts';
import { FAULT_FIELDS, SCENARIO_FAULT_FIELDS } from '../../src/scenario/faults.ts';
import { validateScenarios } from '../../src/scenario/index.ts';
import { fuzzParameters, GRAMMAR_PIECES } from './fuzz.ts';

const FILE = 'fault-sources';
const LIMITS = { maxDelayMs: DEFAULT_MAX_DELAY_MS, maxResponseBytes: DEFAULT_MAX_RESPONSE_BYTES };

/**
 * `ECHO_DELAY` keeps the wider grammar it always had (ranges, lognormal) and `ECHO_CHAOS` its own
 * reader: the other fields' variables are read by their header's parser.
 */
const FIELDS = FAULT_FIELDS.filter((f) => f.field !== 'delay' && f.field !== 'chaos');

/** Printable Latin-1, as every source can carry it (a header, a variable, a scenario string). */
const text = fc
  .oneof(
    {
      weight: 4,
      arbitrary: fc
        .array(fc.constantFrom(...GRAMMAR_PIECES), { minLength: 1, maxLength: 6 })
        .map((p) => p.join('')),
    },
    {
      weight: 1,
      arbitrary: fc.string({
        unit: fc.integer({ min: 0x21, max: 0x7e }).map((c) => String.fromCharCode(c)),
        minLength: 1,
        maxLength: 24,
      }),
    },
  )
  .filter(
    (t) => /^[\x21-\x7e\xa0-\xff](?:[\x20-\x7e\xa0-\xff]*[\x21-\x7e\xa0-\xff])?$/.test(t) && t.length <= 256,
  );

test('a fault text is accepted by its header, its variable and its scenario field alike, or refused by each naming it', () => {
  fc.assert(
    fc.property(fc.constantFrom(...FIELDS), text, (field, value) => {
      const header = parseControls({ [field.header]: value }, LIMITS, () => 0.5);
      const headerOk = header.problems.length === 0;
      if (!headerOk)
        assert.deepEqual(
          header.problems.map((p) => p.field),
          [field.header],
        );

      let envOk = true;
      try {
        loadConfig({ [field.env]: value });
      } catch (error) {
        assert.ok(isEchoError(error) && error.code === 'ECHO_ERR_CONFIG', String(error));
        assert.match(String((error as Error).message), new RegExp(`${field.env}=`));
        envOk = false;
      }
      assert.equal(envOk, headerOk, `${field.env}=${value} vs ${field.header}: ${value}`);

      if ((SCENARIO_FAULT_FIELDS as readonly string[]).includes(field.field)) {
        const result = validateScenarios(
          [{ path: '/f', responses: [{ status: 200, [field.field]: value }] }],
          LIMITS,
        );
        assert.equal(result.ok, headerOk, `scenario ${field.field}: ${value} vs ${field.header}: ${value}`);
        if (!result.ok) {
          assert.deepEqual(
            result.problems.map((p) => p.path),
            [`/0/responses/0/${field.field}`],
          );
        }
      }
    }),
    fuzzParameters(FILE, 'three readers agree', 3000),
  );
});
