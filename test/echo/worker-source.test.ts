import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { WORKER_BOOTSTRAP, workerSources } from '../../src/echo/worker-source.ts';

const resolve = (specifier: string): string | undefined => {
  try {
    return import.meta.resolve(specifier);
  } catch {
    return undefined;
  }
};
const logWorker = new URL('../../src/echo/log-worker.ts', import.meta.url);

test('workerSources – the log worker and every TypeScript module it imports, as JavaScript', () => {
  const prepared = workerSources(logWorker, resolve);
  assert.ok(prepared !== undefined);
  assert.equal(prepared.entry, logWorker.href);
  const urls = Object.keys(prepared.sources);
  for (const name of ['log-worker.ts', 'log-batch.ts', 'log-destination.ts', 'log-thread.ts', 'masking.ts'])
    assert.ok(
      urls.some((url) => url.endsWith(`/${name}`)),
      `${name} among ${urls.join(', ')}`,
    );
  for (const [url, js] of Object.entries(prepared.sources)) {
    // Types are gone (a type-only import among them), and the code is otherwise the file's.
    assert.doesNotMatch(js, /^import type /m, url);
    assert.equal(js.split('\n').length, readFileSync(new URL(url), 'utf8').split('\n').length, url);
    // Every module a served one imports from this repository is served too: the worker never
    // needs node's TypeScript stripper.
    for (const match of js.matchAll(/\bfrom\s*['"]([^'"]+)['"]/g)) {
      const specifier = match[1]!;
      if (specifier.startsWith('node:')) continue;
      const target = specifier.startsWith('.') ? new URL(specifier, url).href : resolve(specifier);
      if (target?.endsWith('.ts')) assert.ok(urls.includes(target), `${target}, imported by ${url}`);
    }
  }
});

test('workerSources – nothing to strip for JavaScript', () => {
  assert.equal(workerSources(new URL('file:///somewhere/log-worker.js'), resolve), undefined);
});

test('WORKER_BOOTSTRAP – a worker runs the modules it is given, not the files on disk', async () => {
  // On disk, each module fails if it is ever loaded from there.
  const dir = mkdtempSync(join(tmpdir(), 'worker-source-'));
  const entry = pathToFileURL(join(dir, 'entry.ts')).href;
  const helper = pathToFileURL(join(dir, 'helper.ts')).href;
  writeFileSync(new URL(entry), "throw new Error('entry.ts read from disk');\n");
  writeFileSync(new URL(helper), "throw new Error('helper.ts read from disk');\n");
  const worker = new Worker(WORKER_BOOTSTRAP, {
    eval: true,
    execArgv: [],
    workerData: {
      workerSources: {
        entry,
        sources: {
          [entry]: `import { parentPort } from 'node:worker_threads';\nimport { twice } from './helper.ts';\nparentPort.postMessage(twice(21));\n`,
          [helper]: 'export const twice = (n) => n * 2;\n',
        },
      },
    },
  });
  try {
    const answer = await new Promise((resolveAnswer, reject) => {
      worker.once('message', resolveAnswer);
      worker.once('error', reject);
    });
    assert.equal(answer, 42);
  } finally {
    await worker.terminate();
    rmSync(dir, { recursive: true, force: true });
  }
});
