/**
 * What `fastify-plugin` does for obs's plugins, without the package (issue #35 item 1: the service's
 * install is at most 60 packages): the three properties fastify reads off a plugin function. With
 * `Symbol.for('skip-override')` the plugin shares its parent's scope, so its hooks see every route
 * (fastify's docs name this property as the way besides `fastify-plugin`); `Symbol.for('plugin-meta')`
 * carries the name, the fastify range and the `dependencies` that fastify checks at `register`
 * (`lib/plugin-utils.js`); `Symbol.for('fastify.display-name')` names it in fastify's messages.
 * `test/obs/feature-plugins.test.ts` holds fastify to each.
 */
import type { FastifyPluginAsync, FastifyPluginOptions } from 'fastify';

/** The metadata fastify reads: the plugin's name, the fastify versions it runs on, what it needs. */
export interface PluginMeta {
  readonly name: string;
  /** A semver range of fastify (`5.x`); fastify refuses to register the plugin on another version. */
  readonly fastify: string;
  /** Names of plugins that must be registered before it. */
  readonly dependencies?: readonly string[];
}

/** `fn`, registered in its parent's scope, with `meta` for fastify to check. */
export function sharedPlugin<Options extends FastifyPluginOptions>(
  fn: FastifyPluginAsync<Options>,
  meta: PluginMeta,
): FastifyPluginAsync<Options> {
  Object.assign(fn, {
    [Symbol.for('skip-override')]: true,
    [Symbol.for('fastify.display-name')]: meta.name,
    [Symbol.for('plugin-meta')]: { ...meta, dependencies: [...(meta.dependencies ?? [])] },
  });
  return fn;
}
