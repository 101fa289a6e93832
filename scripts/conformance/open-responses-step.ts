// The Open Responses compliance suite as a step of `npm run conformance` (run.ts): its runtime installed with the
// CLIs (before the runs go offline), the five paths run, each path's result and errors printed, and its verdict:
// without --regressions-only any failing test fails the run; with it, only a test the committed table in
// docs/compatibility.md shows passing (or does not list). A suite that is not there is said so, and fails the run
// only in CI (CI=true), where it must run.
import { ensureSuiteRuntime, type SuiteRuntime } from './install-suite.js';
import { failedRows, runSuite, suiteDir, suiteMissing, type SuiteRow } from './open-responses.js';
import { committedSuiteResults, groupedErrors, suiteSummary, suiteVerdict } from './open-responses-table.js';
import { SUITE_RUNTIME } from './pins.js';

export type SuitePrepared = { runtime: SuiteRuntime; dir: string } | { notRun: string } | { installFailed: string };

export interface SuiteStep {
  rows?: SuiteRow[];
  /** Why the suite did not run at all. */
  notRun?: string;
  seconds: number;
}

export const SUITE_RUNTIME_TEXT = `bun ${SUITE_RUNTIME.bun}, zod ${SUITE_RUNTIME.zod}`;
const PREFIX = 'Open Responses compliance suite';

/** Finds the suite and installs its runtime (in the install phase: npm needs the network). */
export async function prepareSuite(log: (line: string) => void): Promise<SuitePrepared> {
  const dir = suiteDir();
  const missing = suiteMissing(dir);
  if (missing !== undefined) return { notRun: missing };
  try {
    return { runtime: await ensureSuiteRuntime(log), dir };
  } catch (error) {
    return { installFailed: error instanceof Error ? error.message : String(error) };
  }
}

function logRow(row: SuiteRow, log: (line: string) => void): void {
  const passed = row.tests.filter((test) => test.passed).length;
  const outcome = passed === row.tests.length ? 'pass' : 'fail';
  log(
    `${outcome.padEnd(7)} open-responses ${row.path.label} (${row.seconds.toFixed(1)} s) ${passed}/${row.tests.length}; ${row.note}`,
  );
  if (outcome === 'pass') return;
  for (const { error, tests } of groupedErrors(row)) log(`          ✗ ${error}  [${tests}]`);
}

export async function runSuiteStep(
  prepared: SuitePrepared,
  runsDir: string,
  log: (line: string) => void,
): Promise<SuiteStep> {
  const started = Date.now();
  if ('notRun' in prepared) {
    log(`${PREFIX}: not run: ${prepared.notRun}`);
    return { notRun: prepared.notRun, seconds: 0 };
  }
  const rows =
    'installFailed' in prepared
      ? failedRows(`install failed: ${prepared.installFailed.split('\n')[0] ?? ''}`)
      : await runSuite(prepared.runtime, prepared.dir, runsDir);
  const seconds = (Date.now() - started) / 1000;
  for (const row of rows) logRow(row, log);
  const tests = rows.flatMap((row) => row.tests);
  log(
    `${PREFIX}: ${suiteSummary(rows)} (${tests.filter((test) => test.passed).length} of ${tests.length} tests passed, ${seconds.toFixed(1)} s)`,
  );
  return { rows, seconds };
}

/** 1 when the step fails the run (see the header), with the verdict's lines. */
export function suiteExitCode(
  step: SuiteStep,
  regressionsOnly: boolean,
  docs: string,
  log: (line: string) => void,
  ci = process.env.CI === 'true',
): number {
  if (step.rows === undefined) {
    if (!ci) return 0;
    log(`${PREFIX}: FAILED: CI must run it (CI=true): ${step.notRun ?? 'not run'}`);
    return 1;
  }
  if (!regressionsOnly) return step.rows.some((row) => row.tests.some((test) => !test.passed)) ? 1 : 0;
  const { regressions, known, fixed } = suiteVerdict(step.rows, committedSuiteResults(docs));
  for (const { row, tests } of known)
    log(
      `known failure (the committed table shows it): open-responses ${row.path.label}: ${tests.join(', ')} (${tests.length} of ${row.tests.length})`,
    );
  for (const { row, test, error } of regressions) log(`REGRESSION: open-responses ${row.path.label} ${test}: ${error}`);
  for (const { row, tests } of fixed)
    log(
      `now passing: open-responses ${row.path.label}: ${tests.join(', ')} (run \`npm run conformance -- --update-docs\` and commit docs/compatibility.md)`,
    );
  return regressions.length > 0 ? 1 : 0;
}
