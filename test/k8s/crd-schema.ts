import { readFileSync } from 'node:fs';
import { Ajv } from 'ajv';
import { loadAll } from 'js-yaml';
import { echoScenarioSchema } from '../../scripts/gen-crd.ts';

/** Validates a whole EchoScenario object against the CRD's openAPIV3Schema (ajv ignores x-kubernetes-*). */
export function compileEchoScenarioValidator(): (resource: unknown) => string[] {
  const ajv = new Ajv({ strict: false, validateFormats: false, allErrors: true });
  const validate = ajv.compile(echoScenarioSchema());
  return (resource) =>
    validate(resource) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message}`);
}

/** Every YAML document of a file, empty documents dropped. */
export function loadYamlDocuments(text: string): Array<Record<string, unknown>> {
  const docs: Array<Record<string, unknown>> = [];
  for (const doc of loadAll(text)) {
    if (doc !== null && doc !== undefined) docs.push(doc as Record<string, unknown>);
  }
  return docs;
}

export function readYamlDocuments(path: string): Array<Record<string, unknown>> {
  return loadYamlDocuments(readFileSync(path, 'utf8'));
}
