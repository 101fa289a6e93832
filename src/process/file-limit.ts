import { readFileSync } from 'node:fs';

/**
 * Descriptors a process needs besides its streams: the listening sockets, the SQLite files and their WAL, the log
 * file, store connections (Redis, PostgreSQL), DNS, webhook deliveries, health probes.
 */
export const RESERVED_DESCRIPTORS = 256;
/**
 * With no bound configured an upstream takes as many calls as the machine holds; below this many streams per
 * process the descriptor limit, not the config, is what bounds them, and the operator is told.
 */
export const UNBOUNDED_STREAMS_WANTED = 4_096;

export interface OpenFileLimit {
  soft: number;
  /** Infinity for `unlimited`. */
  hard: number;
}

/**
 * This process's RLIMIT_NOFILE from /proc/self/limits (Linux); undefined elsewhere or when unreadable. Node itself
 * raises the soft limit to the hard one when it starts (src/node.cc, PlatformInit: seen here, a shell with
 * `ulimit -Sn 1024` and a hard limit of 20,000 starts node with 20,000), so this reads what the process has.
 */
export function readOpenFileLimit(limitsText?: string): OpenFileLimit | undefined {
  let text = limitsText;
  if (text === undefined) {
    try {
      text = readFileSync('/proc/self/limits', 'utf8');
    } catch {
      return undefined;
    }
  }
  const match = /^Max open files\s+(\d+|unlimited)\s+(\d+|unlimited)/m.exec(text);
  if (!match) return undefined;
  const value = (field: string | undefined) => (field === 'unlimited' ? Infinity : Number(field));
  return { soft: value(match[1]), hard: value(match[2]) };
}

/** Concurrent streams one process can hold with `soft` descriptors: two per stream (caller's socket, upstream's). */
export function streamsAllowed(soft: number): number {
  return Math.max(0, Math.floor((soft - RESERVED_DESCRIPTORS) / 2));
}

export interface FileLimitVerdict {
  limit: OpenFileLimit;
  /** Concurrent streams per process the limit allows. */
  streams: number;
  /** Streams per process the config asks for: the sum of the upstreams' bounds, or Infinity when one has none. */
  wanted: number;
  /** A warning for the operator when the limit allows fewer streams than wanted; undefined when it does not. */
  warning: string | undefined;
}

/** What the descriptor limit means for the configured upstreams' bounds (undefined: no bound). */
export function judgeFileLimit(limit: OpenFileLimit, bounds: ReadonlyArray<number | undefined>): FileLimitVerdict {
  const streams = streamsAllowed(limit.soft);
  const wanted = bounds.some((b) => b === undefined) ? Infinity : bounds.reduce<number>((sum, b) => sum + (b ?? 0), 0);
  const short = Number.isFinite(wanted) ? streams < wanted : streams < UNBOUNDED_STREAMS_WANTED;
  let warning: string | undefined;
  if (short) {
    const asked = Number.isFinite(wanted)
      ? `the upstreams' bounds add up to ${wanted}`
      : 'an upstream has no bound (max_concurrent)';
    const raise =
      limit.hard > limit.soft
        ? ''
        : ` The hard limit is ${String(limit.hard)} too: raise it (LimitNOFILE= in a systemd unit, nofile in /etc/security/limits.conf, --ulimit nofile= for docker).`;
    warning =
      `The open-file limit (${limit.soft}) allows about ${streams} concurrent streams per process (two descriptors each, ${RESERVED_DESCRIPTORS} reserved) but ${asked}: ` +
      `past it new calls fail with EMFILE.${raise} Sizing: docs/capacity.md.`;
  }
  return { limit, streams, wanted, warning };
}
