import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { status } from '@grpc/grpc-js';
import { exitOf, until } from '../../helpers/runtime.ts';
import {
  clientOf,
  type EchoResponse,
  EchoServiceClient,
  freePort,
  HealthClient,
  metadataOf,
  methodOf,
  unary,
} from './grpc-client.ts';

const MAIN = fileURLToPath(new URL('../../../src/echo/main.ts', import.meta.url));
const cwd = mkdtempSync(join(tmpdir(), 'grpc-drain-'));
after(() => rmSync(cwd, { recursive: true, force: true }));

test('grpc drain – on SIGTERM health turns NOT_SERVING, a call in flight is answered, then the port closes and the process exits 0', async () => {
  const [port, grpcPort] = [await freePort(), await freePort()];
  const child = spawn(process.execPath, [MAIN], {
    cwd,
    env: {
      PATH: process.env['PATH'] ?? '',
      PORT: String(port),
      HOST: '127.0.0.1',
      ECHO_GRPC_PORT: String(grpcPort),
      ECHO_DRAIN_DELAY: '1s',
      ECHO_DRAIN_TIMEOUT: '10s',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 60_000,
  });
  const exit = exitOf(child);
  const health = clientOf(HealthClient, grpcPort);
  const echo = clientOf(EchoServiceClient, grpcPort);
  const Check = methodOf(HealthClient, 'Check');
  const Echo = methodOf(EchoServiceClient, 'Echo');
  const check = async () => (await unary<{ status: string }>(health, Check, { service: '' })).value?.status;
  try {
    await until('gRPC health answers SERVING', async () => (await check()) === 'SERVING', 20_000, 100);
    assert.equal(
      (await unary<{ status: string }>(health, Check, { service: 'echochaos.v1.EchoService' })).value?.status,
      'SERVING',
    );
    // In flight across the whole drain delay: it is answered, not cut.
    const inFlight = unary<EchoResponse>(
      echo,
      Echo,
      { message: 'in flight' },
      metadataOf([['x-echo-delay', '1500ms']]),
    );
    await new Promise((resolve) => setTimeout(resolve, 100));
    child.kill('SIGTERM');
    await until('gRPC health answers NOT_SERVING', async () => (await check()) === 'NOT_SERVING', 900, 20);
    const answered = await inFlight;
    assert.equal(answered.error, undefined, String(answered.error));
    assert.equal(answered.value?.message, 'in flight');
    const ended = await exit;
    assert.equal(ended.code, 0, ended.stderr);
    assert.match(ended.stdout, /gRPC server listening on 127\.0\.0\.1:/);
    // Once stopped, nothing answers on the port.
    const after = await unary(echo, Echo, { message: 'late' }, undefined, { deadlineMs: 2000 });
    assert.ok(
      after.error?.code === status.UNAVAILABLE || after.error?.code === status.DEADLINE_EXCEEDED,
      String(after.error),
    );
  } finally {
    health.close();
    echo.close();
    if (child.exitCode === null) child.kill('SIGKILL');
  }
});
