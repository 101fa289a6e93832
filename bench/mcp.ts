// MCP benchmark (issue 45; docs/benchmarks.md "MCP tools/call"): what the gateway's `/mcp` adds to a `tools/call`,
// against calling the same MCP server directly, in one run. The server is @modelcontextprotocol/server-everything
// over Streamable HTTP (its `echo` tool); both sides call it with the MCP SDK's client, the gateway side as
// `everything__echo` on `/mcp` with the admin token (no per-caller limit). Run alone (npm run bench:mcp) or as a
// section of npm run bench (BENCH_MCP=0 leaves it out). Prints the section's markdown on stdout.
//   BENCH_MCP_CALLS=2000  BENCH_MCP_WARMUP=200   sequential calls measured per side, after warm-up calls per side
//   BENCH_MCP_CLIENTS=32  BENCH_MCP_SECONDS=5     the concurrent variant: clients per side, seconds per side
// Placement: the gateway on core 0; the MCP server and this process (the clients) on core 1 (taskset, when there).
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { LOAD_CORE, ROOT, SERVER_CORE } from './lib/config.js';
import { freePort, waitForHttp200 } from './lib/net.js';
import { isAlive, killAllSync, pinSelf, spawnPinned, stopChild } from './lib/proc.js';
import { summarize, type Percentiles } from './lib/stats.js';

const env = process.env;
const CALLS = Number(env.BENCH_MCP_CALLS ?? 2_000);
const WARMUP = Number(env.BENCH_MCP_WARMUP ?? 200);
const CLIENTS = Number(env.BENCH_MCP_CLIENTS ?? 32);
const SECONDS = Number(env.BENCH_MCP_SECONDS ?? 5);
/** Sequential calls alternate between the two sides in blocks of this many, so a drift of the machine hits both
 * (the warm-up is rounded up to whole blocks). */
const BLOCK = 50;
const ADMIN = 'bench-mcp-admin-token-0123456789abcdef';
const EVERYTHING = join(ROOT, 'node_modules', '@modelcontextprotocol', 'server-everything', 'dist', 'index.js');
const GATEWAY_ENTRY = join(ROOT, 'dist', 'main.js');

const log = (line: string) => process.stderr.write(`${line}\n`);

/** One side: where its client connects, with which header, and the tool's name there. */
interface Side {
  label: string;
  url: string;
  headers: Record<string, string>;
  tool: string;
}

async function connect(side: Side): Promise<Client> {
  const client = new Client({ name: 'bench-mcp', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(side.url), { requestInit: { headers: side.headers } }),
  );
  return client;
}

/** One call of the echo tool, checked (a wrong answer fails the run rather than counting as fast). */
async function echo(client: Client, side: Side, message: string): Promise<void> {
  const result = await client.callTool({ name: side.tool, arguments: { message } });
  const text = (result.content as Array<{ text?: string }>)[0]?.text;
  if (text !== `Echo: ${message}`) throw new Error(`${side.label}: answered ${JSON.stringify(result).slice(0, 200)}`);
}

/** Sequential latency of both sides, in alternating blocks; milliseconds per call. */
async function sequential(sides: [Side, Side]): Promise<[number[], number[]]> {
  const clients = await Promise.all(sides.map(connect));
  const samples: [number[], number[]] = [[], []];
  for (let done = -WARMUP; done < CALLS; done += BLOCK) {
    for (const i of [0, 1] as const) {
      const side = sides[i];
      const client = clients[i] as Client;
      for (let n = 0; n < BLOCK; n++) {
        const started = performance.now();
        await echo(client, side, `m-${done + n}`);
        if (done >= 0) samples[i].push(performance.now() - started);
      }
    }
  }
  await Promise.all(clients.map((client) => client.close()));
  return samples;
}

/** Calls per second with `CLIENTS` clients calling back to back for `SECONDS` (after one second of warm-up). */
async function concurrent(side: Side): Promise<number> {
  const clients = await Promise.all(Array.from({ length: CLIENTS }, () => connect(side)));
  let counting = false;
  let calls = 0;
  let stop = false;
  const loops = clients.map(async (client, c) => {
    for (let n = 0; !stop; n++) {
      await echo(client, side, `c${c}-${n}`);
      if (counting) calls++;
    }
  });
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  counting = true;
  const started = performance.now();
  await new Promise((resolve) => setTimeout(resolve, SECONDS * 1_000));
  counting = false;
  const elapsed = (performance.now() - started) / 1_000;
  stop = true;
  await Promise.all(loops);
  await Promise.all(clients.map((client) => client.close()));
  return calls / elapsed;
}

