/**
 * `echo-chaos`: the echo service as a library, for a program that embeds it or a test that wants
 * one in process. `loadConfig(process.env)` gives the settings the command would use; `buildApp`
 * returns the fastify instance, ready to `listen` or `inject`.
 *
 * ```ts
 * import { buildApp, loadConfig } from 'echo-chaos';
 * const app = await buildApp(loadConfig({ PORT: '0' }));
 * await app.listen({ port: 0, host: '127.0.0.1' });
 * ```
 * @packageDocumentation
 */
export { type BuildOptions, buildApp, type EchoState, type UpgradeHandler } from './app.ts';
export { type EchoConfig, loadConfig } from './config.ts';
export { ECHO_ERRORS, EchoError, type EchoErrorCode, isEchoError } from './errors.ts';
export type { ReplayResolver } from './replay-guard.ts';
export { VERSION } from './version.ts';
