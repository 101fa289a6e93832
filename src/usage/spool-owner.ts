import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { pidNamespace } from '../core/batches/runner-identity.js';

/**
 * Who owns a usage spool: a token `<pid namespace>-<pid>-<start>-<random>` naming its folder. `start` is when the
 * process started, in clock ticks since boot (Linux's /proc/<pid>/stat, field 22), so a process that happens to have a
 * dead owner's pid (a restarted gateway is often pid 1 again) is not mistaken for it. The pid namespace (the inode of
 * /proc/self/ns/pid) says whether pids can be compared at all: a spool of another container on the same folder is
 * judged by its heartbeat instead (its folder's time, touched every SPOOL_HEARTBEAT_MS). Where /proc is missing both
 * are 0 and only the pid is checked.
 */
export interface SpoolOwner {
  readonly token: string;
  readonly namespace: string;
  readonly pid: number;
  readonly start: number;
}

/** How often a live spool's folder is touched. */
export const SPOOL_HEARTBEAT_MS = 10_000;
/** A spool of another pid namespace whose folder was not touched for this long is taken for its dead process's. */
export const SPOOL_STALE_MS = 60_000;

const TOKEN = /^([0-9]{1,20})-([1-9][0-9]{0,9})-([0-9]{1,20})-([0-9a-f]{12})$/;

/** This process as a spool owner (a fresh random part each time: two spools of one process never share a name). */
export function ownSpoolOwner(): SpoolOwner {
  const namespace = pidNamespace();
  const start = startOf(process.pid) ?? 0;
  const token = `${namespace}-${process.pid}-${start}-${randomBytes(6).toString('hex')}`;
  return { token, namespace, pid: process.pid, start };
}

/** The owner a token names, or undefined when it is not a token. */
export function parseOwner(token: string): SpoolOwner | undefined {
  const match = TOKEN.exec(token);
  if (!match) return undefined;
  return { token, namespace: match[1] as string, pid: Number(match[2]), start: Number(match[3]) };
}

/**
 * Whether the owner's process is still running. Of this pid namespace: its pid gone (ESRCH), or taken by a process
 * that started at another time, means it is dead; any other answer (EPERM: another user's live process) counts as
 * alive. Of another one: alive while its folder's heartbeat (`touchedMs`, undefined when the folder is gone) is recent.
 */
export function isOwnerAlive(
  owner: SpoolOwner,
  self: SpoolOwner,
  touchedMs: number | undefined,
  now = Date.now(),
): boolean {
  if (owner.namespace !== self.namespace) return touchedMs !== undefined && now - touchedMs < SPOOL_STALE_MS;
  // This pid: another spool of this very process (the same start: alive), or of a predecessor that had the pid.
  if (owner.pid === self.pid) return owner.start === self.start;
  try {
    process.kill(owner.pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return false;
  }
  const start = startOf(owner.pid);
  return start === undefined || owner.start === 0 || start === owner.start;
}

/** A process's start time in clock ticks since boot, from /proc (Linux); undefined where it cannot be read. */
function startOf(pid: number): number | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
  } catch {
    return undefined;
  }
  // `pid (comm) state ...`: comm may hold spaces and parentheses, so the fields are counted after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const start = Number(fields[19]);
  return Number.isSafeInteger(start) ? start : undefined;
}
