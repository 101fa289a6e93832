// CPU time of another process from /proc/<pid>/stat (Linux); undefined elsewhere.
import { readFileSync } from 'node:fs';

const TICKS_PER_SEC = 100; // USER_HZ; 100 on every mainstream Linux build

export interface CpuSample {
  cpuSec: number;
  wallNs: bigint;
}

export function sampleCpu(pid: number | undefined): CpuSample | undefined {
  if (pid === undefined) return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after "(comm)": state is field 3, utime 14, stime 15 (1-based, man proc).
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const utime = Number(rest[11]);
    const stime = Number(rest[12]);
    if (!Number.isFinite(utime) || !Number.isFinite(stime)) return undefined;
    return { cpuSec: (utime + stime) / TICKS_PER_SEC, wallNs: process.hrtime.bigint() };
  } catch {
    return undefined;
  }
}

/** Busy share of one core between two samples, in percent. */
export function cpuPercent(a: CpuSample | undefined, b: CpuSample | undefined): number | undefined {
  if (a === undefined || b === undefined) return undefined;
  const wallSec = Number(b.wallNs - a.wallNs) / 1e9;
  return wallSec > 0 ? ((b.cpuSec - a.cpuSec) / wallSec) * 100 : undefined;
}

/** Cumulative busy and total jiffies per core from /proc/stat (index = core number). */
export interface CoreSample {
  busy: number[];
  total: number[];
}

export function sampleCores(): CoreSample | undefined {
  try {
    const busy: number[] = [];
    const total: number[] = [];
    for (const line of readFileSync('/proc/stat', 'utf8').split('\n')) {
      const m = /^cpu(\d+)\s+(.*)$/.exec(line);
      if (m?.[1] === undefined || m[2] === undefined) continue;
      // user nice system idle iowait irq softirq steal ...
      const f = m[2].trim().split(/\s+/).map(Number);
      const sum = f.slice(0, 8).reduce((a, b) => a + b, 0);
      const idle = (f[3] ?? 0) + (f[4] ?? 0);
      busy[Number(m[1])] = sum - idle;
      total[Number(m[1])] = sum;
    }
    return busy.length > 0 ? { busy, total } : undefined;
  } catch {
    return undefined;
  }
}

/** Busy % per core between two samples (includes kernel, softirq and other processes). */
export function coreBusyPercent(a: CoreSample | undefined, b: CoreSample | undefined): number[] | undefined {
  if (a === undefined || b === undefined) return undefined;
  return b.total.map((t, i) => {
    const dt = t - (a.total[i] ?? 0);
    const db = (b.busy[i] ?? 0) - (a.busy[i] ?? 0);
    return dt > 0 ? (db / dt) * 100 : 0;
  });
}
