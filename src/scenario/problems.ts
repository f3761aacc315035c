/**
 * The problems of one validation, one per location (a JSON pointer), listed in input order and
 * bounded by {@link MAX_PROBLEMS}.
 */

/** One thing wrong with a scenario set. */
export interface ScenarioProblem {
  /** JSON pointer (RFC 6901) to the offending value, e.g. `/0/responses/1/status`; `''` is the input. */
  readonly path: string;
  /** What was expected and what was found, e.g. `status must be an integer 100-599, got 700`. */
  readonly message: string;
}

/** Most problems one validation lists; a last problem at path `''` says when it stopped there. */
export const MAX_PROBLEMS = 1000;

/** Problems keyed by location: the first problem found at a location is the one reported. */
export class ProblemList {
  readonly #byPath = new Map<string, string>();
  #truncated = false;

  get size(): number {
    return this.#byPath.size;
  }

  get full(): boolean {
    return this.#truncated;
  }

  has(path: string): boolean {
    return this.#byPath.has(path);
  }

  add(path: string, message: string): void {
    if (this.#truncated || this.#byPath.has(path)) return;
    this.#set(path, message);
  }

  /** Adds a second aspect to a location's problem (a header's name beside its value). */
  append(path: string, message: string): void {
    const existing = this.#byPath.get(path);
    if (existing === undefined) this.add(path, message);
    else this.#byPath.set(path, `${message}; ${existing}`);
  }

  #set(path: string, message: string): void {
    if (this.#byPath.size === MAX_PROBLEMS) {
      this.#truncated = true;
      return;
    }
    this.#byPath.set(path, message);
  }

  /** Problems grouped by scenario, then response, in input order; schema problems first in each. */
  sorted(): ScenarioProblem[] {
    const list = [...this.#byPath].map(([path, message], order) => ({ path, message, order }));
    list.sort((a, b) => compareLocations(a.path, b.path) || a.order - b.order);
    const problems: ScenarioProblem[] = list.map(({ path, message }) => ({ path, message }));
    if (this.#truncated) {
      problems.push({ path: '', message: `too many problems: stopped after the first ${MAX_PROBLEMS}` });
    }
    return problems;
  }
}

function compareLocations(a: string, b: string): number {
  const [as = -1, ar = -1] = indexesOf(a);
  const [bs = -1, br = -1] = indexesOf(b);
  return as - bs || ar - br;
}

/** The scenario and response index of a location, where it has them. */
function indexesOf(path: string): number[] {
  const segments = path.split('/');
  const indexes: number[] = [];
  if (segments[1] !== undefined && /^\d+$/.test(segments[1])) indexes.push(Number(segments[1]));
  if (segments[2] === 'responses' && segments[3] !== undefined && /^\d+$/.test(segments[3])) {
    indexes.push(Number(segments[3]));
  }
  return indexes;
}
