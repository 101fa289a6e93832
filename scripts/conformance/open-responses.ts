// The public Open Responses compliance suite (openresponses.org, Apache-2.0) run against the gateway's Responses API
// on every path: seven tests (a text answer, a stream, a system prompt, a tool call and its stream, an image, a
// conversation) that validate every object and event against the specification's schema. The suite is not part of
// this project: it is read where it is, $OPENRESPONSES_DIR or `../shared/openresponses` beside the project (CI's
// read-only shared folder), and run there with bun (install-suite.ts).
//
// Each path gets its own four mock upstreams (no task set: they play a model's part, model-part.ts) and its own
// gateway routed to one of them, so the five paths run side by side and each mock's requests are its path's alone.
// A path passes a test when the suite passed it and the upstream was called in the path's API only.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { capturedOutput, track } from './children.js';
import { GATEWAY_KEY, ROOT, startGateway, type Mocks, type RunningGateway, type UpstreamName } from './gateway.js';
import type { SuiteRuntime } from './install-suite.js';
import { startMockUpstream, type Api, type Recorded } from './mock-upstream.js';

export interface SuitePath {
  /** Short id: the table's and the run directory's name. */
  id: string;
  /** As the table shows it. */
  label: string;
  via: 'direct' | 'gateway';
  upstream: UpstreamName;
  /** The API the upstream must be called in. */
  api: Api;
}

export const SUITE_PATHS: readonly SuitePath[] = [
  {
    id: 'control',
    label: 'control: straight to the Responses mock (no gateway)',
    via: 'direct',
    upstream: 'responses',
    api: 'responses',
  },
  {
    id: 'native',
    label: '/v1/responses → OpenAI Responses, `kind: openai` (native)',
    via: 'gateway',
    upstream: 'responses',
    api: 'responses',
  },
  {
    id: 'chat',
    label: '/v1/responses → chat completions, `kind: openai-compatible` (translated)',
    via: 'gateway',
    upstream: 'chat',
    api: 'chat',
  },
  {
    id: 'anthropic',
    label: '/v1/responses → Anthropic, `kind: anthropic` (translated)',
    via: 'gateway',
    upstream: 'anthropic',
    api: 'messages',
  },
  {
    id: 'gemini',
    label: '/v1/responses → Gemini, `kind: gemini` (translated)',
    via: 'gateway',
    upstream: 'gemini',
    api: 'gemini',
  },
];

/** The suite's tests, in its order (the table's columns). */
export const SUITE_TESTS: readonly string[] = [
  'basic-response',
  'streaming-response',
  'system-prompt',
  'tool-calling',
  'tool-calling-streaming',
  'image-input',
  'multi-turn',
];

/** The model the suite asks for: every gateway sends any model to its path's upstream (default_upstream). */
const SUITE_MODEL = 'mock-model';
const SUITE_TIMEOUT_MS = 120_000;
const OUTPUT_LIMIT = 16 * 1024 * 1024;

export interface TestOutcome {
  id: string;
  passed: boolean;
  /** The suite's error lines (an event's schema errors one line per issue), and the harness's own. */
  errors: string[];
}

export interface SuiteRow {
  path: SuitePath;
  tests: TestOutcome[];
  seconds: number;
  /** What the upstream was called in, or why nothing ran. */
  note: string;
  /** Where the run's files are (the suite's JSON, the gateway's log, what the upstream received). */
  dir?: string;
}

/** Where the suite is: $OPENRESPONSES_DIR, else `../shared/openresponses` beside the project. */
export function suiteDir(env: NodeJS.ProcessEnv = process.env): string {
  const explicit = env.OPENRESPONSES_DIR;
  return explicit !== undefined && explicit !== '' ? explicit : join(ROOT, '..', 'shared', 'openresponses');
}

/** Why the suite cannot run from `dir` (undefined: it is there). */
export function suiteMissing(dir: string): string | undefined {
  if (existsSync(join(dir, 'bin', 'compliance-test.ts'))) return undefined;
  return `no Open Responses compliance suite at ${dir} (bin/compliance-test.ts): set OPENRESPONSES_DIR to its directory`;
}

/**
 * One line per problem: the suite reports a streamed event that fails the schema as `Event validation failed for
 * <type>: <the issues as JSON>`; each issue becomes `event <type>: <path>: <message>`.
 */
export function errorLines(errors: unknown): string[] {
  const lines: string[] = [];
  for (const error of Array.isArray(errors) ? errors : []) {
    const text = String(error);
    const event = /^Event validation failed for (\S+): (\[.*\])$/s.exec(text);
    let issues: unknown;
    try {
      issues = event === null ? undefined : JSON.parse(event[2] as string);
    } catch {
      issues = undefined;
    }
    if (event === null || !Array.isArray(issues)) {
      lines.push(text);
      continue;
    }
    for (const issue of issues as Array<{ path?: unknown[]; message?: string }>)
      lines.push(`event ${event[1] as string}: ${(issue.path ?? []).join('.')}: ${issue.message ?? 'invalid'}`);
  }
  return lines;
}

/** How often the upstream was called in each API: `responses ×7`. */
function callsSummary(calls: Recorded[]): string {
  const counts = new Map<string, number>();
  for (const call of calls) counts.set(call.api, (counts.get(call.api) ?? 0) + 1);
  return [...counts].map(([api, count]) => `${api} ×${count}`).join(', ');
}

/**
 * The row of one path: the suite's verdict on each test (its `--json` output), failed as a whole when the suite did
 * not answer, or when the path's upstream was called in another API (a native path translated) or another upstream
 * was called at all.
 */
