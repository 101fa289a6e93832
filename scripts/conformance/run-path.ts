// One cell of the matrix: a fresh directory (the client's HOME, its working directory with the task's file), a
// fresh gateway routed to the path's upstream, the client run to its end (bounded), then judged. Everything the run
// produced (client output, gateway log, the requests each mock received) is kept in the run's directory.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { capturedOutput, killNow, track } from './children.js';
import { prepareClient, type ClientOutput, type ClientRun } from './clients.js';
import { GATEWAY_KEY, startGateway, type Mocks, type RunningGateway } from './gateway.js';
import type { InstalledClient } from './install.js';
import { judge, type CellResult } from './judge.js';
import type { MockUpstream } from './mock-upstream.js';
import { prepareMcpClient } from './mcp-clients.js';
import { mcpCredential, type McpCredential } from './mcp-credential.js';
import { mcpExpected } from './mcp-task.js';
import type { PathSpec } from './paths.js';
import { writeFixture } from './record.js';
import { startTap, type Tap } from './tap.js';
import { TASK_FILE, type Task } from './task.js';

const OUTPUT_LIMIT = 4 * 1024 * 1024;

/**
 * CONFORMANCE_EXTRA_ENV=`NAME=value,NAME=value`: added to every client's environment, to see whether a setting
 * changes a cell (e.g. CLAUDE_CODE_DISABLE_EXPERIMENTAL_BETAS=1). Such a run is not the default settings: run.ts
 * then leaves docs/compatibility.md alone.
 */
export function extraEnv(): Record<string, string> {
  const raw = process.env.CONFORMANCE_EXTRA_ENV ?? '';
  const env: Record<string, string> = {};
  for (const pair of raw.split(',').filter((item) => item.trim() !== '')) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new Error(`CONFORMANCE_EXTRA_ENV: ${JSON.stringify(pair)} is not NAME=value`);
    env[pair.slice(0, eq).trim()] = pair.slice(eq + 1);
  }
  return env;
}

/** Runs the client to its end or kills it (and its process group) after `timeoutMs`. */
function runClient(
  command: string[],
  cwd: string,
  env: Record<string, string>,
  timeoutMs: number,
): Promise<{ output: ClientOutput; timedOut: boolean }> {
  return new Promise((resolve) => {
    const [program, ...args] = command;
    const child = spawn(program as string, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    const output = capturedOutput(child, OUTPUT_LIMIT);
    track(child, { group: true });
    let timedOut = false;
    const killGroup = (): void => killNow(child, { group: true });
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup();
    }, timeoutMs);
    child.once('error', (error) => {
      output.stderr += `\n[spawn error] ${error.message}`;
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      // Whatever the client left running in its group (a tool's shell) goes with it.
      killGroup();
      resolve({ output: { code, stdout: output.stdout, stderr: output.stderr }, timedOut });
    });
  });
}

/**
 * Runs the client's setup commands (`claude mcp add ...`) one after the other; undefined when each exited 0, else
 * what the failing one printed.
 */
async function runSetup(
  command: string[],
  prepared: ClientRun,
  cwd: string,
  timeoutMs: number,
): Promise<string | undefined> {
  for (const args of prepared.setup ?? []) {
    const { output, timedOut } = await runClient([...command, ...args], cwd, prepared.env, timeoutMs);
    if (timedOut || output.code !== 0)
      return `setup \`${args.slice(0, 3).join(' ')} ...\` ${timedOut ? 'timed out' : `exited ${String(output.code)}`}: ${`${output.stderr} ${output.stdout}`.trim().slice(0, 300)}`;
  }
  return undefined;
}

function since(mock: MockUpstream, from: number): MockUpstream['requests'] {
  return mock.requests.slice(from);
}

