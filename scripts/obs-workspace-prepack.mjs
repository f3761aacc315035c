/**
 * `prepack` of the obs workspace (src/obs/package.json): packing the workspace itself
 * (`npm pack -w src/obs`, `npm pack ./src/obs`) would make a tarball of TypeScript sources that
 * fails to install (node does not strip types under node_modules). It stops with the command that
 * packs the real package instead. The built package (src/obs/dist) has no such script. Plain
 * JavaScript, so that it says so on any Node.
 */
process.stderr.write(
  [
    '@echo-chaos/obs: src/obs is the TypeScript source of the package, not the package.',
    'Pack the built package instead, from the repository root: npm run build && npm pack ./src/obs/dist',
    '',
  ].join('\n'),
);
process.exit(1);