export function suiteRowOf(
  path: SuitePath,
  run: { code: number | null; stdout: string; stderr: string },
  upstream: Recorded[],
  elsewhere: Recorded[],
): { tests: TestOutcome[]; note: string } {
  const calls = upstream.filter((request) => request.api !== 'other');
  const stray = [...calls.filter((call) => call.api !== path.api), ...elsewhere.filter((r) => r.api !== 'other')];
  const note = calls.length === 0 ? 'upstream got nothing' : `upstream got ${callsSummary(calls)}`;
  const pathProblem =
    stray.length === 0 ? undefined : `the path is not ${path.api}: upstreams got ${callsSummary(stray)}`;
  let reported: Array<{ id?: unknown; status?: unknown; errors?: unknown }> | undefined;
  try {
    const parsed = JSON.parse(run.stdout) as { results?: unknown };
    if (Array.isArray(parsed.results)) reported = parsed.results as typeof reported;
  } catch {
    reported = undefined;
  }
  if (reported === undefined) {
    const why = `the suite printed no results (exit ${String(run.code)}): ${(run.stderr || run.stdout).trim().slice(-300)}`;
    return { tests: SUITE_TESTS.map((id) => ({ id, passed: false, errors: [why] })), note };
  }
  const byId = new Map(reported.map((result) => [String(result.id), result]));
  const ids = [...SUITE_TESTS, ...[...byId.keys()].filter((id) => !SUITE_TESTS.includes(id))];
  const tests = ids.map((id): TestOutcome => {
    const result = byId.get(id);
    if (result === undefined) return { id, passed: false, errors: ['the suite did not report this test'] };
    const errors = errorLines(result.errors);
    if (pathProblem !== undefined) errors.push(pathProblem);
    const passed = result.status === 'passed' && pathProblem === undefined;
    if (!passed && errors.length === 0) errors.push(`status ${String(result.status)}`);
    return { id, passed, errors };
  });
  return { tests, note: `${note}${pathProblem === undefined ? '' : `; ${pathProblem}`}` };
}

/** Runs bun on the suite to its end (bounded), stdout and stderr apart. */
function runBun(
  runtime: SuiteRuntime,
  dir: string,
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(runtime.bun, ['--no-install', 'run', 'bin/compliance-test.ts', ...args], {
      cwd: dir,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    track(child);
    const output = capturedOutput(child, OUTPUT_LIMIT);
    const timer = setTimeout(() => child.kill('SIGKILL'), SUITE_TIMEOUT_MS);
    child.once('error', (error) => {
      output.stderr += `\n[spawn error] ${error.message}`;
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout: output.stdout, stderr: output.stderr });
    });
  });
}

async function startMocks(): Promise<Mocks> {
  return {
    anthropic: await startMockUpstream('anthropic'),
    responses: await startMockUpstream('responses'),
    chat: await startMockUpstream('chat'),
    gemini: await startMockUpstream('gemini'),
  };
}

/** One path: its mocks, its gateway, the suite against it; everything kept in `runsDir/open-responses-<id>/`. */
export async function runSuitePath(
  path: SuitePath,
  runtime: SuiteRuntime,
  suite: string,
  runsDir: string,
): Promise<SuiteRow> {
  const dir = join(runsDir, `open-responses-${path.id}`);
  mkdirSync(dir, { recursive: true });
  const started = Date.now();
  const mocks = await startMocks();
  let gateway: RunningGateway | undefined;
  try {
    gateway = path.via === 'gateway' ? await startGateway(dir, mocks, path.upstream) : undefined;
    const base = `${gateway?.url ?? mocks[path.upstream].origin}/v1`;
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: dir,
      NODE_PATH: runtime.nodePath,
      NO_COLOR: '1',
    };
    const args = ['--base-url', base, '--api-key', GATEWAY_KEY, '--model', SUITE_MODEL, '--json'];
    const run = await runBun(runtime, suite, args, env);
    writeFileSync(join(dir, 'suite.json'), run.stdout);
    writeFileSync(join(dir, 'suite.stderr'), run.stderr);
    const all = Object.values(mocks) as Mocks[UpstreamName][];
    writeFileSync(
      join(dir, 'upstream-requests.json'),
      JSON.stringify(
        all.map((mock) => ({ mock: mock.label, requests: mock.requests })),
        null,
        1,
      ),
    );
    const target = mocks[path.upstream];
    const elsewhere = all.filter((mock) => mock !== target).flatMap((mock) => mock.requests);
    const { tests, note } = suiteRowOf(path, run, target.requests, elsewhere);
    return { path, tests, seconds: (Date.now() - started) / 1000, note, dir };
  } catch (error) {
    const message = `harness: ${(error instanceof Error ? error.message : String(error)).split('\n')[0] ?? ''}`;
    const tests = SUITE_TESTS.map((id) => ({ id, passed: false, errors: [message] }));
    return { path, tests, seconds: (Date.now() - started) / 1000, note: message, dir };
  } finally {
    if (gateway !== undefined) {
      await gateway.stop();
      writeFileSync(join(dir, 'gateway.log'), `${gateway.stdout()}\n--- stderr ---\n${gateway.stderr()}`);
    }
    await Promise.all(Object.values(mocks).map((mock: Mocks[UpstreamName]) => mock.close()));
  }
}

/** Every path, side by side. */
export function runSuite(runtime: SuiteRuntime, suite: string, runsDir: string): Promise<SuiteRow[]> {
  return Promise.all(SUITE_PATHS.map((path) => runSuitePath(path, runtime, suite, runsDir)));
}

/** Every path failed for one reason (the suite's runtime could not be installed). */
export function failedRows(reason: string): SuiteRow[] {
  return SUITE_PATHS.map((path) => ({
    path,
    tests: SUITE_TESTS.map((id) => ({ id, passed: false, errors: [reason] })),
    seconds: 0,
    note: reason,
  }));
}