/** server-everything over Streamable HTTP on a free port (it listens on PORT), ready once it answers. */
async function startEverything(): Promise<{ child: ChildProcess; url: string }> {
  const port = await freePort();
  const child = spawnPinned({
    core: LOAD_CORE,
    cmd: process.execPath,
    args: [EVERYTHING, 'streamableHttp'],
    env: { PATH: env.PATH ?? '/usr/bin:/bin', PORT: String(port) },
    stdio: ['ignore', 'ignore', 'ignore'],
  });
  const url = `http://127.0.0.1:${port}/mcp`;
  const deadline = Date.now() + 15_000;
  for (;;) {
    if (!isAlive(child)) throw new Error('server-everything exited before it listened');
    try {
      await connect({ label: 'probe', url, headers: {}, tool: 'echo' }).then((client) => client.close());
      return { child, url };
    } catch (error) {
      if (Date.now() > deadline) throw new Error(`server-everything not ready: ${String(error)}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

async function startGateway(mcpUrl: string, dir: string): Promise<{ child: ChildProcess; origin: string }> {
  const port = await freePort();
  const config = join(dir, 'gateway.yaml');
  writeFileSync(config, `mcp_servers:\n  - name: everything\n    url: ${mcpUrl}\n`);
  const child = spawnPinned({
    core: SERVER_CORE,
    cmd: process.execPath,
    args: [GATEWAY_ENTRY],
    cwd: ROOT,
    env: {
      PATH: env.PATH ?? '/usr/bin:/bin',
      HOST: '127.0.0.1',
      PORT: String(port),
      GATEWAY_ENV: 'prod',
      ADMIN_TOKEN: ADMIN,
      DATA_DIR: join(dir, 'data'),
      GATEWAY_CONFIG: config,
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const origin = `http://127.0.0.1:${port}`;
  const ready = await waitForHttp200(`${origin}/v1/?route=health`, 20_000, () => isAlive(child));
  if (!ready.ok) throw new Error(`gateway not ready: ${ready.reason}`);
  return { child, origin };
}

const ms = (x: number) => x.toFixed(3);
const us = (x: number) => `${x >= 0 ? '+' : ''}${Math.round(x * 1_000)}`;

function markdown(direct: Percentiles, gateway: Percentiles, rates: [number, number], pinned: boolean): string {
  const row = (label: string, p: Percentiles) => `| ${label} | ${p.n} | ${ms(p.p50)} | ${ms(p.p90)} | ${ms(p.p99)} |`;
  return [
    `Sequential: one client, ${CALLS} calls per side after ${WARMUP} warm-up calls, the sides alternating in blocks of ${BLOCK}.`,
    '',
    '| tools/call (echo) | calls | p50 ms | p90 ms | p99 ms |',
    '| --- | --- | --- | --- | --- |',
    row('direct to server-everything', direct),
    row('through the gateway /mcp', gateway),
    `| added by the gateway (µs) | | ${us(gateway.p50 - direct.p50)} | ${us(gateway.p90 - direct.p90)} | ${us(gateway.p99 - direct.p99)} |`,
    '',
    `Concurrent: ${CLIENTS} clients calling back to back for ${SECONDS} s per side (after 1 s): direct ${Math.round(rates[0])} calls/s, through the gateway ${Math.round(rates[1])} calls/s (${((rates[1] / rates[0]) * 100).toFixed(0)} %).`,
    '',
    pinned
      ? `Placement: the gateway on core ${SERVER_CORE}; server-everything and the clients on core ${LOAD_CORE}.`
      : 'Placement: not pinned (no taskset).',
  ].join('\n');
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'llm-gateway-bench-mcp-'));
  const pinned = pinSelf(LOAD_CORE);
  const children: ChildProcess[] = [];
  try {
    const everything = await startEverything();
    children.push(everything.child);
    const gateway = await startGateway(everything.url, dir);
    children.push(gateway.child);
    const direct: Side = { label: 'direct', url: everything.url, headers: {}, tool: 'echo' };
    const through: Side = {
      label: 'gateway',
      url: `${gateway.origin}/mcp`,
      headers: { authorization: `Bearer ${ADMIN}` },
      tool: 'everything__echo',
    };
    log(`mcp: ${CALLS} sequential calls per side after ${WARMUP} warm-up…`);
    const [directMs, gatewayMs] = await sequential([direct, through]);
    log(`mcp: ${CLIENTS} concurrent clients, ${SECONDS} s per side…`);
    const rates: [number, number] = [await concurrent(direct), await concurrent(through)];
    process.stdout.write(`${markdown(summarize(directMs), summarize(gatewayMs), rates, pinned)}\n`);
  } finally {
    for (const child of children.reverse()) await stopChild(child);
    rmSync(dir, { recursive: true, force: true });
  }
}

process.on('exit', killAllSync);
main().catch((error: unknown) => {
  log(`bench mcp: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  killAllSync();
  process.exit(1);
});
