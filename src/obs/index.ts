/**
 * `echo-chaos/obs`: observability for fastify services. This is its first piece, the cardinality
 * firewall the echo service's metrics pass through; the rest of the library follows.
 * @packageDocumentation
 */
export {
  CardinalityFirewall,
  type CardinalityFirewallOptions,
  DEFAULT_MAX_VALUES_PER_TAG,
  type EnforcementMode,
  OVERFLOW_VALUE,
} from './cardinality.ts';
