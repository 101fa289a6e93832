/**
 * Runs the gateway as a real operating-system process (`node --import tsx src/main.ts`), the way it runs in
 * production: real environment variables, real signals, real exit codes, stdout (the JSON log) and stderr (human
 * messages) captured separately.
 *
 * Every process started here is remembered; `killAllGateways()` (call it in `after`) SIGKILLs whatever is still
 * running, and a process 'exit' hook does the same as a last resort, so a failing test never leaves a gateway
 * behind. Every wait is bounded.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { request as httpRequest, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { captureSecrets, captureText, credentialOf } from './capture.js';
import { PROJECT_ROOT } from './paths.js';

/** The project root (where package.json and src/ live): the gateway's working directory. */
export { PROJECT_ROOT };

export const CHAT_PATH = '/v1/?route=chat';
export const HEALTH_PATH = '/v1/?route=health';
export const MODELS_PATH = '/v1/?route=models';

export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface GatewayProcess {
  child: ChildProcess;
  port: number;
  /** `http://127.0.0.1:PORT` */
  url: string;
  dataDir: string;
  /** Everything written to stdout so far (the pino JSON log). */
  stdout(): string;
  /** Everything written to stderr so far (human-readable start-up and error messages). */
  stderr(): string;
  /** Resolves once the process has exited and its output pipes are closed. Never rejects. */
  exited: Promise<ExitInfo>;
  /** Exit status once known, otherwise undefined. */
  exitInfo(): ExitInfo | undefined;
  /** Sends a signal (no-op once the process has exited). */
  signal(signal: NodeJS.Signals): void;
  /** Waits for the exit, failing after `timeoutMs` (the process is left running; `kill()` it in finally). */
  waitForExit(timeoutMs: number): Promise<ExitInfo>;
  /** SIGKILLs the process if still running and waits (bounded) for it to be gone. Idempotent. */
  kill(): Promise<void>;
}

export interface SpawnOptions {
  /** Environment variables for the gateway, added to a minimal environment (PATH only). undefined drops a key. */
  env?: Record<string, string | undefined>;
  /** Reuse a data directory (default: a fresh mkdtemp directory, removed by `removeTempDirs()`). */
  dataDir?: string;
  /** Port to pass as PORT (default: a free one). */
  port?: number;
  /** A command the gateway is started under, e.g. `['prlimit', '--nofile=600:600', '--']`. */
  wrapper?: string[];
}

const running = new Set<ChildProcess>();
const tempDirs = new Set<string>();

process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/** Whether a process with this pid still exists (signal 0 checks without sending anything). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** A fresh temporary directory, removed by `removeTempDirs()`. */
export function makeTempDir(prefix = 'gw-proc-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  tempDirs.add(dir);
  return dir;
}

export function removeTempDirs(): void {
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
  tempDirs.clear();
}

