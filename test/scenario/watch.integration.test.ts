import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, renameSync, rmSync, symlinkSync, watch, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import {
  loadScenarioFile,
  type Scenario,
  type ScenarioFileWatcher,
  type WatchScenarioFileOptions,
  watchScenarioFile,
} from '../../src/scenario/index.ts';
import { quietFor, within } from '../helpers/runtime.ts';
import { Calls, tempDir } from './helpers.ts';

/** A one-scenario document whose single response has the given status. */
function doc(status: number, path = '/watched'): string {
  return `- path: ${path}\n  responses:\n    - status: ${status}\n`;
}

function set(status: number, path = '/watched'): Scenario[] {
  return [{ path, responses: [{ status }] }];
}

/** Starts a watcher recording its callbacks, closed when the test ends. */
function watchRecorded(
  t: TestContext,
  file: string,
  options: Partial<WatchScenarioFileOptions> = {},
): { changes: Calls<Scenario[]>; errors: Calls<Error & { code?: string }>; watcher: ScenarioFileWatcher } {
  const changes = new Calls<Scenario[]>();
  const errors = new Calls<Error & { code?: string }>();
  const watcher = watchScenarioFile(file, {
    debounceMs: 20,
    ...options,
    initial: 'initial' in options ? options.initial : loadScenarioFile(file),
    onChange: changes.record,
    onError: errors.record,
  });
  t.after(() => watcher.close());
  return { changes, errors, watcher };
}

test('watchScenarioFile – sees a file rewritten in place', async (t) => {
  const file = join(tempDir(t), 'scenarios.yaml');
  writeFileSync(file, doc(200));
  const { changes, errors, watcher } = watchRecorded(t, file);
  // After the first look, what follows can only be seen through a file system event.
  await watcher.ready;
  writeFileSync(file, doc(201));
  assert.deepEqual(await changes.until(1), [set(201)]);
  writeFileSync(file, doc(202));
  assert.deepEqual((await changes.until(2))[1], set(202));
  assert.equal(errors.values.length, 0);
});

test('watchScenarioFile – sees editor-style atomic renames over the file, one after another', async (t) => {
  const dir = tempDir(t);
  const file = join(dir, 'scenarios.yaml');
  writeFileSync(file, doc(200));
  const { changes, errors, watcher } = watchRecorded(t, file);
  await watcher.ready;
  // Twice: a watch on the file's inode would see the first rename and then watch a deleted inode.
  for (const [i, status] of [204, 205].entries()) {
    writeFileSync(join(dir, '.scenarios.yaml.swp'), doc(status));
    renameSync(join(dir, '.scenarios.yaml.swp'), file);
    assert.deepEqual((await changes.until(i + 1))[i], set(status));
  }
  assert.equal(errors.values.length, 0);
});

test('watchScenarioFile – sees ConfigMap updates: each a new ..data symlink renamed over the old', async (t) => {
  const dir = tempDir(t);
  const version = (n: number) => `..2026_01_01_00_0${n}_00.00000000${n}`;
  mkdirSync(join(dir, version(1)));
  writeFileSync(join(dir, version(1), 'scenarios.yaml'), doc(200));
  symlinkSync(version(1), join(dir, '..data'));
  symlinkSync(join('..data', 'scenarios.yaml'), join(dir, 'scenarios.yaml'));
  const file = join(dir, 'scenarios.yaml');
  const { changes, errors, watcher } = watchRecorded(t, file);
  await watcher.ready;
  assert.deepEqual(loadScenarioFile(file), set(200));

  // What the kubelet's atomic writer does: a new timestamped dir, a ..data_tmp symlink to it
  // renamed over ..data, then the old dir removed. The file's own symlink never changes.
  for (const [n, status] of [
    [2, 503],
    [3, 504],
  ] as const) {
    mkdirSync(join(dir, version(n)));
    writeFileSync(join(dir, version(n), 'scenarios.yaml'), doc(status));
    symlinkSync(version(n), join(dir, '..data_tmp'));
    renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
    rmSync(join(dir, version(n - 1)), { recursive: true });
    assert.deepEqual((await changes.until(n - 1))[n - 2], set(status));
  }
  assert.equal(errors.values.length, 0);
});

