// What the usage spool costs a call on the request path: encoding its record as a line, and its share of the one
// write(2) (no fsync) of the lines of its turn of the event loop, with 1, 8 or 32 answers per turn (a loaded gateway
// ends many calls per turn).
//   node --import tsx bench/usage-spool-append.ts [records]
// Prints CPU time (user + system: on a shared machine wall time says more about the neighbours) per record, the
// cost of the empty turns subtracted, and the kernel's share.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { UsageStore } from '../src/store/store-contract.js';
import { spoolLine, spoolScratch } from '../src/usage/spool-lines.js';
import { ownSpoolOwner } from '../src/usage/spool-owner.js';
import { UsageColumns } from '../src/usage/usage-columns.js';
import { UsageSpool } from '../src/usage/usage-spool.js';

const RECORDS = Number(process.argv[2] ?? 100_000);
const ROUNDS = 5;

const columns = new UsageColumns(1);
columns.push({
  timeMs: Date.now(),
  requestId: 'req_0123456789abcdef0123',
  caller: 'key:k_0123456789',
  environment: 'prod',
  route: 'chat',
  model: 'gpt-4o-mini',
  upstream: 'default',
  status: 200,
  code: undefined,
  latencyMs: 12.34,
  ttfbMs: undefined,
  stream: false,
  promptTokens: 31,
  completionTokens: 12,
  costUsd: 0.0000123,
  attempts: 1,
  replay: false,
  cacheHit: false,
  usageAnomaly: false,
  parts: { cacheRead: 0, cacheWrite: 0, reasoning: 0 },
  cacheSavingsUsd: undefined,
});
const noStore = { forgetSpool: () => Promise.resolve() } as unknown as UsageStore;
const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined };

const dir = mkdtempSync(join(tmpdir(), 'gw-spool-bench-'));
const median = (values: number[]) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;
/** CPU ns per record of `work`, run over RECORDS records (`work` returns when they are done). */
async function cpuPerRecord(work: () => Promise<void> | void): Promise<{ ns: number; kernel: number }> {
  const start = process.cpuUsage();
  await work();
  const used = process.cpuUsage(start);
  return { ns: ((used.user + used.system) * 1e3) / RECORDS, kernel: used.system / (used.user + used.system) };
}
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));
try {
  const scratch = spoolScratch();
  console.log(
    `a line is ${spoolLine(1, columns, 0, scratch).length} bytes; ${RECORDS} records per round, ${ROUNDS} rounds`,
  );
  const line = await cpuPerRecord(() => {
    for (let i = 0; i < RECORDS; i++) spoolLine(i + 1, columns, 0, scratch);
  });
  console.log(`the line alone: ${line.ns.toFixed(0)} ns`);
  // Answers per turn of the event loop: the records of one turn are written together (one write).
  for (const perTurn of [1, 8, 32]) {
    const rounds: Array<{ ns: number; kernel: number }> = [];
    for (let round = 0; round < ROUNDS; round++) {
      const empty = await cpuPerRecord(async () => {
        for (let i = 0; i < RECORDS; i += perTurn) await turn();
      });
      const spool = UsageSpool.open(join(dir, `t${perTurn}-${round}`), ownSpoolOwner(), noStore, quiet);
      const spooled = await cpuPerRecord(async () => {
        for (let i = 0; i < RECORDS; i += perTurn) {
          for (let k = 0; k < perTurn; k++) spool.append(columns, 0);
          await new Promise<void>((resolve) => spool.afterWrite(resolve));
        }
      });
      rounds.push({ ns: spooled.ns - empty.ns, kernel: spooled.kernel });
      await spool.close(); // leaves the folder (nothing was confirmed): removed below
    }
    console.log(
      `${perTurn} record(s) per turn: line + append ${median(rounds.map((r) => r.ns)).toFixed(0)} ns per record (CPU, median; the turns themselves subtracted), ${(100 * median(rounds.map((r) => r.kernel))).toFixed(0)} % in the kernel`,
    );
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
