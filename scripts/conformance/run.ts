// `npm run conformance`: real agent CLIs (pinned in pins.ts, installed into a cache outside the project's
// dependencies) run a one-tool task through the built gateway against mock upstreams on loopback, once per path;
// then the public Open Responses compliance suite runs against the gateway's Responses API on every path
// (open-responses.ts). The matrix and the suite's table are printed, and written to docs/compatibility.md only when
// asked (--update-docs). Exit code 0 only when every run and test that was due passed.
//
//   npm run conformance                          every pinned client, every path, and the suite; writes the matrix
//                                                and the table into an untracked copy of the doc,
//                                                test-artifacts/conformance/compatibility.md (the suite's results
//                                                with every error in test-artifacts/conformance/open-responses.json)
//   npm run conformance -- --update-docs         the same, and writes it into docs/compatibility.md (a full run of
//                                                the pinned versions on default settings only)
//   npm run conformance -- codex                 one client
//   npm run conformance -- claude-code@2.1.332   another release than the pinned one
//   npm run conformance -- open-responses        only the Open Responses compliance suite (with client names: also it)
//   npm run conformance -- --regressions-only    exit 1 only for a failing cell or suite test that the committed
//                                                matrix or table in docs/compatibility.md does not show failing
//                                                (what CI runs; there a suite that cannot be found fails too)
//   npm run conformance -- --no-write            print the matrix, write no file
//   npm run conformance -- --record [client]     run only the native paths (the control path of a client whose
//                                                native path is not served yet) and write what each client sent as
//                                                test/fixtures/clients/<client>-<version>/conformance-tool-loop.json
//   CONFORMANCE_TIMEOUT_S=90 (default)           the bound of one client run
//   CONFORMANCE_CACHE=dir                        where the CLIs are installed (default ~/.cache/llm-gateway-conformance)
//   CONFORMANCE_NETNS=off                        run on the machine's network instead of a loopback-only namespace
//   CONFORMANCE_EXTRA_ENV=NAME=value,...         add settings to every client's environment (docs not written)
//   CONFORMANCE_KEEP=1                           keep what every run produced, not only the failed ones'
//   OPENRESPONSES_DIR=dir                        where the suite is (default: ../shared/openresponses beside the
//                                                project); not found: said, and not run (a failure when CI=true)
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cleanUpOnExit } from './children.js';
import { GATEWAY_ENTRY, ROOT, type Mocks } from './gateway.js';
import { ensureInstalled, type InstalledClient } from './install.js';
import type { CellResult } from './judge.js';
import { committedResults, matrixMarkdown, verdict, writeMatrix, writeSection } from './matrix.js';
import { startMockUpstream } from './mock-upstream.js';
import { insideNetns, netnsAvailable, rerunInNetns } from './offline.js';
import {
  prepareSuite,
  runSuiteStep,
  suiteExitCode,
  SUITE_RUNTIME_TEXT,
  type SuitePrepared,
  type SuiteStep,
} from './open-responses-step.js';
import { SUITE_BEGIN, SUITE_END, suiteMarkdown } from './open-responses-table.js';
import { PATHS, type PathSpec } from './paths.js';
import { PINS, type ClientPin } from './pins.js';
import { extraEnv, runPath } from './run-path.js';

function log(line: string): void {
  process.stdout.write(`${line}\n`);
}

const FLAGS = new Set(['--no-write', '--update-docs', '--regressions-only', '--record']);
/** The name that selects the Open Responses compliance suite on the command line. */
const SUITE = 'open-responses';

/** What to run: all pins and the suite, or what is named (`client`, `client@version`, `open-responses`). */
function selection(args: string[]): { pins: ClientPin[]; full: boolean; suite: boolean } {
  const named = args.filter((arg) => !arg.startsWith('--'));
  const suite = named.length === 0 || named.includes(SUITE);
  const clients = args.filter((arg) => arg !== SUITE);
  const { pins, full } = selectedPins(clients);
  if (named.length > 0 && clients.every((arg) => arg.startsWith('--'))) return { pins: [], full: false, suite };
  return { pins, full: full && suite, suite };
}

/** The clients to run: all pins, or those named (`client` or `client@version`). */
function selectedPins(args: string[]): { pins: ClientPin[]; full: boolean } {
  const unknown = args.filter((arg) => arg.startsWith('--') && !FLAGS.has(arg));
  if (unknown.length > 0) throw new Error(`unknown option ${unknown.join(', ')}: one of ${[...FLAGS].join(', ')}`);
  const named = args.filter((arg) => !arg.startsWith('--'));
  if (named.length === 0) return { pins: [...PINS], full: true };
  const pins = named.map((arg) => {
    const [id, version] = arg.split('@');
    const pin = PINS.find((candidate) => candidate.id === id);
    if (pin === undefined)
      throw new Error(
        `unknown client ${JSON.stringify(id)}: one of ${[...PINS.map((candidate) => candidate.id), SUITE].join(', ')}`,
      );
    if (version === undefined || version === '') return pin;
    // An exact version: it names the cache directory (a tag such as `latest` would be reused forever) and the
    // install checks that `--version` prints it.
    if (!/^\d+\.\d+\.\d+[0-9A-Za-z.+-]{0,40}$/.test(version))
      throw new Error(`${arg}: not an exact version (like 2.1.332)`);
    return { ...pin, version };
  });
  return {
    pins,
    full:
      pins.length === PINS.length &&
      pins.every((pin) => PINS.some((candidate) => candidate.id === pin.id && candidate.version === pin.version)),
  };
}

