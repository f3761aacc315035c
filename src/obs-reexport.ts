/**
 * `echo-chaos/obs`: the observability library, for code that imported it from the service's
 * package before it was published on its own. New code imports `@echo-chaos/obs`.
 * @deprecated Import from `@echo-chaos/obs`.
 * @packageDocumentation
 */
export * from '@echo-chaos/obs';
