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
import { startKubeApi } from './kube-api.ts';

const path = process.argv[2];
if (path === undefined || path === '') {
  process.stderr.write('usage: node test/helpers/kube-api-server.ts <kubeconfig-path>\n');
  process.exit(2);
}

const api = await startKubeApi({ bookmarkIntervalMs: 200 });
writeFileSync(path, api.kubeconfigFile());
process.stdout.write(`READY ${api.url}\n`);

const stop = () => {
  api.close().then(
    () => process.exit(0),
    () => process.exit(1),
  );
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
