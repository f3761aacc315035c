/**
 * The `echo-chaos-operator` command line: configured by its environment, so it takes no arguments
 * besides `--help` and `--version`.
 */

import { settingsRows } from '@echo-chaos/obs/internal';
import { OTEL_PASSED_THROUGH, OTEL_VARIABLES } from '../telemetry/otel-config.ts';
import { OPERATOR_SETTINGS } from './config.ts';

/** What the command line asks for: run, print the help, print the version, or a usage error. */
export type CommandLine =
  | { readonly kind: 'run' }
  | { readonly kind: 'help' }
  | { readonly kind: 'version' }
  | { readonly kind: 'usage-error'; readonly message: string };

/** Reads the arguments after the script name. */
export function parseCommandLine(args: readonly string[]): CommandLine {
  if (args.length === 0) return { kind: 'run' };
  if (args.length === 1 && (args[0] === '--help' || args[0] === '-h')) return { kind: 'help' };
  if (args.length === 1 && (args[0] === '--version' || args[0] === '-v')) return { kind: 'version' };
  return {
    kind: 'usage-error',
    message: `unexpected argument ${JSON.stringify(args[0])}: echo-chaos-operator is configured by environment variables (see --help)`,
  };
}

/**
 * Every variable the operator reads: the cluster's two (config.ts `clusterSource`), then its settings
 * (`OPERATOR_SETTINGS`, the one definition the README's table and the startup checks come from too).
 */
export const OPERATOR_VARIABLES: readonly {
  name: string;
  default: string;
  meaning: string;
  form?: string;
}[] = [
  {
    name: 'KUBECONFIG',
    default: '~/.kube/config',
    meaning: 'The kubeconfig file(s) of the cluster; read first when set',
  },
  {
    name: 'KUBERNETES_SERVICE_HOST',
    default: 'set by Kubernetes in a pod',
    meaning: "When set (and KUBECONFIG is not), the cluster is the pod's, with its service account",
  },
  ...settingsRows(OPERATOR_SETTINGS).map((row) => ({
    name: row.env,
    default: row.default.replaceAll('`', ''),
    meaning: row.description.replaceAll('`', ''),
    form: row.form.replaceAll('`', ''),
  })),
];

/** The `--help` text. */
export function helpText(version: string): string {
  const lines = [
    `echo-chaos-operator ${version}: pushes EchoScenario resources to echo-chaos pods`,
    '',
    'Usage: echo-chaos-operator [--help | --version]',
    '',
    'The cluster comes from KUBECONFIG (or ~/.kube/config), or from the service account inside a pod;',
    'without any of them startup stops.',
    'A bad setting stops startup with one line per problem, naming the variable, its value and what was expected.',
    '',
    'Variables:',
  ];
  const entry = (v: { name: string; default: string; meaning: string; form?: string | undefined }) =>
    lines.push(
      `  ${v.name}`,
      `      ${v.meaning.replaceAll('`', '')}`,
      `      default: ${v.default}${v.form === undefined ? '' : `; ${v.form.replaceAll('`', '')}`}`,
    );
  for (const v of OPERATOR_VARIABLES) entry(v);
  // The OpenTelemetry SDK starts for traces only: the operator serves no OpenTelemetry meters.
  lines.push('', 'OpenTelemetry (traces of its API requests and its own routes):');
  for (const v of OTEL_VARIABLES.filter((o) => o.name !== 'OTEL_METRICS_EXPORTER')) entry(v);
  lines.push(
    `The OpenTelemetry exporter also reads ${OTEL_PASSED_THROUGH}.`,
    '',
    'OBS_* variables configure the observability library (@echo-chaos/obs): https://github.com/echo-chaos/echo-chaos/blob/main/docs/obs/index.md',
  );
  return `${lines.join('\n')}\n`;
}