test('watchScenarioFile – an invalid change goes to onError only, and a later valid one applies', async (t) => {
  const file = join(tempDir(t), 'scenarios.yaml');
  writeFileSync(file, doc(200));
  const { changes, errors, watcher } = watchRecorded(t, file);
  await watcher.ready;
  writeFileSync(file, doc(700));
  const [invalid] = await errors.until(1);
  assert.equal(invalid?.code, 'SCENARIO_ERR_INVALID');
  assert.deepEqual(
    (invalid as unknown as { problems: Array<{ path: string }> }).problems.map((p) => p.path),
    ['/0/responses/0/status'],
  );
  writeFileSync(file, '- path: [');
  assert.equal((await errors.until(2))[1]?.code, 'SCENARIO_ERR_FILE_SYNTAX');
  assert.equal(changes.values.length, 0);
  writeFileSync(file, doc(201));
  assert.deepEqual(await changes.until(1), [set(201)]);
  assert.equal(errors.values.length, 2);
});

test('watchScenarioFile – a vanished file is reported once; its return with new content applies', async (t) => {
  const file = join(tempDir(t), 'scenarios.yaml');
  writeFileSync(file, doc(200));
  const { changes, errors, watcher } = watchRecorded(t, file);
  await watcher.ready;
  rmSync(file);
  assert.equal((await errors.until(1))[0]?.code, 'SCENARIO_ERR_FILE_NOT_FOUND');
  writeFileSync(file, doc(202));
  assert.deepEqual(await changes.until(1), [set(202)]);
  assert.equal(errors.values.length, 1);
});

test('watchScenarioFile – unchanged content, comments and a return to the current set are ignored', async (t) => {
  const file = join(tempDir(t), 'scenarios.yaml');
  writeFileSync(file, doc(200));
  const { changes, errors } = watchRecorded(t, file);
  // Each write that must be ignored gets a quiet period past the 20 ms debounce, so it is re-read on
  // its own (and would reach onChange, failing the last assertion) rather than merged with the next.
  const reread = 'past the 20 ms debounce: the write is re-read alone, and ignored';
  writeFileSync(file, doc(200));
  await quietFor(100, reread);
  writeFileSync(file, `# a comment changes the text, not the scenarios\n${doc(200)}`);
  await quietFor(100, reread);
  writeFileSync(file, doc(999));
  await errors.until(1);
  writeFileSync(file, doc(200));
  await quietFor(100, reread);
  // The only change that reaches onChange is the first real one, made last.
  writeFileSync(file, doc(203));
  assert.deepEqual(await changes.until(1), [set(203)]);
  assert.equal(changes.values.length, 1);
});

test('watchScenarioFile – a burst of writes inside the debounce window gives one change', async (t) => {
  const file = join(tempDir(t), 'scenarios.yaml');
  writeFileSync(file, doc(200));
  const { changes, watcher } = watchRecorded(t, file, { debounceMs: 300 });
  await watcher.ready;
  for (let status = 201; status <= 205; status++) writeFileSync(file, doc(status));
  assert.deepEqual(await changes.until(1), [set(205)]);
  await quietFor(400, 'past the 300 ms debounce again: no second change may follow');
  assert.equal(changes.values.length, 1);
});

test('watchScenarioFile – reports a change made between the load and the watch (initial)', async (t) => {
  const file = join(tempDir(t), 'scenarios.yaml');
  writeFileSync(file, doc(200));
  const loaded = loadScenarioFile(file);
  writeFileSync(file, doc(201));
  const { changes, watcher } = watchRecorded(t, file, { initial: loaded });
  await watcher.ready;
  // Found by the first look itself, no event needed.
  assert.deepEqual(changes.values, [set(201)]);
});

