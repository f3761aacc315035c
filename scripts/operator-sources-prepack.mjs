/**
 * `prepack` of `src/operator/package.json`, the operator's kept (private) manifest: packing the
 * folder itself (`npm pack ./src/operator`) would make a tarball of TypeScript sources that cannot
 * run from node_modules and lacks its Kubernetes client. It stops with the command that packs the
 * real package instead, `src/operator/dist` (ADR 0048). The built package has no such script. Plain
 * JavaScript, so that it says so on any Node.
 */
process.stderr.write(
  [
    '@echo-chaos/operator: src/operator is the TypeScript source of the operator, not its package.',
    'Pack the built package instead, from the repository root: npm run pack:operator',
    '(that is: npm run build && npm pack ./src/operator/dist)',
    '',
  ].join('\n'),
);
process.exit(1);