function timeoutMs(): number {
  const raw = process.env.CONFORMANCE_TIMEOUT_S;
  const seconds = raw === undefined || raw === '' ? 90 : Number(raw);
  if (!Number.isFinite(seconds) || seconds < 5 || seconds > 3_600)
    throw new Error(`CONFORMANCE_TIMEOUT_S must be 5–3600, got ${JSON.stringify(raw)}`);
  return seconds * 1000;
}

type Installs = Map<ClientPin, InstalledClient | string>;

/** Installs every selected client that has a path to run (a string: why it could not be installed). */
async function installAll(pins: ClientPin[]): Promise<Installs> {
  const installs: Installs = new Map();
  for (const pin of pins) {
    if (!PATHS.some((path) => path.client === pin.id && path.notYet === undefined)) continue;
    try {
      installs.set(pin, await ensureInstalled(pin, log));
    } catch (error) {
      installs.set(pin, error instanceof Error ? error.message : String(error));
    }
  }
  return installs;
}

/**
 * A recording runs only the client's native path (what the client sends does not depend on the upstream); a client
 * whose native path the gateway cannot serve yet (one marked `notYet`, as Gemini CLI was before issue 32) is recorded
 * on its control path, straight to the mock, what it sends being the same.
 */
function pathsOf(pin: ClientPin, record: boolean): PathSpec[] {
  const mine = PATHS.filter((candidate) => candidate.client === pin.id);
  if (!record) return mine;
  const native = mine.filter((candidate) => candidate.id.startsWith('native-') && candidate.notYet === undefined);
  return native.length > 0 ? native : mine.filter((candidate) => candidate.via === 'direct');
}

async function runClientPaths(
  pin: ClientPin,
  installed: InstalledClient | string | undefined,
  mocks: Mocks,
  runsDir: string,
  bound: number,
  record: boolean,
): Promise<CellResult[]> {
  const results: CellResult[] = [];
  for (const path of pathsOf(pin, record)) {
    let result: CellResult;
    if (path.notYet !== undefined)
      result = { path, version: pin.version, outcome: 'not-yet', seconds: 0, note: path.notYet };
    else if (typeof installed !== 'object')
      result = {
        path,
        version: pin.version,
        outcome: 'fail',
        seconds: 0,
        note: `install failed: ${(installed ?? '').split('\n')[0] ?? ''}`,
      };
    else result = await runPath(path, installed, mocks, runsDir, bound, record);
    log(
      `${result.outcome.padEnd(7)} ${pin.id}@${pin.version} ${result.path.label} (${result.seconds.toFixed(1)} s) ${result.note}`,
    );
    results.push(result);
  }
  return results;
}

const DOCS = join(ROOT, 'docs', 'compatibility.md');
// Where a run that does not update the docs writes its matrix (test-artifacts/ is ignored by git).
const LATEST = join(ROOT, 'test-artifacts', 'conformance', 'compatibility.md');
// The suite's results with every error line (the table in the doc shows each path's distinct errors).
const SUITE_RESULTS = join(ROOT, 'test-artifacts', 'conformance', 'open-responses.json');

/** 1 when a run failed; with --regressions-only, only when one failed that the committed matrix shows no failure for. */
function exitCodeOf(results: CellResult[], regressionsOnly: boolean): number {
  if (!regressionsOnly) return results.some((result) => result.outcome === 'fail') ? 1 : 0;
  const { regressions, known, fixed } = verdict(results, committedResults(DOCS));
  for (const result of known)
    log(`known failure (the committed matrix shows it): ${result.path.client} ${result.path.label}`);
  for (const result of regressions) log(`REGRESSION: ${result.path.client} ${result.path.label}`);
  for (const result of fixed)
    log(
      `now passing: ${result.path.client} ${result.path.label} (run \`npm run conformance -- --update-docs\` and commit docs/compatibility.md)`,
    );
  return regressions.length > 0 ? 1 : 0;
}

/** Removes what the passing runs produced (~1 MB each), and the whole directory when nothing failed. */
function keepFailuresOnly(results: CellResult[], suite: SuiteStep | undefined, runsDir: string): void {
  if (process.env.CONFORMANCE_KEEP === '1') return;
  const suiteRuns = (suite?.rows ?? []).map((row) => ({
    outcome: row.tests.every((test) => test.passed) ? 'pass' : 'fail',
    dir: row.dir,
  }));
  const runs = [...results, ...suiteRuns];
  for (const run of runs)
    if (run.outcome === 'pass' && run.dir !== undefined) rmSync(run.dir, { recursive: true, force: true });
  if (!runs.some((run) => run.outcome === 'fail')) rmSync(runsDir, { recursive: true, force: true });
}