/** A TCP port that was free a moment ago: listen on port 0, read the port, close. */
export async function freePort(): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      if (address === null || typeof address === 'string') {
        server.close();
        reject(new Error('freePort: no TCP address'));
        return;
      }
      server.close(() => resolve(address.port));
    });
  });
}

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** Starts the gateway process without waiting for it to be ready. */
export async function spawnGateway(options: SpawnOptions = {}): Promise<GatewayProcess> {
  const dataDir = options.dataDir ?? makeTempDir();
  const port = options.port ?? (await freePort());
  const env: Record<string, string> = { PATH: process.env.PATH ?? '/usr/bin:/bin' };
  const given: Record<string, string | undefined> = {
    HOST: '127.0.0.1',
    PORT: String(port),
    DATA_DIR: dataDir,
    ...options.env,
  };
  for (const [key, value] of Object.entries(given)) if (value !== undefined) env[key] = value;

  const command = [...(options.wrapper ?? []), process.execPath, '--import', 'tsx', 'src/main.ts'];
  const child = spawn(command[0] as string, command.slice(1), {
    cwd: PROJECT_ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  let out = '';
  let err = '';
  child.stdout?.setEncoding('utf8').on('data', (text: string) => (out += text));
  child.stderr?.setEncoding('utf8').on('data', (text: string) => (err += text));
  let info: ExitInfo | undefined;
  const exited = new Promise<ExitInfo>((resolve) => {
    child.once('close', (code, signal) => {
      running.delete(child);
      captureText('logs', `${out}\n${err}`);
      captureSecrets([env.ADMIN_TOKEN, env.UPSTREAM_API_KEY, env.WH_SECRET]);
      info = { code, signal };
      resolve(info);
    });
    child.once('error', (error) => {
      running.delete(child);
      err += `\n[spawn error] ${error.message}\n`;
      info = { code: null, signal: null };
      resolve(info);
    });
  });

  return {
    child,
    port,
    url: `http://127.0.0.1:${port}`,
    dataDir,
    stdout: () => out,
    stderr: () => err,
    exited,
    exitInfo: () => info,
    signal(signal) {
      if (info === undefined && child.exitCode === null && child.signalCode === null) child.kill(signal);
    },
    waitForExit(timeoutMs) {
      return withTimeout(exited, timeoutMs, `gateway pid ${child.pid ?? '?'} to exit; stderr:\n${err}`);
    },
    async kill() {
      if (info !== undefined) return;
      child.kill('SIGKILL');
      await withTimeout(exited, 5_000, 'gateway to die after SIGKILL').catch(() => undefined);
    },
  };
}

/**
 * Starts the gateway and waits until `GET /v1/?route=health` answers 200. Fails (after killing it) if the
 * process exits first or is not ready within `timeoutMs`. A start that lost the free-port race (EADDRINUSE) is
 * retried on another port.
 */
export async function startGatewayProcess(options: SpawnOptions = {}, timeoutMs = 20_000): Promise<GatewayProcess> {
  for (let attempt = 1; ; attempt++) {
    const gw = await spawnGateway(options);
    try {
      await waitUntilReady(gw, timeoutMs);
      return gw;
    } catch (error) {
      await gw.kill();
      const lostRace = gw.stderr().includes('EADDRINUSE') && options.port === undefined;
      if (!lostRace || attempt >= 3) throw error;
    }
  }
}

export async function waitUntilReady(gw: GatewayProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const info = gw.exitInfo();
    if (info !== undefined) {
      throw new Error(
        `gateway exited before it was ready (code ${String(info.code)}, signal ${String(info.signal)}); stderr:\n${gw.stderr()}`,
      );
    }
    try {
      const answer = await httpCall(`${gw.url}${HEALTH_PATH}`, { timeoutMs: 1_000 });
      if (answer.status === 200) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`gateway not ready within ${timeoutMs} ms; stderr:\n${gw.stderr()}`);
}

/** Sends SIGKILL to every gateway process still running and waits for them. */
export async function killAllGateways(): Promise<void> {
  const children = [...running];
  for (const child of children) child.kill('SIGKILL');
  await Promise.all(
    children.map((child) =>
      withTimeout(
        new Promise<void>((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) resolve();
          else child.once('exit', () => resolve());
        }),
        5_000,
        'gateway to die',
      ).catch(() => undefined),
    ),
  );
}

export interface HttpAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
}

export interface HttpCallOptions {
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  /** Whole-exchange budget (default 10 s): the request is destroyed and the promise rejects after it. */
  timeoutMs?: number;
  /** The answer shows a scoped key once, by design (a key's creation): it is masked in the captured body. */
  disclosesKey?: boolean;
}

/**
 * One HTTP exchange on a NEW TCP connection (no agent, no keep-alive pool), body read fully. A fresh
 * connection per call matters here: "is the gateway still accepting connections?" must not be answered by
 * an idle pooled socket.
 */
export function httpCall(url: string, options: HttpCallOptions = {}): Promise<HttpAnswer> {
  return new Promise<HttpAnswer>((resolve, reject) => {
    const req = httpRequest(url, { method: options.method ?? 'GET', headers: options.headers, agent: false });
    const timer = setTimeout(
      () =>
        req.destroy(
          new Error(`HTTP ${options.method ?? 'GET'} ${url}: no answer within ${options.timeoutMs ?? 10_000} ms`),
        ),
      options.timeoutMs ?? 10_000,
    );
    req.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    req.once('response', (res: IncomingMessage) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (part: string) => (text += part));
      res.once('end', () => {
        clearTimeout(timer);
        captureText(
          'bodies',
          options.disclosesKey ? text.replace(/"key":"gwk_[^"]*"/g, '"key":"<shown once, by design>"') : text,
        );
        captureSecrets([
          credentialOf(options.headers?.authorization ?? options.headers?.Authorization),
          options.headers?.['x-upstream-key'],
        ]);
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text });
      });
      res.once('error', (error) => {
        clearTimeout(timer);
        reject(error);
      });
    });
    req.end(options.body);
  });
}

/** Parses a JSON response body, failing the test with the raw text when it is not JSON. */
export function jsonOf(answer: HttpAnswer): Record<string, unknown> {
  try {
    const value = JSON.parse(answer.text) as unknown;
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) return value as Record<string, unknown>;
  } catch {
    // fall through
  }
  throw new Error(`expected a JSON object body, got (${answer.status}): ${answer.text.slice(0, 500)}`);
}

