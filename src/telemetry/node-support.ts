/**
 * The Node versions the service and the operator support (`engines` in package.json): a start on
 * another prints one warning line and goes on, since most of the code may well run, and a refusal
 * would stop a user who knows better.
 */

/** The oldest major version of Node supported, as package.json's `engines` (`>=24`) says. */
export const SUPPORTED_NODE_MAJOR = 24;

/**
 * The warning for `program` running on Node `version` (`process.versions.node`), or undefined when
 * that version is supported.
 */
export function nodeSupportWarning(program: string, version: string): string | undefined {
  const major = Number.parseInt(version, 10);
  if (major >= SUPPORTED_NODE_MAJOR) return undefined;
  return `${program}: warning: Node ${version} is not supported (Node >= ${SUPPORTED_NODE_MAJOR} is, as package.json "engines" says); running anyway, some features may fail`;
}
