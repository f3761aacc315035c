/**
 * The `echo-chaos` command line: the service is configured by its environment, so the command
 * takes no arguments besides `--help` and `--version`.
 */
import { OTEL_PASSED_THROUGH, OTEL_VARIABLES } from '../telemetry/otel-config.ts';
import { FAULT_DEFAULT_VARIABLES, HEADER_VARIABLE, VARIABLES } from './config.ts';

/** The reference pages, on GitHub (the installed package holds no docs). */
const DOCS = 'https://github.com/echo-chaos/echo-chaos/blob/main/docs';

/** What the command line asks for: serve, print the help, print the version, or a usage error. */
export type CommandLine =
  | { readonly kind: 'serve' }
  | { readonly kind: 'help' }
  | { readonly kind: 'version' }
  | { readonly kind: 'usage-error'; readonly message: string };

/** Reads the arguments after the script name. */
export function parseCommandLine(args: readonly string[]): CommandLine {
  if (args.length === 0) return { kind: 'serve' };
  if (args.length === 1 && (args[0] === '--help' || args[0] === '-h')) return { kind: 'help' };
  if (args.length === 1 && (args[0] === '--version' || args[0] === '-v')) return { kind: 'version' };
  return {
    kind: 'usage-error',
    message: `unexpected argument ${JSON.stringify(args[0])}: echo-chaos is configured by environment variables (see --help)`,
  };
}

/** The `--help` text: usage, then every variable with its default and accepted form. */
export function helpText(version: string): string {
  const plain = (s: string) => s.replaceAll('`', '');
  const lines = [
    `echo-chaos ${version}: an HTTP echo and fault-injection service`,
    '',
    'Usage: echo-chaos [--help | --version]',
    '',
    'Serves on PORT (default 8080). Every setting is an environment variable; a bad value stops',
    'startup with one line naming the variable, the value and the accepted form.',
    '',
    'Variables:',
  ];
  // The control headers' defaults (ECHO_STATUS, ...) follow the variables, as in the README.
  const faultDefaults = FAULT_DEFAULT_VARIABLES.map((v) => ({ ...v, default: '' }));
  for (const v of [...VARIABLES, ...faultDefaults, HEADER_VARIABLE, ...OTEL_VARIABLES]) {
    lines.push(
      `  ${v.name}`,
      `      ${plain(v.meaning)}`,
      `      default: ${v.default === '' ? '(empty)' : v.default}; ${plain(v.form)}`,
    );
  }
  lines.push(
    '',
    `The OpenTelemetry exporter also reads ${OTEL_PASSED_THROUGH}.`,
    `OBS_* variables configure the observability library (@echo-chaos/obs): ${DOCS}/obs/index.md`,
    `Per-request X-Echo-* headers (delays, errors, chaos, sizes): ${DOCS}/service/control-headers.md`,
  );
  return `${lines.join('\n')}\n`;
}