export function bearer(token: string, extra: Record<string, string> = {}): Record<string, string> {
  return { authorization: `Bearer ${token}`, ...extra };
}

export function chatRequestBody(model: string, stream: boolean, content = 'hi'): string {
  return JSON.stringify({ model, messages: [{ role: 'user', content }], stream });
}

/** An SSE response being received: resolves `firstData` at the first body bytes and `done` at the end. */
export interface StreamingCall {
  status: Promise<number>;
  /** Resolves when the first body bytes arrive. */
  firstData: Promise<void>;
  /** Resolves with everything received and whether the response ended normally (vs. cut / errored). */
  done: Promise<{ text: string; complete: boolean; error: string | undefined }>;
  abort(): void;
}

/** Starts a POST whose answer is read incrementally, on a new TCP connection. Never rejects; bounded by timeoutMs. */
export function streamingCall(
  url: string,
  headers: Record<string, string>,
  body: string,
  timeoutMs = 15_000,
): StreamingCall {
  let resolveStatus!: (status: number) => void;
  let rejectStatus!: (error: Error) => void;
  let resolveFirst!: () => void;
  let rejectFirst!: (error: Error) => void;
  let resolveDone!: (value: { text: string; complete: boolean; error: string | undefined }) => void;
  const status = new Promise<number>((resolve, reject) => ((resolveStatus = resolve), (rejectStatus = reject)));
  const firstData = new Promise<void>((resolve, reject) => ((resolveFirst = resolve), (rejectFirst = reject)));
  const done = new Promise<{ text: string; complete: boolean; error: string | undefined }>(
    (resolve) => (resolveDone = resolve),
  );
  // Callers may never await some of these; keep an unobserved rejection from failing the run.
  status.catch(() => undefined);
  firstData.catch(() => undefined);

  let text = '';
  let settled = false;
  const finish = (complete: boolean, error: string | undefined): void => {
    if (settled) return;
    settled = true;
    clearTimeout(timer);
    const failure = new Error(error ?? 'stream ended');
    rejectStatus(failure);
    rejectFirst(failure);
    resolveDone({ text, complete, error });
  };
  const req = httpRequest(url, { method: 'POST', headers, agent: false });
  const timer = setTimeout(() => {
    finish(false, `timed out after ${timeoutMs} ms`);
    req.destroy();
  }, timeoutMs);
  req.once('error', (error) => finish(false, error.message));
  req.once('response', (res: IncomingMessage) => {
    resolveStatus(res.statusCode ?? 0);
    res.setEncoding('utf8');
    res.on('data', (part: string) => {
      text += part;
      resolveFirst();
    });
    res.once('end', () => finish(true, undefined));
    res.once('aborted', () => finish(false, 'response aborted'));
    res.once('error', (error) => finish(false, error.message));
    res.once('close', () => finish(res.complete, res.complete ? undefined : 'connection closed before the end'));
  });
  req.end(body);
  return { status, firstData, done, abort: () => req.destroy() };
}

/** The `data:` payloads of an SSE text, in order. */
export function sseData(text: string): string[] {
  return text.split('\n\n').flatMap((event) =>
    event
      .split('\n')
      .filter((line) => line.startsWith('data: '))
      .map((line) => line.slice(6))
      .slice(0, 1),
  );
}

/** Concatenated `choices[0].delta.content` of the chunk events of an SSE text (ignores [DONE] and non-JSON). */
export function streamedContent(text: string): string {
  let content = '';
  for (const data of sseData(text)) {
    if (data === '[DONE]') continue;
    try {
      const chunk = JSON.parse(data) as { choices?: Array<{ delta?: { content?: unknown } }> };
      const piece = chunk.choices?.[0]?.delta?.content;
      if (typeof piece === 'string') content += piece;
    } catch {
      // not a JSON chunk
    }
  }
  return content;
}

/** The JSON log lines of a stdout capture (non-empty lines); throws naming the first line that is not JSON. */
export function logLines(stdout: string): Array<Record<string, unknown>> {
  return stdout
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line, i) => {
      try {
        const value = JSON.parse(line) as unknown;
        if (typeof value === 'object' && value !== null && !Array.isArray(value))
          return value as Record<string, unknown>;
      } catch {
        // reported below
      }
      throw new Error(`log line ${i + 1} is not a JSON object: ${line.slice(0, 300)}`);
    });
}
