import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { dump } from 'js-yaml';
import { loadObsConfig } from '../../src/obs/index.ts';
import { loadOperatorConfig } from '../../src/operator/config.ts';
import { validateScenarios } from '../../src/scenario/index.ts';
import { helm, helmSkip } from '../helpers/helm.ts';
import { needTools } from '../helpers/tools.ts';
import { loadYamlDocuments } from './crd-schema.ts';
import { kubernetesProblems } from './k8s-models.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const CHART = join(ROOT, 'charts', 'echo-chaos');
const ALL_ON = join(CHART, 'ci', 'all-on-values.yaml');

type Doc = Record<string, unknown> & { kind: string; metadata: { name: string } };
// biome-ignore lint/suspicious/noExplicitAny: rendered YAML is walked field by field below.
type Any = any;

const skip = helmSkip();

function render(...args: string[]): Doc[] {
  return loadYamlDocuments(helm(['template', 'echo-chaos', CHART, '--include-crds', ...args])) as Doc[];
}

function byKind(docs: Doc[], kind: string): Doc[] {
  return docs.filter((d) => d.kind === kind);
}

/** A rule file holding `groups` in a temporary directory removed after the tests. */
function ruleFile(prefix: string, groups: unknown[]): { dir: string; file: string } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'rules.yaml');
  writeFileSync(file, dump({ groups }));
  return { dir, file };
}

