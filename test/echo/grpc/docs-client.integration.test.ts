import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { startEcho } from '../../helpers/echo-server.ts';
import { freePort } from './grpc-client.ts';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

test('grpc docs – the Node client of docs/service/grpc.md runs as written and prints what its comments say', async () => {
  const page = readFileSync(join(ROOT, 'docs', 'service', 'grpc.md'), 'utf8');
  const script = /```js\n(\/\/ grpc-client\.mjs\n[\s\S]*?)```/.exec(page)?.[1];
  assert.ok(script, 'docs/service/grpc.md has no ```js block starting with // grpc-client.mjs');
  const expected = [...script.matchAll(/^console\.log\(.*\); \/\/ (.*)$/gm)].map((m) => m[1]!.split(':')[0]!);
  assert.equal(expected.length, 3);
  // Where a user runs it: echo-chaos and the gRPC packages in node_modules (here, the repository's).
  const dir = mkdtempSync(join(tmpdir(), 'grpc-docs-'));
  mkdirSync(join(dir, 'node_modules'));
  symlinkSync(ROOT, join(dir, 'node_modules', 'echo-chaos'));
  symlinkSync(join(ROOT, 'node_modules', '@grpc'), join(dir, 'node_modules', '@grpc'));
  writeFileSync(join(dir, 'grpc-client.mjs'), script);
  const port = await freePort();
  const echo = await startEcho({ ECHO_GRPC_PORT: String(port) });
  try {
    const run = await promisify(execFile)(process.execPath, ['grpc-client.mjs'], {
      cwd: dir,
      env: { PATH: process.env['PATH'] ?? '', ECHO_GRPC_TARGET: `127.0.0.1:${port}` },
      encoding: 'utf8',
      timeout: 30_000,
    });
    assert.deepEqual(run.stdout.trim().split('\n'), expected);
  } finally {
    await echo.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
