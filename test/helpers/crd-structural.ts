/**
 * What a Kubernetes API server does with a CRD's structural schema beyond OpenAPI value validation
 * (which ajv does for the API double): it prunes fields the schema does not name, and it evaluates
 * the `x-kubernetes-validations` CEL rules. Both for the API double (kube-api.ts) and for tests that
 * check the generated CRD's rules against valid and invalid objects.
 *
 * - Pruning: at every object node with `properties`, a field not among them is dropped, unless the node
 *   has `x-kubernetes-preserve-unknown-fields: true` (then its unknown fields are kept as they are,
 *   and known ones are still pruned inside); `additionalProperties` makes a map whose every value is
 *   pruned by that schema; arrays by `items`; `x-kubernetes-int-or-string` and scalars are leaves. At
 *   the root, `apiVersion`, `kind` and `metadata` are the server's own and stay.
 * - CEL: each rule is evaluated where its node has a value, with `self` bound to that value as the
 *   API server types it (an `integer` field is a CEL `int`, a `number` a `double`, an object a map),
 *   by `@bufbuild/cel` (conformance-tested against the CEL spec; `matches` is RE2, as in Kubernetes).
 *   A rule that is false gives its `message`; one that fails to evaluate gives the error, as the
 *   server does.
 */
import { celEnv, isCelError, parse, plan } from '@bufbuild/cel';

/** The parts of a structural schema node this module reads. */
export interface StructuralSchema {
  type?: string;
  properties?: Record<string, StructuralSchema>;
  additionalProperties?: StructuralSchema | boolean;
  items?: StructuralSchema;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
  'x-kubernetes-int-or-string'?: boolean;
  'x-kubernetes-validations'?: ReadonlyArray<{ rule: string; message?: string }>;
}

/** The server's own fields of every object, never pruned by the CRD's schema. */
const ROOT_FIELDS = new Set(['apiVersion', 'kind', 'metadata']);

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const join = (path: string, key: string) => (path === '' ? key : `${path}.${key}`);

/**
 * `value` with every field the schema does not name removed (a copy), and the paths removed, as
 * the server's `unknown field "spec.abortWhen.foo"` warnings name them.
 * @param root whether `value` is a whole object (its apiVersion, kind and metadata stay).
 */
export function pruneUnknownFields(
  value: unknown,
  schema: StructuralSchema,
  { root = false, path = '' }: { root?: boolean; path?: string } = {},
): { value: unknown; pruned: string[] } {
  const pruned: string[] = [];
  const walk = (v: unknown, s: StructuralSchema | undefined, at: string, isRoot: boolean): unknown => {
    if (s === undefined) return v;
    if (Array.isArray(v))
      return s.items === undefined ? v : v.map((item, i) => walk(item, s.items, `${at}[${i}]`, false));
    if (!isObject(v) || s['x-kubernetes-int-or-string'] === true) return v;
    const out: Record<string, unknown> = {};
    const map = isObject(s.additionalProperties) ? s.additionalProperties : undefined;
    const preserve = s['x-kubernetes-preserve-unknown-fields'] === true || s.additionalProperties === true;
    for (const [key, child] of Object.entries(v)) {
      if (isRoot && ROOT_FIELDS.has(key)) out[key] = child;
      else if (s.properties?.[key] !== undefined)
        out[key] = walk(child, s.properties[key], join(at, key), false);
      else if (map !== undefined) out[key] = walk(child, map, join(at, key), false);
      else if (preserve) out[key] = child;
      else pruned.push(join(at, key));
    }
    return out;
  };
  return { value: walk(value, schema, path, root), pruned };
}

/** A JSON value as the API server hands it to CEL under `schema`. */
export function toCel(value: unknown, schema: StructuralSchema | undefined): unknown {
  if (schema === undefined) return value;
  if (typeof value === 'number') {
    const integer = schema.type === 'integer' || schema['x-kubernetes-int-or-string'] === true;
    return integer && Number.isSafeInteger(value) ? BigInt(value) : value;
  }
  if (Array.isArray(value)) return value.map((item) => toCel(item, schema.items));
  if (!isObject(value)) return value;
  const map = isObject(schema.additionalProperties) ? schema.additionalProperties : undefined;
  return Object.fromEntries(
    Object.entries(value).map(([key, child]) => [key, toCel(child, schema.properties?.[key] ?? map)]),
  );
}

/** One rule that does not hold, where, and what the server would say. */
export interface CelViolation {
  readonly field: string;
  readonly rule: string;
  readonly message: string;
}

/** Each rule parsed and planned once (the double evaluates a dozen on every EchoScenario write). */
const plans = new Map<string, (bindings: { self: unknown }) => unknown>();

/** Evaluates one rule with `self` bound to `value` (already {@link toCel}): true, false or the error. */
export function evaluateRule(rule: string, self: unknown): boolean | Error {
  let result: unknown;
  try {
    let evaluate = plans.get(rule);
    if (evaluate === undefined) {
      evaluate = plan(celEnv(), parse(rule)) as (bindings: { self: unknown }) => unknown;
      plans.set(rule, evaluate);
    }
    result = evaluate({ self });
  } catch (error) {
    return error as Error;
  }
  if (isCelError(result)) return new Error(result.message);
  if (typeof result !== 'boolean') return new Error(`rule ${rule} gave ${String(result)}, not a bool`);
  return result;
}

/**
 * The `x-kubernetes-validations` rules of `schema` and of its descendants that `value` breaks; only
 * nodes that have a value are checked, as on the server.
 */
export function celViolations(value: unknown, schema: StructuralSchema, path = ''): CelViolation[] {
  const violations: CelViolation[] = [];
  const walk = (v: unknown, s: StructuralSchema | undefined, at: string): void => {
    if (s === undefined || v === undefined || v === null) return;
    for (const { rule, message } of s['x-kubernetes-validations'] ?? []) {
      const result = evaluateRule(rule, toCel(v, s));
      if (result === true) continue;
      const said = result === false ? (message ?? `failed rule: ${rule}`) : `${rule}: ${result.message}`;
      violations.push({ field: at === '' ? '<root>' : at, rule, message: said });
    }
    if (Array.isArray(v)) {
      v.forEach((item, i) => {
        walk(item, s.items, `${at}[${i}]`);
      });
      return;
    }
    if (!isObject(v)) return;
    const map = isObject(s.additionalProperties) ? s.additionalProperties : undefined;
    for (const [key, child] of Object.entries(v)) walk(child, s.properties?.[key] ?? map, join(at, key));
  };
  walk(value, schema, path);
  return violations;
}