describe('chart echo-chaos', { skip }, () => {
  test('chart – helm lint --strict passes with default values and with every option on', () => {
    helm(['lint', '--strict', CHART]);
    helm(['lint', '--strict', CHART, '-f', ALL_ON]);
  });

  test('chart – values.schema.json rejects a misspelt or ill-typed value', () => {
    for (const bad of [
      ['--set', 'replicaCont=2'],
      ['--set', 'service.port=http'],
      ['--set', 'operator.enabld=true'],
      ['--set', 'grafanaDashboard.enabeld=true'],
      ['--set', 'grafanaDashboard.label=not a label'],
      ['--set', 'operator.resyncPeriod=soon'],
    ]) {
      assert.throws(
        () => helm(['template', 'x', CHART, ...bad]),
        /values don't meet the specifications/,
        bad.join(' '),
      );
    }
  });

  for (const [name, args] of [
    ['default values', []],
    ['every option on', ['-f', ALL_ON]],
  ] as const) {
    test(`chart – ${name}: every object validates against the API schema, field names included`, () => {
      const docs = render(...args);
      assert.ok(docs.length > 0);
      const problems = docs.flatMap((d) => kubernetesProblems(d));
      assert.deepEqual(problems, []);
    });
  }

  test('chart – the field check catches a misspelt field that kubernetes-models alone accepts', () => {
    const [deployment] = byKind(render(), 'Deployment') as Any[];
    deployment.spec.template.spec.containers[0].readinesProbe = {};
    assert.deepEqual(kubernetesProblems(deployment), [
      'apps/v1/Deployment echo-chaos: unknown field .spec.template.spec.containers[0].readinesProbe',
    ]);
  });

  test('chart – default values render the echo objects only', () => {
    const kinds = render()
      .map((d) => d.kind)
      .sort();
    assert.deepEqual(kinds, ['ConfigMap', 'CustomResourceDefinition', 'Deployment', 'Pod', 'Service']);
  });

  test('chart – every option on renders the PDB, monitoring and the operator with its RBAC', () => {
    const kinds = new Set(render('-f', ALL_ON).map((d) => d.kind));
    for (const kind of [
      'PodDisruptionBudget',
      'ServiceMonitor',
      'PrometheusRule',
      'PodMonitor',
      'ServiceAccount',
      'ClusterRole',
      'ClusterRoleBinding',
      'Role',
      'RoleBinding',
    ]) {
      assert.ok(kinds.has(kind), kind);
    }
  });

  test('chart – the echo pod: probes, drain timing, non-root read-only, config files mounted', () => {
    const [deployment] = byKind(render('-f', ALL_ON), 'Deployment').filter(
      (d) => d.metadata.name === 'echo-chaos',
    );
    const pod: Any = (deployment as Any).spec.template.spec;
    const [echo] = pod.containers;
    assert.equal(echo.livenessProbe.httpGet.path, '/health');
    assert.equal(echo.readinessProbe.httpGet.path, '/ready');
    const env = Object.fromEntries(echo.env.map((e: Any) => [e.name, e.value]));
    const drainSeconds = Number.parseInt(env.ECHO_DRAIN_TIMEOUT, 10);
    const delaySeconds = Number.parseInt(env.ECHO_DRAIN_DELAY, 10);
    assert.equal(env.ECHO_DRAIN_DELAY, '3s');
    assert.equal(echo.lifecycle.preStop.sleep.seconds, 2);
    assert.ok(
      pod.terminationGracePeriodSeconds > echo.lifecycle.preStop.sleep.seconds + delaySeconds + drainSeconds,
    );
    assert.equal(env.ECHO_SCENARIO_FILE, '/etc/echo-chaos/scenarios.json');
    assert.equal(env.OBS_CONFIG_FILE, '/etc/echo-chaos/obs.yaml');
    assert.equal(env.ECHO_CHAOS, '5');
    assert.equal(pod.securityContext.runAsNonRoot, true);
    assert.equal(pod.securityContext.seccompProfile.type, 'RuntimeDefault');
    assert.ok(Number.isInteger(pod.securityContext.runAsUser) && pod.securityContext.runAsUser > 0);
    assert.equal(echo.securityContext.readOnlyRootFilesystem, true);
    assert.equal(echo.securityContext.allowPrivilegeEscalation, false);
    assert.deepEqual(echo.securityContext.capabilities.drop, ['ALL']);
    assert.ok(echo.volumeMounts.some((m: Any) => m.mountPath === '/etc/echo-chaos'));
  });

  test('chart – grpc.port: unset, no gRPC at all; set, ECHO_GRPC_PORT, a container port and a Service port named grpc (appProtocol grpc); HTTP probes still', () => {
    const echoAndService = (...args: string[]) => {
      const docs = render(...args);
      const [deployment] = byKind(docs, 'Deployment') as Any[];
      const [service] = byKind(docs, 'Service') as Any[];
      return { echo: deployment.spec.template.spec.containers[0], service, docs };
    };
    const plain = echoAndService();
    assert.deepEqual(
      plain.echo.ports.map((p: Any) => p.name),
      ['http'],
    );
    assert.ok(!plain.echo.env.some((e: Any) => e.name === 'ECHO_GRPC_PORT'));
    assert.deepEqual(
      plain.service.spec.ports.map((p: Any) => p.name),
      ['http'],
    );
    assert.equal(plain.echo.readinessProbe.httpGet.path, '/ready');
    assert.equal(plain.echo.readinessProbe.grpc, undefined);
    // The CRD's scenario fields name gRPC (grpcStatus...): everything else has no trace of it by default.
    const rendered = plain.docs.filter((d: Any) => d?.kind !== 'CustomResourceDefinition');
    assert.ok(!JSON.stringify(rendered).includes('grpc'), 'no trace of gRPC by default');

    const grpc = echoAndService('--set', 'grpc.port=9090');
    assert.deepEqual(
      grpc.echo.env.find((e: Any) => e.name === 'ECHO_GRPC_PORT'),
      { name: 'ECHO_GRPC_PORT', value: '9090' },
    );
    assert.deepEqual(grpc.echo.ports, [
      { name: 'http', containerPort: 8080, protocol: 'TCP' },
      { name: 'grpc', containerPort: 9090, protocol: 'TCP' },
    ]);
    assert.deepEqual(
      grpc.service.spec.ports.find((p: Any) => p.name === 'grpc'),
      { name: 'grpc', port: 9090, targetPort: 'grpc', protocol: 'TCP', appProtocol: 'grpc' },
    );
    assert.equal(grpc.echo.livenessProbe.httpGet.path, '/health');
    assert.equal(grpc.echo.readinessProbe.httpGet.path, '/ready');
    assert.deepEqual(
      grpc.docs.flatMap((d) => kubernetesProblems(d)),
      [],
    );
  });

  test("chart – probes.grpc: Kubernetes' grpc probes on grpc.port, no HTTP probe left", () => {
    const docs = render('--set', 'grpc.port=9090,probes.grpc=true');
    const [deployment] = byKind(docs, 'Deployment') as Any[];
    const [echo] = deployment.spec.template.spec.containers;
    for (const probe of [echo.livenessProbe, echo.readinessProbe]) {
      assert.deepEqual(probe.grpc, { port: 9090 });
      assert.equal(probe.httpGet, undefined);
    }
    // The timing of each probe is the HTTP one's.
    assert.equal(echo.livenessProbe.periodSeconds, 10);
    assert.equal(echo.readinessProbe.failureThreshold, 1);
    assert.deepEqual(
      docs.flatMap((d) => kubernetesProblems(d)),
      [],
    );
  });

  test('chart – a bad gRPC value is refused: by the schema, or by the template naming what to fix', () => {
    for (const [set, message] of [
      ['grpc.port=8080', /at '\/grpc\/port': 'not' failed/],
      ['grpc.port=0', /at '\/grpc\/port': minimum/],
      ['grpc.port=65536', /at '\/grpc\/port': maximum/],
      ['grpc.port=grpc', /at '\/grpc\/port': got string/],
      ['grpc.prot=9090', /additional properties 'prot' not allowed/],
      ['probes.grpc=yes', /at '\/probes\/grpc': got string, want boolean/],
    ] as const) {
      assert.throws(
        () => helm(['template', 'x', CHART, '--set', set]),
        /values don't meet the specifications/,
        set,
      );
      assert.throws(() => helm(['template', 'x', CHART, '--set', set]), message, set);
    }
    for (const [set, message] of [
      ['probes.grpc=true', /probes\.grpc is true but grpc\.port is not set/],
      ['grpc.port=9090,service.port=9090', /grpc\.port \(9090\) equals service\.port/],
      [
        'grpc.port=9090,env.ECHO_GRPC_PORT=9091',
        /env\.ECHO_GRPC_PORT and grpc\.port both set ECHO_GRPC_PORT/,
      ],
    ] as const) {
      assert.throws(() => helm(['template', 'x', CHART, '--set', set]), message, set);
    }
  });

  test('chart – default drain timing: no preStop hook, ECHO_DRAIN_DELAY 5s, grace = delay + drain + 5', () => {
    const [deployment] = byKind(render(), 'Deployment').filter((d) => d.metadata.name === 'echo-chaos');
    const pod: Any = (deployment as Any).spec.template.spec;
    const [echo] = pod.containers;
    const env = Object.fromEntries(echo.env.map((e: Any) => [e.name, e.value]));
    assert.equal(env.ECHO_DRAIN_DELAY, '5s');
    assert.equal(env.ECHO_DRAIN_TIMEOUT, '30s');
    assert.equal(echo.lifecycle, undefined, 'the drain delay replaces the preStop sleep');
    assert.equal(pod.terminationGracePeriodSeconds, 5 + 30 + 5);
  });

  test('chart – Chart.yaml states the minimum Kubernetes version, and helm refuses an older cluster', () => {
    assert.match(readFileSync(join(CHART, 'Chart.yaml'), 'utf8'), /^kubeVersion: ">=1\.25\.0-0"$/m);
    assert.doesNotThrow(() => render('--kube-version', '1.25.0'));
    assert.throws(() => render('--kube-version', '1.24.9'), /incompatible with Kubernetes v1\.24\.9/);
  });

  for (const [version, form] of [
    ['1.29.5', 'exec'],
    ['1.30.0', 'sleep'],
    ['1.33.1-eks-1234', 'sleep'],
  ] as const) {
    test(`chart – preStop on Kubernetes ${version}: the ${form} form, valid, inside the grace period`, () => {
      const docs = render('-f', ALL_ON, '--kube-version', version);
      assert.deepEqual(
        docs.flatMap((d) => kubernetesProblems(d)),
        [],
      );
      const [deployment] = byKind(docs, 'Deployment').filter((d) => d.metadata.name === 'echo-chaos');
      const pod: Any = (deployment as Any).spec.template.spec;
      const preStop = pod.containers[0].lifecycle.preStop;
      assert.deepEqual(Object.keys(preStop), [form]);
      const seconds = form === 'sleep' ? preStop.sleep.seconds : Number(preStop.exec.command[1]);
      if (form === 'exec') assert.deepEqual(preStop.exec.command, ['sleep', '2']);
      assert.equal(seconds, 2);
      assert.equal(pod.terminationGracePeriodSeconds, 2 + 3 + 20 + 5);
    });
  }

  test('chart – the exec sleep fallback has a sleep to run: the image is Debian-based (coreutils)', () => {
    const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
    const stages = [...dockerfile.matchAll(/^FROM\s+(\S+)(?:\s+AS\s+(\S+))?/gim)];
    const runtime = stages.at(-1)!;
    // node:<version>-bookworm-slim keeps Debian's essential packages, coreutils (/bin/sleep) among them.
    assert.match(runtime[1]!, /^node:[\d.]+-(bookworm|trixie)(-slim)?$/, `runtime image ${runtime[1]}`);
  });

  test('chart – grafanaDashboard: a ConfigMap holding dashboards/echo-chaos.json under the sidecar label', () => {
    const file = readFileSync(join(CHART, 'dashboards', 'echo-chaos.json'), 'utf8');
    const find = (docs: Doc[]) =>
      (byKind(docs, 'ConfigMap') as Any[]).find((c) => c.metadata.name === 'echo-chaos-dashboard');
    assert.equal(find(render()), undefined, 'off by default');
    const onDefaults = find(render('--set', 'grafanaDashboard.enabled=true'));
    assert.equal(onDefaults.metadata.labels.grafana_dashboard, '1');
    assert.equal(onDefaults.metadata.namespace, 'default', 'the release namespace');
    assert.deepEqual(JSON.parse(onDefaults.data['echo-chaos.json']), JSON.parse(file));
    const custom = find(
      render('-f', ALL_ON, '--set', 'grafanaDashboard.label=dashboards,grafanaDashboard.labelValue=echo'),
    );
    assert.equal(custom.metadata.labels.dashboards, 'echo');
    assert.equal(custom.metadata.labels.grafana_dashboard, undefined);
    assert.equal(custom.metadata.namespace, 'monitoring');
    assert.equal(custom.metadata.annotations.grafana_folder, 'chaos');
  });

  test('chart – the operator: drain inside its grace period, a PDB and a PodMonitor on its metrics port', () => {
    const objects = render('-f', ALL_ON);
    const operator = byKind(objects, 'Deployment').find(
      (d) => d.metadata.name === 'echo-chaos-operator',
    ) as Any;
    const pod: Any = operator.spec.template.spec;
    const [container] = pod.containers;
    const env = Object.fromEntries(container.env.map((e: Any) => [e.name, e.value]));
    const drainMs = Number(env.DRAIN_TIMEOUT_MS);
    assert.ok(drainMs >= 1000, `DRAIN_TIMEOUT_MS ${env.DRAIN_TIMEOUT_MS}`);
    assert.ok(pod.terminationGracePeriodSeconds * 1000 > drainMs, 'the drain ends inside the grace period');
    assert.equal(env.PROMETHEUS_URL, 'http://prometheus-operated.monitoring:9090', 'operator.prometheusUrl');
    const labels = operator.spec.selector.matchLabels;
    const pdbs = byKind(objects, 'PodDisruptionBudget') as Any[];
    assert.ok(pdbs.some((p) => JSON.stringify(p.spec.selector.matchLabels) === JSON.stringify(labels)));
    const [monitor] = byKind(objects, 'PodMonitor') as Any[];
    assert.deepEqual(monitor.spec.selector.matchLabels, labels);
    const port = monitor.spec.podMetricsEndpoints[0].port;
    assert.ok(container.ports.some((p: Any) => p.name === port));
    assert.equal(monitor.spec.podMetricsEndpoints[0].path, '/metrics');
  });

  test('chart – the operator runs with the node flags and environment `npm run operator` gives it (what bench:operator measures)', () => {
    const operator = byKind(render('-f', ALL_ON), 'Deployment').find(
      (d) => d.metadata.name === 'echo-chaos-operator',
    ) as Any;
    const [container] = operator.spec.template.spec.containers;
    const script = (
      JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }
    ).scripts['operator']!.split(' ');
    const node = script.indexOf('node');
    assert.deepEqual(container.command, ['node']);
    assert.deepEqual(container.args, [
      ...script.slice(node + 1).filter((w) => w.startsWith('--')),
      'main.js',
    ]);
    // The operator's own image (ADR 0048), run as its ENTRYPOINT and CMD run it.
    assert.match(container.image, /^ghcr\.io\/echo-chaos\/echo-chaos-operator:/);
    const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8').replace(/\\\n/g, ' ');
    const stage =
      /^FROM\s+\S+\s+AS\s+operator\s*$([\s\S]*?)(?=^FROM\s|(?![\s\S]))/im.exec(dockerfile)?.[1] ?? '';
    const exec = (op: string): unknown =>
      JSON.parse(new RegExp(`^${op}\\s+(\\[.*\\])\\s*$`, 'm').exec(stage)?.[1] ?? 'null');
    assert.deepEqual(container.command, exec('ENTRYPOINT'), "the image's ENTRYPOINT");
    assert.deepEqual(container.args, exec('CMD'), "the image's CMD");
    const env = Object.fromEntries(container.env.map((e: Any) => [e.name, e.value]));
    // `exec env NAME=value ... node`: the assignments, without the words that run them.
    const assignments = script.slice(0, node).filter((w) => /^[A-Z_][A-Z0-9_]*=/.test(w));
    assert.ok(assignments.length > 0, 'the script sets the environment the chart sets');
    for (const word of assignments) {
      const [name, value] = word.split('=');
      assert.equal(env[name!], value, `${name} in the operator's container`);
    }
  });

  test('chart – the ConfigMap holds scenarios the service accepts and an obs config it loads', () => {
    const [configMap] = byKind(render('-f', ALL_ON), 'ConfigMap') as Any[];
    const scenarios = JSON.parse(configMap.data['scenarios.json']);
    assert.equal(validateScenarios(scenarios).ok, true);
    assert.equal(scenarios[0].path, '/checkout');
    const dir = mkdtempSync(join(tmpdir(), 'echo-chaos-obs-'));
    try {
      writeFileSync(join(dir, 'obs.yaml'), configMap.data['obs.yaml']);
      assert.doesNotThrow(() => loadObsConfig({ env: { OBS_CONFIG_FILE: join(dir, 'obs.yaml') } }));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('chart – the operator gets least privilege: read scenarios, write their status, read pods, leases', () => {
    const docs = render('-f', ALL_ON);
    const [clusterRole] = byKind(docs, 'ClusterRole') as Any[];
    assert.deepEqual(clusterRole.rules, [
      {
        apiGroups: ['echo-chaos.dev'],
        resources: ['echoscenarios'],
        verbs: ['get', 'list', 'watch', 'update', 'patch'],
      },
      {
        apiGroups: ['echo-chaos.dev'],
        resources: ['echoscenarios/status'],
        verbs: ['get', 'update', 'patch'],
      },
      { apiGroups: [''], resources: ['pods', 'services'], verbs: ['get', 'list', 'watch'] },
      { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['get', 'list', 'watch'] },
      { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
    ]);
    const [leaseRole] = byKind(docs, 'Role') as Any[];
    assert.deepEqual(leaseRole.rules, [
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'] },
    ]);
    const namespaced = byKind(render('--set', 'operator.enabled=true'), 'Role');
    assert.equal(namespaced.length, 2, 'without watchAllNamespaces the scenario rules are a Role too');
  });

  test("chart – operator.resyncPeriod is the operator's OPERATOR_RESYNC_PERIOD, which it reads", () => {
    const env = (args: string[]) => {
      const [deployment] = byKind(render('--set', 'operator.enabled=true', ...args), 'Deployment').filter(
        (d) => d.metadata.name.endsWith('-operator'),
      ) as Any[];
      const vars = deployment.spec.template.spec.containers[0].env as Array<{ name: string; value?: string }>;
      return vars.find((v) => v.name === 'OPERATOR_RESYNC_PERIOD')?.value;
    };
    assert.equal(env([]), '5m');
    assert.equal(env(['--set', 'operator.resyncPeriod=1h30m']), '1h30m');
    assert.equal(loadOperatorConfig({ OPERATOR_RESYNC_PERIOD: env([]) }).resyncPeriodMs, 300_000);
  });

  test('chart – the helm test hook curls /health', () => {
    const [hook] = byKind(render(), 'Pod') as Any[];
    assert.equal(hook.metadata.annotations['helm.sh/hook'], 'test');
    assert.match(hook.spec.containers[0].args.join(' '), /http:\/\/echo-chaos:8080\/health$/);
  });

  test('chart – promtool check rules accepts the PrometheusRule', (t) => {
    if (!needTools(t, ['promtool'], 'Debian package prometheus')) return;
    const [rule] = byKind(render('-f', ALL_ON), 'PrometheusRule') as Any[];
    const groups = rule.spec.groups;
    const alerts = groups.flatMap((g: Any) => g.rules.filter((r: Any) => r.alert !== undefined));
    assert.deepEqual(
      alerts.map((a: Any) => a.labels.severity),
      ['page', 'page', 'ticket', 'ticket'],
    );
    assert.match(alerts[0].expr, /rate1h.*> \(14\.4 \* \(1 - 0\.995\)\)[\s\S]*rate5m/);
    const { dir, file } = ruleFile('echo-chaos-rules-', groups);
    const result = spawnSync('promtool', ['check', 'rules', file], { encoding: 'utf8', timeout: 30_000 });
    assert.equal(result.status, 0, `promtool check rules:\n${result.stdout}${result.stderr}`);
    assert.match(result.stdout, /SUCCESS: 9 rules found/);
    // Injected faults never page; the service's own 5xx do (promtool test rules, synthetic series).
    const series = (ownBad: number, faults: number) =>
      [
        ['200', 'none', 1000],
        ['503', 'none', ownBad],
        ['500', 'chaos', faults],
        ['502', 'error', faults],
        ['418', 'status', faults],
        ['504', 'scenario', faults],
      ].map(([status, fault, perMinute]) => ({
        series: `echo_requests_total{namespace="default",job="echo-chaos",status="${status}",fault="${fault}"}`,
        values: `0+${perMinute}x90`,
      }));
    const fired = (name: string) => ({ eval_time: '1h', alertname: name, exp_alerts: [] as unknown[] });
    const names = alerts
      .filter((a: Any) => a.alert !== 'EchoChaosConfigDrift')
      .map((a: Any) => a.alert as string);
    const quiet = { interval: '1m', input_series: series(0, 500), alert_rule_test: names.map(fired) };
    const paging = {
      interval: '1m',
      input_series: series(100, 0),
      promql_expr_test: [
        {
          expr: `count(ALERTS{alertstate="firing",severity="page"})`,
          eval_time: '1h',
          exp_samples: [{ labels: '{}', value: 2 }],
        },
      ],
    };
    const tests = join(dir, 'tests.yaml');
    writeFileSync(tests, dump({ rule_files: [file], evaluation_interval: '1m', tests: [quiet, paging] }));
    const unit = spawnSync('promtool', ['test', 'rules', tests], { encoding: 'utf8', timeout: 60_000 });
    assert.equal(unit.status, 0, `promtool test rules:\n${unit.stdout}${unit.stderr}`);
  });

  test('chart – EchoChaosConfigDrift fires on replicas that disagree for 15m, not during a rollout (promtool test rules)', (t) => {
    if (!needTools(t, ['promtool'], 'Debian package prometheus')) return;
    const [rule] = byKind(render('-f', ALL_ON), 'PrometheusRule') as Any[];
    const group = rule.spec.groups.find((g: Any) => g.name === 'echo-chaos-config-drift');
    assert.ok(group, 'the PrometheusRule has a config-drift group');
    const { dir, file } = ruleFile('echo-chaos-drift-', [group]);
    const info = (job: string, pod: string, hash: string, values: string) => ({
      series: `obs_config_info{namespace="default",job="${job}",pod="${pod}",hash="${hash}"}`,
      values,
    });
    const OPERATOR = 'default/echo-chaos-operator'; // a PodMonitor's job label
    const alert = group.rules.find((r: Any) => r.alert === 'EchoChaosConfigDrift');
    // promtool compares annotations too: the rule's own, with the template filled in.
    const annotations = (job: string, hashes: number) =>
      Object.fromEntries(
        Object.entries(alert.annotations as Record<string, string>).map(([k, v]) => [
          k,
          v
            .replaceAll('{{ $labels.job }}', job)
            .replaceAll('{{ $labels.namespace }}', 'default')
            .replaceAll('{{ $value }}', String(hashes)),
        ]),
      );
    assert.match(alert.annotations.description, /\{\{ \$labels\.job \}\}.*\{\{ \$value \}\} different/s);
    const drifted = {
      interval: '1m',
      input_series: [
        info('echo-chaos', 'echo-a', 'aaa', '1x40'),
        info('echo-chaos', 'echo-b', 'aaa', '1x40'),
        info('echo-chaos', 'echo-c', 'bbb', '1x40'),
        info(OPERATOR, 'operator-a', 'ccc', '1x40'),
        info(OPERATOR, 'operator-b', 'ddd', '1x40'),
        // Another application using the obs library: not this release's business.
        info('someone-else', 'x-a', 'eee', '1x40'),
        info('someone-else', 'x-b', 'fff', '1x40'),
      ],
      alert_rule_test: [
        // Still pending: two hashes for 10 minutes is what a rollout looks like.
        { eval_time: '10m', alertname: 'EchoChaosConfigDrift', exp_alerts: [] },
        {
          eval_time: '20m',
          alertname: 'EchoChaosConfigDrift',
          exp_alerts: ['echo-chaos', OPERATOR].map((job) => ({
            exp_labels: { severity: 'ticket', namespace: 'default', job },
            exp_annotations: annotations(job, 2),
          })),
        },
      ],
    };
    // A rollout: the new pods report the new hash from minute 5, the old ones go at minute 12 (a
    // stale marker, as when a target disappears); two hashes for 7 minutes, never 15.
    const rollout = {
      interval: '1m',
      input_series: [
        info('echo-chaos', 'echo-old-a', 'aaa', '1x12 stale'),
        info('echo-chaos', 'echo-old-b', 'aaa', '1x12 stale'),
        info('echo-chaos', 'echo-new-a', 'bbb', '_x5 1x35'),
        info('echo-chaos', 'echo-new-b', 'bbb', '_x5 1x35'),
        info(OPERATOR, 'operator-old', 'ccc', '1x8 stale'),
        info(OPERATOR, 'operator-new', 'ddd', '_x6 1x34'),
      ],
      alert_rule_test: [10, 20, 30, 40].map((minute) => ({
        eval_time: `${minute}m`,
        alertname: 'EchoChaosConfigDrift',
        exp_alerts: [],
      })),
    };
    const tests = join(dir, 'tests.yaml');
    writeFileSync(tests, dump({ rule_files: [file], evaluation_interval: '1m', tests: [drifted, rollout] }));
    const unit = spawnSync('promtool', ['test', 'rules', tests], { encoding: 'utf8', timeout: 60_000 });
    assert.equal(unit.status, 0, `promtool test rules:\n${unit.stdout}${unit.stderr}`);
  });
});
