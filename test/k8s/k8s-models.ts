/**
 * Validation of rendered Kubernetes objects against the API schemas that `kubernetes-models`
 * carries, plus the check it lacks: its validators accept unknown fields (a typo such as
 * `readinesProbe` would pass), so every object is validated through a Proxy that records which
 * fields the validator reads. A field the schema names is always read; a field nobody read is
 * unknown. An object whose keys the validator enumerates is a map (labels, data) and may hold any.
 */

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { PodMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PodMonitor';
import { PrometheusRule } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PrometheusRule';
import { ServiceMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor';
import { CustomResourceDefinition } from 'kubernetes-models/apiextensions.k8s.io/v1/CustomResourceDefinition';
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import { ClusterRole } from 'kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRole';
import { ClusterRoleBinding } from 'kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRoleBinding';
import { Role } from 'kubernetes-models/rbac.authorization.k8s.io/v1/Role';
import { RoleBinding } from 'kubernetes-models/rbac.authorization.k8s.io/v1/RoleBinding';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { Pod } from 'kubernetes-models/v1/Pod';
import { Service } from 'kubernetes-models/v1/Service';
import { ServiceAccount } from 'kubernetes-models/v1/ServiceAccount';

const require = createRequire(import.meta.url);

/** The field names a kubernetes-models interface declares, read from its `.d.ts`. */
function declaredFields(model: string): ReadonlySet<string> {
  const text = readFileSync(require.resolve(`kubernetes-models/${model}`).replace(/\.js$/, '.d.ts'), 'utf8');
  const body = text.slice(
    text.indexOf('export interface'),
    text.indexOf('\n}', text.indexOf('export interface')),
  );
  return new Set([...body.matchAll(/^ {4}"?([$\w-]+)"?\??:/gm)].map((m) => m[1]!));
}

/**
 * Objects whose fields the compiled validators leave unread (fields without constraints, and the
 * recursive JSONSchemaProps of a CRD's openAPIV3Schema, which they do not descend into): their
 * keys are checked against the interface the model declares.
 */
const DECLARED: ReadonlyArray<readonly [RegExp, ReadonlySet<string>]> = [
  [
    /\.additionalPrinterColumns\[\d+\]$/,
    declaredFields('apiextensions.k8s.io/v1/CustomResourceColumnDefinition'),
  ],
];
const JSON_SCHEMA_PROPS = declaredFields('apiextensions.k8s.io/v1/JSONSchemaProps');
const SCHEMA_MAPS = new Set(['properties', 'patternProperties', 'definitions', 'dependencies']);
const SCHEMA_LISTS = new Set(['allOf', 'anyOf', 'oneOf']);

/** Unknown keywords in an openAPIV3Schema tree, at every depth. */
function schemaProblems(node: unknown, path: string): string[] {
  if (typeof node !== 'object' || node === null || Array.isArray(node)) return [];
  const problems: string[] = [];
  for (const [key, value] of Object.entries(node)) {
    if (!JSON_SCHEMA_PROPS.has(key)) problems.push(`unknown field ${path}.${key}`);
    else if (SCHEMA_MAPS.has(key) && typeof value === 'object' && value !== null) {
      for (const [name, sub] of Object.entries(value))
        problems.push(...schemaProblems(sub, `${path}.${key}.${name}`));
    } else if (SCHEMA_LISTS.has(key) && Array.isArray(value)) {
      value.forEach((sub, i) => {
        problems.push(...schemaProblems(sub, `${path}.${key}[${i}]`));
      });
    } else if (key === 'items' || key === 'additionalProperties' || key === 'not') {
      problems.push(...schemaProblems(value, `${path}.${key}`));
    }
  }
  return problems;
}

interface Validatable {
  prototype: { validate(): void };
}

const MODELS: Record<string, Validatable> = {
  'v1/ConfigMap': ConfigMap,
  'v1/Pod': Pod,
  'v1/Service': Service,
  'v1/ServiceAccount': ServiceAccount,
  'apps/v1/Deployment': Deployment,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
  'networking.k8s.io/v1/NetworkPolicy': NetworkPolicy,
  'rbac.authorization.k8s.io/v1/Role': Role,
  'rbac.authorization.k8s.io/v1/RoleBinding': RoleBinding,
  'rbac.authorization.k8s.io/v1/ClusterRole': ClusterRole,
  'rbac.authorization.k8s.io/v1/ClusterRoleBinding': ClusterRoleBinding,
  'apiextensions.k8s.io/v1/CustomResourceDefinition': CustomResourceDefinition,
  'monitoring.coreos.com/v1/ServiceMonitor': ServiceMonitor,
  'monitoring.coreos.com/v1/PrometheusRule': PrometheusRule,
  'monitoring.coreos.com/v1/PodMonitor': PodMonitor,
};

interface Seen {
  readonly path: string;
  readonly accessed: Set<string>;
  enumerated: boolean;
}

/** Every problem of one object: schema violations and unknown field names; [] when valid. */
export function kubernetesProblems(object: Record<string, unknown>): string[] {
  const id = `${object['apiVersion']}/${object['kind']}`;
  const model = MODELS[id];
  if (model === undefined) return [`${id}: no model to validate it with`];
  const seen: Seen[] = [];
  const proxies = new WeakMap<object, object>();
  const wrap = (value: unknown, path: string): unknown => {
    if (typeof value !== 'object' || value === null) return value;
    const known = proxies.get(value);
    if (known !== undefined) return known;
    const info: Seen = { path, accessed: new Set(), enumerated: false };
    if (!Array.isArray(value)) seen.push(info);
    const proxy = new Proxy(value, {
      get(target, key) {
        const child = Reflect.get(target, key);
        if (typeof key !== 'string') return child;
        info.accessed.add(key);
        return wrap(child, Array.isArray(target) ? `${path}[${key}]` : `${path}.${key}`);
      },
      has(target, key) {
        if (typeof key === 'string') info.accessed.add(key);
        return Reflect.has(target, key);
      },
      ownKeys(target) {
        info.enumerated = true;
        return Reflect.ownKeys(target);
      },
    });
    proxies.set(value, proxy);
    return proxy;
  };
  const name = `${id} ${(object['metadata'] as { name?: string } | undefined)?.name ?? '?'}`;
  try {
    model.prototype.validate.call(wrap(object, ''));
  } catch (err) {
    return [`${name}: ${err instanceof Error ? err.message : String(err)}`];
  }
  const problems: string[] = [];
  const raw = new Map<string, Record<string, unknown>>();
  // Re-walk the plain object to pair each path with its keys.
  const walk = (value: unknown, path: string): void => {
    if (typeof value !== 'object' || value === null) return;
    if (Array.isArray(value)) {
      value.forEach((item, i) => {
        walk(item, `${path}[${i}]`);
      });
      return;
    }
    raw.set(path, value as Record<string, unknown>);
    for (const [key, child] of Object.entries(value)) walk(child, `${path}.${key}`);
  };
  walk(object, '');
  for (const info of seen) {
    if (info.enumerated || info.path.includes('.openAPIV3Schema')) continue;
    const declared = DECLARED.find(([pattern]) => pattern.test(info.path))?.[1];
    for (const key of Object.keys(raw.get(info.path) ?? {})) {
      if (!info.accessed.has(key) && !declared?.has(key))
        problems.push(`${name}: unknown field ${info.path}.${key}`);
    }
  }
  for (const [path, value] of raw) {
    if (path.endsWith('.schema.openAPIV3Schema')) {
      problems.push(...schemaProblems(value, path).map((p) => `${name}: ${p}`));
    }
  }
  return problems;
}
