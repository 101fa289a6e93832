import { createHash, randomUUID } from 'node:crypto';
import { readlinkSync } from 'node:fs';

/**
 * A runner's name in the store's leases. With an instance identity (INSTANCE_ID, else the host name and the data
 * folder: src/wiring/batches-wiring.ts) it is `runner_<identity key>_<pid namespace>_<pid>_<uuid>`, so a process that
 * starts again under the same identity recognizes the leases of the one before it, and can tell them from a live
 * sibling's (cluster workers, several processes on one data folder share the identity, never a pid within one pid
 * namespace). Without one: `runner_<uuid>`.
 */
export interface RunnerName {
  holder: string;
  /** What every holder of this identity starts with; undefined without an identity (nothing is taken back). */
  prefix: string | undefined;
  /** This process's pid namespace: pids are only comparable within one (each container has its own pid 1). */
  namespace: string;
}

/**
 * The pid namespace of this process (Linux: the inode of /proc/self/ns/pid), `0` where it cannot be read (one
 * namespace then, as on a system without them).
 */
export function pidNamespace(): string {
  try {
    return /^pid:\[(\d{1,20})\]$/.exec(readlinkSync('/proc/self/ns/pid'))?.[1] ?? '0';
  } catch {
    return '0';
  }
}

/** 16 hex characters of the identity's SHA-256: a fixed-size name whatever the identity holds. */
function keyOf(identity: string): string {
  return createHash('sha256').update(identity).digest('hex').slice(0, 16);
}

export function runnerName(
  identity: string | undefined,
  pid: number = process.pid,
  namespace: string = pidNamespace(),
): RunnerName {
  if (identity === undefined) return { holder: `runner_${randomUUID()}`, prefix: undefined, namespace };
  const prefix = `runner_${keyOf(identity)}_`;
  return { holder: `${prefix}${namespace}_${pid}_${randomUUID()}`, prefix, namespace };
}

/** Whether a process with this pid exists here (signal 0 sends nothing: ESRCH means none, EPERM another user's). */
export function pidExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}

/**
 * Whether `holder`, a lease holder of this runner's identity (it starts with `name.prefix`), is a runner that can
 * no longer be running: one of this pid namespace, of an earlier process with this process's own pid (two live
 * processes of one namespace never share one) or of a pid no process has now. A live sibling's, one of another
 * pid namespace (another container on the same folder and host name, its pid 1 as ours: it may be alive, and its
 * pids mean nothing here; a restarted container's own leases too), or one whose name does not parse (an older
 * version's) is not: its lease runs out as any other.
 */
export function isDeadPredecessor(
  holder: string,
  name: RunnerName,
  pid: number = process.pid,
  exists: (pid: number) => boolean = pidExists,
): boolean {
  if (name.prefix === undefined || holder === name.holder || !holder.startsWith(name.prefix)) return false;
  const match = /^(\d{1,20})_(\d{1,10})_[0-9a-f-]{36}$/.exec(holder.slice(name.prefix.length));
  if (!match || match[1] !== name.namespace) return false;
  const theirs = Number(match[2]);
  if (!Number.isSafeInteger(theirs) || theirs <= 0) return false;
  return theirs === pid || !exists(theirs);
}