/** `record`: a passing run's traffic is written as a fixture (record.ts). */
export async function runPath(
  path: PathSpec,
  client: InstalledClient,
  mocks: Mocks,
  runsDir: string,
  timeoutMs: number,
  record = false,
): Promise<CellResult> {
  const version = client.pin.version;
  const dir = join(runsDir, `${path.client}-${path.id}`);
  const workDir = join(dir, 'work');
  mkdirSync(workDir, { recursive: true });
  const task: Task = {
    workDir,
    token: `conformance-ok-${randomBytes(8).toString('hex')}`,
    ...(path.mcp === 'agent' ? { mcp: true } : {}),
  };
  writeFileSync(join(workDir, TASK_FILE), `${task.token}\n`);
  const all = Object.values(mocks) as MockUpstream[];
  for (const mock of all) mock.setTask(task);
  const marks = new Map(all.map((mock) => [mock, mock.requests.length]));
  const started = Date.now();
  let gateway: RunningGateway | undefined;
  let tap: Tap | undefined;
  try {
    gateway =
      path.via === 'gateway' ? await startGateway(dir, mocks, path.upstream, path.mcp !== undefined) : undefined;
    // Probed on the gateway itself, not through the tap: the tap's exchanges are the client's.
    const credential: McpCredential | undefined =
      path.mcp !== undefined && gateway !== undefined
        ? await mcpCredential(gateway.url, gateway.mcpKey, GATEWAY_KEY)
        : undefined;
    // The control path has a tap only when recording (its exchanges are then the client's with the mock).
    tap = gateway
      ? await startTap(gateway.url, { record })
      : record
        ? await startTap(mocks[path.upstream].origin, { record })
        : undefined;
    const origin = tap?.origin ?? mocks[path.upstream].origin;
    const home = join(dir, 'home');
    const model = { origin, key: GATEWAY_KEY };
    const prepared =
      credential === undefined
        ? prepareClient(path.client, home, model)
        : prepareMcpClient(path, home, model, { url: `${origin}/mcp`, key: credential.key }, task.token);
    const setupProblem = await runSetup(client.command, prepared, workDir, timeoutMs);
    if (setupProblem !== undefined) throw new Error(setupProblem);
    const { output, timedOut } = await runClient(
      [...client.command, ...prepared.args],
      workDir,
      { ...prepared.env, ...extraEnv() },
      timeoutMs,
    );
    const seconds = (Date.now() - started) / 1000;
    const target = mocks[path.upstream];
    const evidence = {
      output,
      timedOutAfterS: timedOut ? timeoutMs / 1000 : undefined,
      expected: path.mcp === undefined ? task.token : mcpExpected(task.token),
      ...(credential === undefined ? {} : { credential: credential.note }),
      upstream: since(target, marks.get(target) ?? 0),
      elsewhere: all
        .filter((mock) => mock !== target)
        .flatMap((mock) => since(mock, marks.get(mock) ?? 0))
        .filter((request) => request.api !== 'other'),
      exchanges: gateway ? (tap?.exchanges ?? []) : [],
    };
    writeFileSync(join(dir, 'client.stdout'), output.stdout);
    writeFileSync(join(dir, 'client.stderr'), output.stderr);
    writeFileSync(
      join(dir, 'upstream-requests.json'),
      JSON.stringify(
        all.map((mock) => ({ mock: mock.label, requests: since(mock, marks.get(mock) ?? 0) })),
        null,
        1,
      ),
    );
    const { outcome, note } = judge(path, evidence);
    const recorded =
      record && outcome === 'pass' && tap !== undefined
        ? `; recorded ${writeFixture(client.pin, path, tap.sent, evidence.upstream)}`
        : '';
    return { path, version, outcome, seconds, note: `${note}${recorded}`, dir };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return {
      path,
      version,
      outcome: 'fail',
      seconds: (Date.now() - started) / 1000,
      note: `harness: ${message.split('\n')[0] ?? ''}`,
      dir,
    };
  } finally {
    for (const mock of all) mock.setTask(undefined);
    await tap?.close();
    if (tap !== undefined) writeFileSync(join(dir, 'exchanges.json'), JSON.stringify(tap.exchanges, null, 1));
    if (gateway !== undefined) {
      await gateway.stop();
      writeFileSync(join(dir, 'gateway.log'), `${gateway.stdout()}\n--- stderr ---\n${gateway.stderr()}`);
    }
  }
}
