/**
 * Starts the real gateway application (buildApp, the real SQLite store, real providers) on 127.0.0.1 port 0 and
 * captures every log line it writes, so tests can assert on what was logged as well as on what was answered.
 * `useGateway` is the fixture most tests share: a mock upstream of one wire format on a real socket and the gateway
 * in front of it, started and closed by the calling describe block's own hooks.
 */
import { mcpSecrets } from '../../src/config/mcp-secrets.js';
import { after, before, beforeEach } from 'node:test';
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
import type { FileSearch } from '../../src/core/retrieval/file-search.js';
import { captureSecrets, captureText } from './capture.js';
import { startOpenAiUpstream, type OpenAiUpstream } from './upstreams/openai.js';
import { startAnthropicUpstream, type AnthropicUpstream } from './upstreams/anthropic.js';
import { startGeminiUpstream, type GeminiUpstream } from './upstreams/gemini.js';
import { started } from './started.js';

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
  /** The vector store search the `file_search` tool runs (a test's own, from fixed passages). */
  fileSearch?: FileSearch;
  /** Reads the config file again on `gateway.reloadConfig` (live reload, as the process does on SIGHUP). */
  reloadable?: boolean;
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
      ...mcpSecrets(config.mcp),
    ],
    destination: { write: (line: string) => void logLines.push(line) },
  });
  const deps = await openDependencies(config, logger);
  const store = deps.sqlite;
  const gateway = await buildApp({
    ...deps,
    ...(options.surfaces ? { surfaces: options.surfaces } : {}),
    ...(options.fileSearch ? { fileSearch: options.fileSearch } : {}),
    ...(options.reloadable ? { readConfig: () => loadConfig(env, { version: '0.0.0-test' }) } : {}),
  });
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
        ...mcpSecrets(config.mcp),
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

/** The mock upstream of each wire format. */
interface Mocks {
  openai: OpenAiUpstream;
  anthropic: AnthropicUpstream;
  gemini: GeminiUpstream;
}
export type UpstreamKind = keyof Mocks;

export interface GatewayFixture<K extends UpstreamKind> {
  readonly mock: Mocks[K];
  readonly gw: TestGateway;
  /** The gateway's URL for `path` (e.g. CHAT_PATH). */
  url(path: string): string;
}

export interface UseGatewayOptions<K extends UpstreamKind> extends Omit<StartOptions, 'configFile'> {
  /** The mock's wire format (default `openai`). */
  upstream?: K;
  /** The key the mock requires (refused otherwise); the gateway's upstream is given it. */
  key?: string;
  /**
   * The config file; its text may be built from the mock's base URL. Without one, an `openai` mock is the
   * gateway's `UPSTREAM_BASE_URL`, and an `anthropic` or `gemini` one is the config's one upstream, named `claude`
   * or `google`, serving `models` (YAML lines of model entries, e.g. `- { id: claude-fast, upstream: claude,
   * upstream_model: ... }`), with `upstreamLines` more lines of its entry (`batch: gateway`...).
   */
  configFile?: { name: string; text: string | ((mockBaseUrl: string) => string) };
  models?: string[];
  upstreamLines?: string[];
  /** Forget the mock's requests and script before each test (default true). */
  resetEachTest?: boolean;
}

const STARTS: { [K in UpstreamKind]: (options: { requiredKey?: string }) => Promise<Mocks[K]> } = {
  openai: startOpenAiUpstream,
  anthropic: startAnthropicUpstream,
  gemini: startGeminiUpstream,
};

/** The one upstream of an `anthropic` or `gemini` fixture: its name, the key's variable, its default models. */
const NATIVE = {
  anthropic: { name: 'claude', keyEnv: 'ANTHROPIC_TEST_KEY', models: [] as string[] },
  gemini: {
    name: 'google',
    keyEnv: 'GEMINI_TEST_KEY',
    models: ['- { id: flash, upstream: google, upstream_model: gemini-2.0-flash }'],
  },
};

export function useGateway<K extends UpstreamKind = 'openai'>(options: UseGatewayOptions<K> = {}): GatewayFixture<K> {
  const kind = options.upstream ?? 'openai';
  let mock: Mocks[K] | undefined;
  let gw: TestGateway | undefined;
  before(async () => {
    const upstream = (await STARTS[kind](options.key === undefined ? {} : { requiredKey: options.key })) as Mocks[K];
    mock = upstream;
    const file = options.configFile;
    const env: Record<string, string | undefined> = {};
    let configFile: { name: string; text: string } | undefined;
    if (file)
      configFile = { name: file.name, text: typeof file.text === 'string' ? file.text : file.text(upstream.baseUrl) };
    if (kind === 'openai') {
      env.UPSTREAM_BASE_URL = upstream.baseUrl;
      if (options.key !== undefined) env.UPSTREAM_API_KEY = options.key;
    } else {
      const native = NATIVE[kind as Exclude<UpstreamKind, 'openai'>];
      if (options.key !== undefined) env[native.keyEnv] = options.key;
      configFile ??= {
        name: `${kind}.yaml`,
        text: [
          'upstreams:',
          `  - name: ${native.name}`,
          `    kind: ${kind}`,
          `    base_url: ${upstream.baseUrl}`,
          `    api_key_env: ${native.keyEnv}`,
          ...(options.upstreamLines ?? []).map((line) => `    ${line}`),
          'models:',
          ...(options.models ?? native.models).map((m) => `  ${m}`),
        ].join('\n'),
      };
    }
    gw = await startGateway({
      ...(options.surfaces ? { surfaces: options.surfaces } : {}),
      ...(options.fileSearch ? { fileSearch: options.fileSearch } : {}),
      env: { ...env, ...options.env },
      ...(configFile ? { configFile } : {}),
    });
  });
  after(async () => {
    await gw?.close();
    await mock?.close();
  });
  if (options.resetEachTest !== false) beforeEach(() => mock?.reset());
  return {
    get mock() {
      return started(mock, 'useGateway');
    },
    get gw() {
      return started(gw, 'useGateway');
    },
    url: (path) => `${started(gw, 'useGateway').url}${path}`,
  };
}
