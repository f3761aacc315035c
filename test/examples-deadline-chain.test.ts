import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

/**
 * The deadline-chain example shows the timeout budget crossing three services: this checks what it
 * prints. Bounds are generous: only the order of the numbers is asserted, not the timing.
 */

const SERVER = fileURLToPath(new URL('../examples/deadline-chain/server.ts', import.meta.url));
const START_TIMEOUT_MS = 20_000;

interface Hop {
  hop: string;
  budget?: { remainingMs: number; deadlineEpochMs: number; source: string };
  headers: Record<string, string | null>;
  next?: Hop;
}

test('examples – deadline-chain: one absolute deadline across three hops, the remaining budget shrinking', async (t) => {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(OBS|OTEL)_/i.test(k)));
  const child = spawn(process.execPath, [SERVER], { env: { ...env, PORT: '0', HOST: '127.0.0.1' } });
  t.after(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  let output = '';
  child.stderr.on('data', (chunk: Buffer) => {
    output += chunk;
  });
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no "listening at" line:\n${output}`)), START_TIMEOUT_MS);
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk;
      const m = /listening at (https?:\/\/[^\s"]+)/i.exec(output);
      if (m?.[1] !== undefined) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code} before listening:\n${output}`));
    });
  });

  const before = Date.now();
  const res = await fetch(`${url}/`, { headers: { 'Obs-Timeout-Ms': '2000' } });
  assert.equal(res.status, 200, output);
  const hop1 = (await res.json()) as Hop;
  const hop2 = hop1.next;
  const hop3 = hop2?.next;
  assert.ok(hop1.budget && hop2?.budget && hop3?.budget, JSON.stringify(hop1));

  assert.equal(hop1.hop, 'hop1');
  assert.equal(hop1.budget.source, 'remaining-header');
  assert.equal(hop1.headers['obs-timeout-ms'], '2000');
  assert.ok(
    hop1.budget.remainingMs > 0 && hop1.budget.remainingMs <= 2000,
    `hop1: ${hop1.budget.remainingMs}`,
  );
  assert.ok(hop1.budget.deadlineEpochMs > before && hop1.budget.deadlineEpochMs <= Date.now() + 2000);

  for (const hop of [hop2, hop3]) {
    assert.equal(hop.budget?.source, 'deadline-header', hop.hop);
    assert.equal(hop.budget?.deadlineEpochMs, hop1.budget.deadlineEpochMs, hop.hop);
    assert.equal(hop.headers['obs-timeout-deadline-ms'], String(hop1.budget.deadlineEpochMs), hop.hop);
  }
  assert.equal(hop2.hop, 'hop2');
  assert.equal(hop3.hop, 'hop3');
  assert.ok(hop2.budget.remainingMs <= hop1.budget.remainingMs, JSON.stringify(hop1));
  assert.ok(hop3.budget.remainingMs < hop1.budget.remainingMs, JSON.stringify(hop1));

  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  child.kill('SIGTERM');
  assert.equal(await exited, 0, output);
});
