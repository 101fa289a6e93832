// Every process the suite starts (gateways, clients and the process groups the clients lead) is tracked, so that an
// interrupted run (Ctrl-C, SIGTERM, a crash) leaves none behind. Only those processes are signalled, by their ids.
import type { ChildProcess } from 'node:child_process';

interface How {
  /** It leads its own process group (spawned detached): the group is signalled as a whole. */
  group?: boolean;
  /** Default SIGKILL; SIGTERM for the suite itself re-started in a namespace, which then cleans up its own. */
  signal?: NodeJS.Signals;
}

const tracked = new Map<ChildProcess, How>();

/** Tracks `child` until it exits. */
export function track(child: ChildProcess, how: How = {}): void {
  tracked.set(child, how);
  child.once('exit', () => tracked.delete(child));
}

/** What a child writes to stdout and stderr as it comes, each kept up to `limit` characters (the rest dropped). */
export function capturedOutput(child: ChildProcess, limit: number): { stdout: string; stderr: string } {
  const output = { stdout: '', stderr: '' };
  child.stdout?.setEncoding('utf8').on('data', (text: string) => {
    if (output.stdout.length < limit) output.stdout += text;
  });
  child.stderr?.setEncoding('utf8').on('data', (text: string) => {
    if (output.stderr.length < limit) output.stderr += text;
  });
  return output;
}

/** Signals a child (its group when it leads one), SIGKILL unless told otherwise. */
export function killNow(child: ChildProcess, how: How = {}): void {
  if (child.pid === undefined) return;
  try {
    process.kill(how.group === true ? -child.pid : child.pid, how.signal ?? 'SIGKILL');
  } catch {
    // already gone
  }
}

function killTracked(): void {
  for (const [child, how] of tracked) killNow(child, how);
  tracked.clear();
}

/** Called once by the suite's entry point: on exit or on a signal, every tracked process goes too. */
export function cleanUpOnExit(): void {
  process.once('exit', killTracked);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(signal, () => {
      killTracked();
      process.exit(130);
    });
  }
}
