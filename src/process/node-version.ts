/** The oldest Node major the gateway runs on: node:sqlite without a warning, and every dependency's engines (ADR 0005). */
export const MIN_NODE_MAJOR = 24;

/**
 * Why this Node cannot run the gateway, or undefined when it can. Checked before anything opens the store, so an
 * old runtime gets one clear sentence instead of `ERR_UNKNOWN_BUILTIN_MODULE: node:sqlite` from deep inside.
 */
export function unsupportedNode(version = process.version): string | undefined {
  const major = Number(/^v?(\d+)\./.exec(version)?.[1]);
  if (major >= MIN_NODE_MAJOR) return undefined;
  return (
    `Node ${version} is not supported: the gateway needs Node ${MIN_NODE_MAJOR} or later (24 and 26 are tested). ` +
    '`npm start` runs the Node 26 the project installs in node_modules/.bin; elsewhere, install a current Node LTS.'
  );
}
