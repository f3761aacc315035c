#!/usr/bin/env node
import { buildApp } from './app.ts';
import { loadConfig } from './config.ts';
import { ConfigError } from './errors.ts';

/** The echo-chaos entry point: configuration from the environment, then listen. */
async function main(): Promise<void> {
  let app: Awaited<ReturnType<typeof buildApp>>;
  try {
    const config = loadConfig(process.env);
    app = await buildApp(config);
    await app.listen({ port: config.port, host: config.host });
  } catch (err) {
    if (err instanceof ConfigError) {
      for (const line of err.problems) process.stderr.write(`echo-chaos: ${line}\n`);
    } else {
      process.stderr.write(`echo-chaos: cannot start: ${err instanceof Error ? err.message : String(err)}\n`);
    }
    process.exit(1);
  }

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) process.exit(1);
    stopping = true;
    app.log.info({ signal }, 'shutting down');
    app.echo.drain.abort();
    app.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

await main();
