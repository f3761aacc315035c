/**
 * The API double (kube-api.ts) as a standalone server, so that a test run in cluster mode
 * (`KUBECONFIG` set) can talk to it like to a cluster:
 *
 *   node test/helpers/kube-api-server.ts <kubeconfig-path>
 *
 * writes a kubeconfig pointing at it to <kubeconfig-path>, prints `READY <url>` and serves until
 * SIGTERM or SIGINT.
 */
import { writeFileSync } from 'node:fs';
import { dump } from 'js-yaml';
import { startKubeApi } from './kube-api.ts';

const path = process.argv[2];
if (path === undefined || path === '') {
  process.stderr.write('usage: node test/helpers/kube-api-server.ts <kubeconfig-path>\n');
  process.exit(2);
}

const api = await startKubeApi({ bookmarkIntervalMs: 200 });
writeFileSync(
  path,
  dump({
    apiVersion: 'v1',
    kind: 'Config',
    // client-node refuses plain http unless TLS verification is off.
    clusters: [{ name: 'double', cluster: { server: api.url, 'insecure-skip-tls-verify': true } }],
    users: [{ name: 'double', user: { token: 'test' } }],
    contexts: [{ name: 'double', context: { cluster: 'double', user: 'double', namespace: 'default' } }],
    'current-context': 'double',
  }),
);
process.stdout.write(`READY ${api.url}\n`);

const stop = () => {
  api.close().then(
    () => process.exit(0),
    () => process.exit(1),
  );
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
