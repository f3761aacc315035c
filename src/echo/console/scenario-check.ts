/**
 * The console's scenario editor, checked on the service without storing anything: a YAML set
 * parsed and validated as `POST /scenario` would, every problem placed on its line of the text.
 */
import { dump } from 'js-yaml';
import {
  checkPatternsAhead,
  isScenarioError,
  loadScenarioDocument,
  type ScenarioStore,
  type ScenarioSyntaxError,
  scenarioPatternTexts,
  type ValidateScenariosOptions,
  validateScenarios,
  withPatternVerdicts,
} from '../../scenario/index.ts';
import { EchoError } from '../errors.ts';
import { lineOfPointer, pointerLines } from './yaml-lines.ts';

/** One problem of a set, where it is: its pointer, its message and its 1-based line. */
export interface PlacedProblem {
  readonly field: string;
  readonly message: string;
  readonly line: number;
}

/** The set a console edits: its YAML, its ETag (for `If-Match`) and its size. */
export function scenarioSetView(store: ScenarioStore): { etag: string; count: number; yaml: string } {
  const list = store.list();
  return {
    etag: `"${store.contentHash()}"`,
    count: list.length,
    yaml: list.length === 0 ? '' : dump(list, { lineWidth: 120 }),
  };
}

/**
 * Checks `text` as a scenario set: the number of scenarios it holds, or a 400
 * `ECHO_ERR_INVALID_SCENARIOS` whose `details` place each problem on its line.
 */
export async function checkScenarioYaml(text: string, limits: ValidateScenariosOptions): Promise<number> {
  let document: unknown;
  try {
    document = loadScenarioDocument(text, 'the editor');
  } catch (error) {
    if (!isScenarioError(error)) throw error;
    const syntax = error as ScenarioSyntaxError;
    throw invalid([{ field: '', message: syntax.reason ?? syntax.message, line: syntax.line ?? 1 }]);
  }
  // Patterns are checked ahead, a few milliseconds at a time, as POST /scenario does (issue #30).
  const ahead = await checkPatternsAhead(scenarioPatternTexts(document));
  const result = withPatternVerdicts(ahead, () => validateScenarios(document, limits));
  if (result.ok) return result.scenarios.length;
  const lines = pointerLines(text);
  throw invalid(
    result.problems.map((p) => ({ field: p.path, message: p.message, line: lineOfPointer(lines, p.path) })),
  );
}

function invalid(problems: readonly PlacedProblem[]): EchoError {
  const summary = problems.map((p) => `line ${p.line}: ${p.message}`).join('; ');
  return new EchoError('ECHO_ERR_INVALID_SCENARIOS', [summary], { details: problems });
}