test('watchScenarioFile – without initial, the content at start is the baseline', async (t) => {
  const file = join(tempDir(t), 'scenarios.yaml');
  writeFileSync(file, doc(200));
  const { changes, watcher } = watchRecorded(t, file, { initial: undefined });
  await watcher.ready;
  writeFileSync(file, doc(200));
  await quietFor(100, 'past the 20 ms debounce: the rewrite is re-read alone, and ignored');
  writeFileSync(file, doc(201));
  assert.deepEqual(await changes.until(1), [set(201)]);
});

test('watchScenarioFile – a missing file that appears later is applied', async (t) => {
  const file = join(tempDir(t), 'scenarios.yaml');
  const { changes, errors, watcher } = watchRecorded(t, file, { initial: [] });
  await watcher.ready;
  writeFileSync(file, doc(200));
  assert.deepEqual(await changes.until(1), [set(200)]);
  assert.equal(errors.values.length, 0);
});

test('watchScenarioFile – an onChange that throws is reported to onError', async (t) => {
  const file = join(tempDir(t), 'scenarios.yaml');
  writeFileSync(file, doc(200));
  const errors = new Calls<Error>();
  const watcher = watchScenarioFile(file, {
    debounceMs: 20,
    initial: set(200),
    onChange: () => {
      throw new Error('store refused');
    },
    onError: errors.record,
  });
  t.after(() => watcher.close());
  writeFileSync(file, doc(201));
  assert.equal((await errors.until(1))[0]?.message, 'store refused');
});

test('watchScenarioFile – close stops every callback, even one already scheduled', async (t) => {
  const file = join(tempDir(t), 'scenarios.yaml');
  writeFileSync(file, doc(200));
  const { changes, errors, watcher } = watchRecorded(t, file, { debounceMs: 200 });
  await watcher.ready;
  // A watch of our own on the same directory, made after the watcher's: the file system event reaches
  // both in one read of the loop's inotify descriptor, the watcher first (libuv calls the watches of
  // a directory in the order they were made), so once ours has it the watcher has scheduled its
  // re-read. The close follows with no timer phase in between: the debounce cannot have run out.
  const probe = watch(dirname(file));
  const arrived = new Promise<void>((resolve) => probe.once('change', () => resolve()));
  t.after(() => probe.close());
  writeFileSync(file, doc(201));
  await within(arrived, 'the file system event of the write', 10_000);
  probe.close();
  watcher.close();
  watcher.close();
  writeFileSync(file, doc(202));
  rmSync(file);
  await quietFor(500, 'past the 200 ms debounce: the re-read scheduled before close must not run');
  assert.equal(changes.values.length, 0);
  assert.equal(errors.values.length, 0);
});

test('watchScenarioFile – refuses a directory that does not exist and bad options', (t) => {
  const dir = tempDir(t);
  const options = { onChange: () => {}, onError: () => {} };
  assert.throws(
    () => watchScenarioFile(join(dir, 'nope', 'scenarios.yaml'), options),
    (error: Error & { code: string }) => error.code === 'SCENARIO_ERR_FILE_NOT_FOUND',
  );
  assert.throws(
    () => watchScenarioFile(join(dir, 'scenarios.yaml'), { ...options, debounceMs: -1 }),
    RangeError,
  );
});

test('watchScenarioFile – does not keep the process alive', async (t) => {
  const dir = tempDir(t);
  const file = join(dir, 'scenarios.yaml');
  writeFileSync(file, doc(200));
  const module = fileURLToPath(new URL('../../src/scenario/index.ts', import.meta.url));
  const script = `
    import { watchScenarioFile } from ${JSON.stringify(module)};
    watchScenarioFile(${JSON.stringify(file)}, { onChange() {}, onError() {} });
    console.log('watching');
  `;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk) => {
    output += chunk;
  });
  child.stderr.on('data', (chunk) => {
    output += chunk;
  });
  const code = await new Promise<number | string>((resolve) => {
    const timer = setTimeout(() => {
      child.kill();
      resolve('still running after 10s');
    }, 10_000);
    child.on('exit', (exitCode) => {
      clearTimeout(timer);
      resolve(exitCode ?? -1);
    });
  });
  assert.equal(code, 0, output);
  assert.equal(output.trim(), 'watching');
});