/** Writes the matrix (when clients ran) and the suite's table (when it ran) into `file`. */
function writeDoc(file: string, matrix: string | undefined, suiteTable: string | undefined): void {
  if (matrix !== undefined) writeMatrix(file, matrix);
  if (suiteTable !== undefined) writeSection(file, suiteTable, SUITE_BEGIN, SUITE_END);
}

/** When the whole run started (the install phase included, also when the runs happen in a re-started process). */
function startedAt(): number {
  const inherited = Number(process.env.CONFORMANCE_STARTED_AT);
  return Number.isFinite(inherited) && inherited > 0 ? inherited : Date.now();
}

async function main(): Promise<number> {
  cleanUpOnExit();
  const started = startedAt();
  const args = process.argv.slice(2);
  const { pins, full, suite } = selection(args);
  const record = args.includes('--record');
  const bound = timeoutMs();
  if (!existsSync(GATEWAY_ENTRY)) {
    log(`${GATEWAY_ENTRY} is missing: run \`npm run build\` first (\`npm run conformance\` does).`);
    return 2;
  }
  const installs = await installAll(pins);
  // A recording is the clients' traffic only.
  const prepared: SuitePrepared | undefined = suite && !record ? await prepareSuite(log) : undefined;
  if (!insideNetns() && netnsAvailable()) {
    process.env.CONFORMANCE_STARTED_AT = String(started);
    log('running the clients in a network namespace with loopback only (unshare -rn)');
    return rerunInNetns(fileURLToPath(import.meta.url), args);
  }
  const network = insideNetns()
    ? 'loopback only (own network namespace)'
    : "the machine's network (offline not enforced: no unshare)";
  const runsDir = mkdtempSync(join(tmpdir(), 'llm-gateway-conformance-'));
  log(`failed runs are kept in ${runsDir} (every run with CONFORMANCE_KEEP=1)`);
  const mocks: Mocks = {
    anthropic: await startMockUpstream('anthropic'),
    responses: await startMockUpstream('responses'),
    chat: await startMockUpstream('chat'),
    gemini: await startMockUpstream('gemini'),
  };
  const results: CellResult[] = [];
  try {
    for (const pin of pins)
      results.push(...(await runClientPaths(pin, installs.get(pin), mocks, runsDir, bound, record)));
  } finally {
    await Promise.all(Object.values(mocks).map((mock) => mock.close()));
  }
  // After the clients, not beside them: the suite's five gateways would slow the clients' bounded runs.
  const suiteStep = prepared === undefined ? undefined : await runSuiteStep(prepared, runsDir, log);
  keepFailuresOnly(results, suiteStep, runsDir);
  const totalSeconds = (Date.now() - started) / 1000;
  const meta = {
    date: new Date().toISOString().slice(0, 10),
    node: process.version,
    platform: `${process.platform}-${process.arch}`,
  };
  const markdown = pins.length === 0 ? undefined : matrixMarkdown(results, { ...meta, totalSeconds, network });
  const suiteTable =
    suiteStep?.rows === undefined
      ? undefined
      : suiteMarkdown(suiteStep.rows, { ...meta, totalSeconds: suiteStep.seconds, runtime: SUITE_RUNTIME_TEXT });
  for (const text of [markdown, suiteTable]) if (text !== undefined) log(`\n${text}\n`);
  const docsRun = full && !record && Object.keys(extraEnv()).length === 0;
  if (docsRun && args.includes('--update-docs')) {
    writeDoc(DOCS, markdown, suiteTable);
    log('written to docs/compatibility.md');
  } else if (!args.includes('--no-write') && (markdown !== undefined || suiteTable !== undefined)) {
    // The tracked doc changes only when asked: every other run writes its matrix into an untracked copy.
    mkdirSync(dirname(LATEST), { recursive: true });
    copyFileSync(DOCS, LATEST);
    writeDoc(LATEST, markdown, suiteTable);
    if (suiteStep?.rows !== undefined) writeFileSync(SUITE_RESULTS, `${JSON.stringify(suiteStep.rows, null, 1)}\n`);
    log(
      `written to ${relative(ROOT, LATEST)} (untracked); docs/compatibility.md changes only with --update-docs on a full run of the pinned versions on default settings`,
    );
  }
  const regressionsOnly = args.includes('--regressions-only');
  const clientsCode = exitCodeOf(results, regressionsOnly);
  const suiteCode = suiteStep === undefined ? 0 : suiteExitCode(suiteStep, regressionsOnly, DOCS, log);
  return Math.max(clientsCode, suiteCode);
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`conformance: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(2);
  },
);
