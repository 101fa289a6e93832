// The gateway under test: the built `dist/main.js` as a real process on 127.0.0.1, a fresh data directory, and a
// config file naming the four mock upstreams, with every model the client asks for sent to one of them
// (`default_upstream`). One gateway per path: the clients run on their default model, so the path is chosen by
// where the gateway sends that model, not by a model name the client would not use on its own.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { capturedOutput, track } from './children.js';
import { createMcpKey } from './mcp-credential.js';
import type { MockUpstream } from './mock-upstream.js';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const GATEWAY_ENTRY = join(ROOT, 'dist', 'main.js');
/**
 * The key the clients send (the gateway's admin token) and the upstreams' key: random, so that no text of the task
 * shares a run of characters with them (the gateway scrubs keys, and pieces of them, from what it passes on).
 */
export const GATEWAY_KEY = randomBytes(24).toString('hex');
const UPSTREAM_KEY = randomBytes(24).toString('hex');
const UPSTREAM_KEY_ENV = 'CONFORMANCE_UPSTREAM_KEY';

export type UpstreamName = 'anthropic' | 'responses' | 'chat' | 'gemini';

export interface Mocks {
  anthropic: MockUpstream;
  responses: MockUpstream;
  chat: MockUpstream;
  gemini: MockUpstream;
}

export interface RunningGateway {
  url: string;
  /** With `mcp`: a scoped key for `/mcp` made before the gateway started (mcp-credential.ts); undefined if refused. */
  mcpKey?: string;
  /** Everything the gateway wrote to stdout so far: its JSON log, one access line per request. */
  stdout(): string;
  stderr(): string;
  stop(): Promise<void>;
}

/**
 * The real MCP server the MCP paths reach through the gateway's `/mcp`: @modelcontextprotocol/server-everything (a
 * dev dependency of the project, from npm) over stdio, started by the gateway on first use.
 */
export const MCP_SERVERS = [
  {
    name: 'everything',
    command: process.execPath,
    args: [join(ROOT, 'node_modules', '@modelcontextprotocol', 'server-everything', 'dist', 'index.js'), 'stdio'],
  },
];

/**
 * The config file: the four upstreams, each of the kind it mocks, and the path's upstream as the default; with
 * `mcp`, the MCP server too.
 */
export function gatewayConfig(mocks: Mocks, target: UpstreamName, mcp = false): Record<string, unknown> {
  const upstream = (name: UpstreamName, kind: string, suffix: string): Record<string, unknown> => ({
    name,
    kind,
    base_url: `${mocks[name].origin}${suffix}`,
    api_key_env: UPSTREAM_KEY_ENV,
  });
  return {
    upstreams: [
      upstream('anthropic', 'anthropic', '/v1'),
      upstream('responses', 'openai', '/v1'),
      upstream('chat', 'openai-compatible', '/v1'),
      upstream('gemini', 'gemini', '/v1beta'),
    ],
    default_upstream: target,
    ...(mcp ? { mcp_servers: MCP_SERVERS } : {}),
  };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => (port > 0 ? resolve(port) : reject(new Error('no free port'))));
    });
  });
}

async function waitUntilHealthy(url: string, child: ChildProcess, timeoutMs: number): Promise<string | undefined> {
  const deadline = Date.now() + timeoutMs;
  let last = 'no answer yet';
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null)
      return `exited (${String(child.exitCode ?? child.signalCode)}) before it was ready`;
    try {
      const answer = await fetch(`${url}/v1/?route=health`, { signal: AbortSignal.timeout(2_000) });
      await answer.arrayBuffer();
      if (answer.status === 200) return undefined;
      last = `health answered ${answer.status}`;
    } catch (error) {
      last = error instanceof Error ? error.message : String(error);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return `not ready within ${timeoutMs} ms (${last})`;
}

const LOG_LIMIT = 4 * 1024 * 1024;

export async function startGateway(
  workDir: string,
  mocks: Mocks,
  target: UpstreamName,
  mcp = false,
): Promise<RunningGateway> {
  const dataDir = join(workDir, 'gateway-data');
  mkdirSync(dataDir, { recursive: true });
  const configPath = join(workDir, 'gateway.json');
  writeFileSync(configPath, JSON.stringify(gatewayConfig(mocks, target, mcp), null, 2));
  const port = await freePort();
  const env = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: workDir,
    HOST: '127.0.0.1',
    PORT: String(port),
    GATEWAY_ENV: 'prod',
    ADMIN_TOKEN: GATEWAY_KEY,
    DATA_DIR: dataDir,
    GATEWAY_CONFIG: configPath,
    LOG_LEVEL: 'info',
    [UPSTREAM_KEY_ENV]: UPSTREAM_KEY,
  };
  const mcpKey = mcp ? await createMcpKey(ROOT, env) : undefined;
  const child = spawn(process.execPath, [GATEWAY_ENTRY], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  track(child);
  const output = capturedOutput(child, LOG_LIMIT);
  const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
  const stop = async (): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(timer);
  };
  const url = `http://127.0.0.1:${port}`;
  const problem = await waitUntilHealthy(url, child, 20_000);
  if (problem !== undefined) {
    await stop();
    throw new Error(`gateway ${problem}\n${output.stderr.slice(-2_000)}`);
  }
  return { url, ...(mcpKey ? { mcpKey } : {}), stdout: () => output.stdout, stderr: () => output.stderr, stop };
}
