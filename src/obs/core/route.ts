/**
 * The route pattern of a request, read once per request. fastify's `request.routeOptions` builds a
 * new object of a dozen fields on every read, and several obs features (the trace guard, retry,
 * fan-out, db, the exception handler) want the pattern of every request.
 */
import type { FastifyRequest } from 'fastify';

/** The endpoint label of a request that matched no route (a 404, a request refused before routing). */
export const UNMATCHED_ROUTE = 'unmatched';

const ROUTE = Symbol('echo-chaos.obs.route');

type WithRoute = FastifyRequest & { [ROUTE]?: string };

/** The route pattern (`/orders/:id`), or {@link UNMATCHED_ROUTE} when none matched. */
export function routeOf(request: FastifyRequest): string {
  const known = (request as WithRoute)[ROUTE];
  if (known !== undefined) return known;
  const pattern = request.routeOptions?.url;
  const route = pattern === undefined || pattern === '' ? UNMATCHED_ROUTE : pattern;
  (request as WithRoute)[ROUTE] = route;
  return route;
}
