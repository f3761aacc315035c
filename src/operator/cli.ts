/**
 * The `echo-chaos-operator` command line: configured by its environment, so it takes no arguments
 * besides `--help` and `--version`.
 */

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

/** Every variable the operator reads (config.ts), with its default; a test keeps the two in step. */
export const OPERATOR_VARIABLES: readonly { name: string; default: string; meaning: string }[] = [
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
  { name: 'WATCH_NAMESPACE', default: '(all)', meaning: 'The one namespace to watch; empty watches all' },
  { name: 'POD_NAME', default: 'host name and pid', meaning: "This replica's identity in the leader lease" },
  {
    name: 'LEASE_NAMESPACE',
    default: 'POD_NAMESPACE, else default',
    meaning: 'Namespace of the leader lease',
  },
  { name: 'POD_NAMESPACE', default: 'default', meaning: 'The namespace the operator runs in (downward API)' },
  { name: 'LEASE_NAME', default: 'echo-chaos-operator', meaning: 'Name of the leader lease' },
  { name: 'LEASE_DURATION_SECONDS', default: '15', meaning: 'How long a lease holds without renewal' },
  { name: 'LEASE_RETRY_INTERVAL_MS', default: '2000', meaning: 'How often the lease is renewed or tried' },
  { name: 'PORT', default: '8081', meaning: 'Port of /metrics, /healthz and /readyz' },
  { name: 'HOST', default: '0.0.0.0', meaning: 'Address to listen on' },
  { name: 'PUSH_TIMEOUT_MS', default: '5000', meaning: 'Longest wait for one POST /scenario to a pod' },
  {
    name: 'WORKERS',
    default: '4',
    meaning: 'Reconciles (so pushes to pods) at once, 1 to 64; a slow pod holds one of them',
  },
  { name: 'DRAIN_TIMEOUT_MS', default: '10000', meaning: 'Longest wait for in-flight pushes on SIGTERM' },
  { name: 'LOG_LEVEL', default: 'info', meaning: 'pino log level' },
  {
    name: 'ECHO_ADMIN_TOKEN',
    default: 'unset',
    meaning: "The echo pods' admin token, sent as Authorization: Bearer with every push",
  },
  {
    name: 'ECHO_ADMIN_TOKEN_FILE',
    default: 'unset',
    meaning: 'A file holding that token (a Secret), read once at startup',
  },
  {
    name: 'PROMETHEUS_URL',
    default: 'unset',
    meaning: 'The Prometheus (http or https URL) that spec.abortWhen queries',
  },
  { name: 'ABORT_POLL_INTERVAL_MS', default: '10000', meaning: 'How often abortWhen queries run (>= 1000)' },
  { name: 'ABORT_QUERY_TIMEOUT_MS', default: '5000', meaning: 'Timeout of one abortWhen query' },
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
    'A bad setting stops startup with one line naming it.',
    '',
    'Variables:',
  ];
  for (const v of OPERATOR_VARIABLES) lines.push(`  ${v.name}`, `      ${v.meaning}; default: ${v.default}`);
  lines.push('', 'OBS_* variables configure the observability library (@echo-chaos/obs); see its README.');
  return `${lines.join('\n')}\n`;
}
