/**
 * Starts the real gateway application (buildApp, the real SQLite store, real providers) on 127.0.0.1 port 0 and
 * captures every log line it writes, so tests can assert on what was logged as well as on what was answered.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildApp, type GatewayApp } from '../../src/app.js';
import { loadConfig } from '../../src/config/load.js';
import type { GatewayConfig } from '../../src/config/types.js';
import { createLogger } from '../../src/observability/logger.js';
import { openDependencies } from '../../src/dependencies.js';
import type { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { SurfaceDescriptor } from '../../src/surfaces/descriptor.js';
import { captureSecrets, captureText } from './capture.js';

export const ADMIN_TOKEN = 'test-admin-token-0123456789abcdef';

export interface TestGateway {
  url: string;
  port: number;
  config: GatewayConfig;
  gateway: GatewayApp;
  store: SqliteStore;
  /** Every log line written so far, as raw text (what a log sink would receive). */
  logLines: string[];
  dataDir: string;
  close(): Promise<void>;
}

export interface StartOptions {
  env?: Record<string, string | undefined>;
  /** Written to a temporary YAML/JSON file and passed as GATEWAY_CONFIG. */
  configFile?: { name: string; text: string };
  /** The API surfaces to serve instead of the registry's (a test's own surface). */
  surfaces?: readonly SurfaceDescriptor[];
}

export async function startGateway(options: StartOptions = {}): Promise<TestGateway> {
  const dataDir = mkdtempSync(join(tmpdir(), 'gw-test-'));
  const env: Record<string, string | undefined> = {
    GATEWAY_ENV: 'dev',
    ADMIN_TOKEN,
    DATA_DIR: dataDir,
    LOG_LEVEL: 'debug',
    ...options.env,
  };
  if (options.configFile) {
    const path = join(dataDir, options.configFile.name);
    writeFileSync(path, options.configFile.text);
    env.GATEWAY_CONFIG = path;
  }
  const config = loadConfig(env, { version: '0.0.0-test' });
  const logLines: string[] = [];
  const logger = createLogger({
    level: config.logLevel,
    secrets: [
      ...config.adminTokens,
      ...config.upstreams.map((u) => u.apiKey),
      ...config.webhooks.subscriptions.flatMap((s) => s.secrets),
    ],
    destination: { write: (line: string) => void logLines.push(line) },
  });
  const deps = await openDependencies(config, logger);
  const store = deps.sqlite;
  const gateway = await buildApp(options.surfaces ? { ...deps, surfaces: options.surfaces } : deps);
  await gateway.app.listen({ host: '127.0.0.1', port: 0 });
  const address = gateway.app.server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `${config.tls ? 'https' : 'http'}://127.0.0.1:${port}`,
    port,
    config,
    gateway,
    store,
    logLines,
    dataDir,
    async close() {
      await gateway.app.close();
      captureText('logs', logLines.join('\n'));
      captureSecrets([
        ...config.adminTokens,
        ...config.upstreams.map((u) => u.apiKey),
        ...config.webhooks.subscriptions.flatMap((s) => s.secrets),
      ]);
      await deps.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export function authHeaders(extra: Record<string, string> = {}): Record<string, string> {
  return { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json', ...extra };
}

export const CHAT_PATH = '/v1/?route=chat';

export function chatBody(extra: Record<string, unknown> = {}): string {
  return JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hello?' }], ...extra });
}
