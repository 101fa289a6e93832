// Child processes for the bench: CPU pinning with taskset, a registry so every child is
// killed on exit / error / Ctrl-C, and waiting for a `LISTENING <port>` line.
import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcess, StdioOptions } from 'node:child_process';
import { createInterface } from 'node:readline';

let tasksetOk: boolean | undefined;

/** True when `taskset` exists and may pin processes here. */
export function hasTaskset(): boolean {
  if (tasksetOk === undefined) {
    const r = spawnSync('taskset', ['-c', '0', 'true'], { stdio: 'ignore', timeout: 5_000 });
    tasksetOk = r.error === undefined && r.status === 0;
  }
  return tasksetOk;
}

/** Pin every thread of this process (and the threads it creates later) to one core. */
export function pinSelf(core: number): boolean {
  if (!hasTaskset()) return false;
  const r = spawnSync('taskset', ['-a', '-p', '-c', String(core), String(process.pid)], {
    stdio: 'ignore',
    timeout: 5_000,
  });
  return r.error === undefined && r.status === 0;
}

const children = new Set<ChildProcess>();

export interface SpawnSpec {
  /** Core (or taskset core list, e.g. `0,1`) to pin to (ignored when taskset is missing). */
  core: number | string;
  cmd: string;
  args: readonly string[];
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  stdio?: StdioOptions;
}

/** Spawn `cmd args` pinned to a core; the child is registered for cleanup. */
export function spawnPinned(spec: SpawnSpec): ChildProcess {
  const [cmd, args] = hasTaskset()
    ? ['taskset', ['-c', String(spec.core), spec.cmd, ...spec.args]]
    : [spec.cmd, [...spec.args]];
  const child = spawn(cmd, args, {
    env: spec.env ?? process.env,
    ...(spec.cwd !== undefined ? { cwd: spec.cwd } : {}),
    stdio: spec.stdio ?? ['pipe', 'pipe', 'inherit'],
  });
  children.add(child);
  child.once('exit', () => children.delete(child));
  child.once('error', () => children.delete(child));
  return child;
}

export function isAlive(child: ChildProcess): boolean {
  return child.exitCode === null && child.signalCode === null;
}

/** SIGKILL every child still running (safe to call from an 'exit' handler). */
export function killAllSync(): void {
  for (const child of children) {
    if (isAlive(child)) child.kill('SIGKILL');
  }
  children.clear();
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves once the child has exited. */
export async function stopChild(child: ChildProcess, graceMs = 3_000): Promise<void> {
  if (!isAlive(child)) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}

/** Resolve with the port from the child's first `LISTENING <port>` stdout line. */
export function waitForListening(child: ChildProcess, label: string, timeoutMs = 15_000): Promise<number> {
  const stdout = child.stdout;
  if (stdout === null) return Promise.reject(new Error(`${label}: stdout is not piped`));
  return new Promise<number>((resolve, reject) => {
    const lines = createInterface({ input: stdout });
    const finish = (err: Error | undefined, port?: number): void => {
      clearTimeout(timer);
      child.off('exit', onExit);
      // Keep draining stdout so the child never blocks on a full pipe.
      lines.removeListener('line', onLine);
      if (err !== undefined) reject(err);
      else resolve(port ?? 0);
    };
    const onLine = (line: string): void => {
      const m = /^LISTENING (\d+)\s*$/.exec(line);
      if (m?.[1] !== undefined) finish(undefined, Number(m[1]));
    };
    const onExit = (code: number | null, signal: NodeJS.Signals | null): void =>
      finish(new Error(`${label} exited before listening (code ${String(code)}, signal ${String(signal)})`));
    const timer = setTimeout(
      () => finish(new Error(`${label} did not print LISTENING within ${timeoutMs} ms`)),
      timeoutMs,
    );
    lines.on('line', onLine);
    child.once('exit', onExit);
  });
}

/**
 * Feed each stdout line of `child` to `onLine`; resolve when it exits with code 0, reject on
 * a non-zero exit or after `timeoutMs` (the child is then killed).
 */
export function runToCompletion(
  child: ChildProcess,
  label: string,
  timeoutMs: number,
  onLine: (line: string) => void,
): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (child.stdout !== null) createInterface({ input: child.stdout }).on('line', onLine);
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${label} did not finish within ${timeoutMs} ms (killed)`));
    }, timeoutMs);
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve();
      else reject(new Error(`${label} failed (code ${String(code)}, signal ${String(signal)})`));
    });
  });
}

/**
 * For our own children (mock upstream, passthrough, load generator): exit when the
 * orchestrator goes away, even if it was SIGKILLed. The orchestrator keeps our stdin
 * open and sets BENCH_EXIT_WITH_PARENT=1; EOF on stdin means it is gone.
 */
export function exitWithParent(): void {
  if (process.env.BENCH_EXIT_WITH_PARENT !== '1') return;
  process.stdin.on('end', () => process.exit(0));
  process.stdin.on('error', () => process.exit(0));
  process.stdin.resume();
}
