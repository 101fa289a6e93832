// Starting the processes: mock upstream (load core) and the server under test (server core).
import { closeSync, mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { ADMIN_TOKEN, LOAD_CORE, ROOT, S, SERVER_CORE, UPSTREAM_API_KEY } from './config.js';
import type { TargetSpec } from './config.js';
import { freePort, waitForHttp200 } from './net.js';
import { isAlive, spawnPinned, stopChild, waitForListening } from './proc.js';

export interface RunningServer {
  child: ChildProcess;
  origin: string;
  chatPath: string;
  logPath?: string;
}

/** Only what a Node process needs; the caller's shell env must not change the result. */
export function baseEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const k of ['PATH', 'HOME', 'TMPDIR', 'LANG', 'TZ']) {
    const v = process.env[k];
    if (v !== undefined) env[k] = v;
  }
  return env;
}

export async function startMockUpstream(
  script = 'bench/mock-upstream.ts',
  env: Record<string, string> = {},
): Promise<{ child: ChildProcess; origin: string }> {
  const child = spawnPinned({
    core: LOAD_CORE,
    cmd: process.execPath,
    args: ['--import', 'tsx', path.join(ROOT, script)],
    cwd: ROOT,
    env: { ...baseEnv(), PORT: '0', BENCH_EXIT_WITH_PARENT: '1', ...env },
  });
  const port = await waitForListening(child, 'mock upstream');
  return { child, origin: `http://127.0.0.1:${port}` };
}

async function startPassthrough(spec: TargetSpec, upstreamOrigin: string): Promise<RunningServer> {
  const child = spawnPinned({
    core: spec.cores ?? SERVER_CORE,
    cmd: process.execPath,
    args: ['--import', 'tsx', path.join(ROOT, 'bench/passthrough.ts')],
    cwd: ROOT,
    env: {
      ...baseEnv(),
      PORT: '0',
      UPSTREAM_URL: upstreamOrigin,
      ADMIN_TOKEN,
      UPSTREAM_API_KEY,
      BENCH_EXIT_WITH_PARENT: '1',
      ...spec.env,
    },
  });
  const port = await waitForListening(child, spec.name);
  return { child, origin: `http://127.0.0.1:${port}`, chatPath: '/v1/chat/completions' };
}

export const GATEWAY_ENTRY = path.join(ROOT, 'dist/main.js');

/** The command that starts a gateway target: its own, BENCH_GATEWAY_CMD, or this Node with dist/main.js. */
export function gatewayCommand(spec: TargetSpec): [string, string[]] {
  const line = spec.command ?? S.gatewayCmd;
  if (line !== '') {
    const [cmd, ...args] = line.split(/\s+/);
    return [cmd ?? 'node', args];
  }
  return [process.execPath, [GATEWAY_ENTRY]];
}

function tail(file: string, lines = 30): string {
  try {
    return readFileSync(file, 'utf8').split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

/** Start the gateway with a fresh DATA_DIR; ready when GET /v1/?route=health answers 200. */
async function startGateway(spec: TargetSpec, upstreamOrigin: string, workDir: string): Promise<RunningServer> {
  const port = await freePort();
  const dataDir = path.join(workDir, 'data');
  mkdirSync(dataDir, { recursive: true });
  const logPath = path.join(workDir, 'server.log');
  const fd = openSync(logPath, 'a');
  const [cmd, args] = gatewayCommand(spec);
  const configEnv: Record<string, string> = {};
  if (spec.configText) {
    // YAML is a superset of JSON: the .yaml name takes either.
    const configPath = path.join(workDir, 'gateway.yaml');
    writeFileSync(configPath, spec.configText(upstreamOrigin));
    configEnv.GATEWAY_CONFIG = configPath;
  }
  let child: ChildProcess;
  try {
    child = spawnPinned({
      core: spec.cores ?? SERVER_CORE,
      cmd,
      args,
      cwd: ROOT,
      stdio: ['ignore', fd, fd],
      env: {
        ...baseEnv(),
        PORT: String(port),
        HOST: '127.0.0.1',
        GATEWAY_ENV: 'prod',
        ADMIN_TOKEN,
        UPSTREAM_BASE_URL: `${upstreamOrigin}/v1`,
        UPSTREAM_API_KEY,
        DATA_DIR: dataDir,
        LOG_LEVEL: 'info',
        ...spec.env,
        ...configEnv,
      },
    });
  } finally {
    closeSync(fd);
  }
  const origin = `http://127.0.0.1:${port}`;
  const ready = await waitForHttp200(`${origin}/v1/?route=health`, 15_000, () => isAlive(child));
  if (!ready.ok) {
    await stopChild(child);
    const exit = `exit code ${String(child.exitCode)}, signal ${String(child.signalCode)}`;
    throw new Error(
      `not ready (${cmd} ${args.join(' ')}; ${exit}): ${ready.reason}\n--- last lines of ${logPath} ---\n${tail(logPath)}`,
    );
  }
  return { child, origin, chatPath: '/v1/?route=chat', logPath };
}

/** Start one target; `workDir` is a fresh directory for its data and log. */
export function startTarget(spec: TargetSpec, upstreamOrigin: string, workDir: string): Promise<RunningServer> {
  return spec.kind === 'passthrough'
    ? startPassthrough(spec, upstreamOrigin)
    : startGateway(spec, upstreamOrigin, workDir);
}
