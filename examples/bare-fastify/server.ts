/**
 * A bare fastify app using obs, with no OpenTelemetry SDK installed: obs depends on
 * `@opentelemetry/api` only, whose calls are no-ops until an SDK is registered.
 *
 *   npx node examples/bare-fastify/server.ts
 *   curl localhost:3000/users/42
 *   curl localhost:3000/users/jane.doe@example.com   # logged with the address masked
 *   curl localhost:3000/actuator/obs
 *   open http://localhost:3000/actuator/obsui
 *
 * Every `OBS_*` variable applies (`OBS_ENFORCEMENT_MODE=DRY_RUN`, `OBS_CONFIG_FILE=obs.yml`, ...);
 * `PORT` (default 3000, 0 for any free port) and `HOST` (default 127.0.0.1) choose the address.
 */
import {
  isObsError,
  loadObsConfig,
  obsFastifyOptions,
  obsPlugin,
  REQUEST_ID_LOG_LABEL,
  type ResolvedObsConfig,
} from '@echo-chaos/obs';
import Fastify, { LogController } from 'fastify';
import { Counter } from 'prom-client';

let resolved: ResolvedObsConfig;
try {
  resolved = loadObsConfig({ env: process.env }); // OBS_* variables, OBS_CONFIG_FILE, presets
} catch (error) {
  // A configuration mistake stops startup with every problem on its own line. Match on the code,
  // not the class: it holds across copies of the package.
  if (!(isObsError(error) && error.code === 'OBS_ERR_CONFIG')) throw error;
  process.stderr.write(`${error.message}\n`);
  process.exit(1);
}

// obs's logger options: JSON lines with trace and request ids, secrets and personal data masked
// (a URL such as /users/jane.doe@example.com is logged masked), at LOG_LEVEL or obs's level.
const app = Fastify({
  ...obsFastifyOptions({ config: resolved.config }),
  logController: new LogController({ requestIdLogLabel: REQUEST_ID_LOG_LABEL }),
});
await app.register(obsPlugin, { resolved, version: '1.0.0', serviceName: 'bare-fastify-example' });

// The app's own meter, on the obs registry so one scrape holds both; its labels pass the firewall.
const greetings = new Counter({
  name: 'example_greetings_total',
  help: 'Greetings served, by user',
  labelNames: ['user'],
  registers: [app.obs.registry],
});

app.get('/', async () => ({ hello: 'world', mode: app.obs.mode.get() }));

app.get<{ Params: { id: string } }>('/users/:id', async (request) => {
  greetings.inc(app.obs.firewall.admitLabels('example_greetings_total', { user: request.params.id }));
  app.obs.event('user.greeted', { user: request.params.id });
  return { hello: request.params.id };
});

app.get('/metrics', async (_request, reply) =>
  reply.type(app.obs.registry.contentType).send(await app.obs.registry.metrics()),
);

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => {
    app.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  });
}

await app.listen({ port: Number(process.env.PORT ?? 3000), host: process.env.HOST ?? '127.0.0.1' });
