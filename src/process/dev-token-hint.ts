import type { GatewayConfig } from '../config/types.js';

/** Where the generated development admin token is (never the token): printed once at start. */
export function printDevTokenHint(config: GatewayConfig, port: number): void {
  if (!config.adminTokenFile) return;
  // Where the token is, never the token: this line may be shipped to a log aggregator.
  const verb =
    config.adminTokenSource === 'generated'
      ? 'generated a development admin token'
      : 'using the development admin token';
  process.stderr.write(
    `\nNo ADMIN_TOKEN set: ${verb} stored in ${config.adminTokenFile} (mode 0600).\n` +
      `Try: curl -H "Authorization: Bearer $(cat ${config.adminTokenFile})" "http://${config.host}:${port}/v1/?route=models"\n\n`,
  );
}
