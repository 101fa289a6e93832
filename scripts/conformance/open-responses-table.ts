// The Open Responses compliance suite's table in docs/compatibility.md (its own marked section, next to the CLI
// matrix), the error lines of its failing tests grouped per path, and the committed table read back for
// --regressions-only: a test failing now that the committed table shows passing (or does not list) is a regression.
import { sectionOf } from './matrix.js';
import { SUITE_TESTS, type SuiteRow } from './open-responses.js';

export const SUITE_BEGIN =
  '<!-- open-responses-compliance:begin (written by `npm run conformance`; edits inside are replaced) -->';
export const SUITE_END = '<!-- open-responses-compliance:end -->';

const PASS = '✅ pass';
const FAIL = '❌ fail';
/** The distinct errors listed per path, and the length of one. */
const ERRORS_PER_PATH = 25;
const ERROR_CHARS = 240;

function cell(text: string): string {
  return text.replaceAll('|', '\\|').replaceAll('\n', ' ');
}

function passedOf(row: SuiteRow): number {
  return row.tests.filter((test) => test.passed).length;
}

/** Each distinct error of a path's failing tests with the tests it came from (`all 7` when every test had it). */
export function groupedErrors(row: SuiteRow): Array<{ error: string; tests: string }> {
  const byError = new Map<string, string[]>();
  for (const test of row.tests)
    for (const error of new Set(test.errors)) {
      const key = error.length > ERROR_CHARS ? `${error.slice(0, ERROR_CHARS)}…` : error;
      byError.set(key, [...(byError.get(key) ?? []), test.id]);
    }
  return [...byError].map(([error, tests]) => ({
    error,
    tests: tests.length === row.tests.length ? `all ${tests.length}` : tests.join(', '),
  }));
}

/** `control 7/7, native 7/7, chat 0/7, ...`: the line CI's summary shows. */
export function suiteSummary(rows: SuiteRow[]): string {
  return rows.map((row) => `${row.path.id} ${passedOf(row)}/${row.tests.length}`).join(', ');
}

function columnsOf(rows: SuiteRow[]): string[] {
  const extra = rows.flatMap((row) => row.tests.map((test) => test.id)).filter((id) => !SUITE_TESTS.includes(id));
  return [...SUITE_TESTS, ...new Set(extra)];
}

export function suiteMarkdown(
  rows: SuiteRow[],
  meta: { date: string; totalSeconds: number; node: string; platform: string; runtime: string },
): string {
  const columns = columnsOf(rows);
  const tests = rows.flatMap((row) => row.tests);
  const passed = tests.filter((test) => test.passed).length;
  const lines = [
    `Last run: ${meta.date}, ${meta.platform}, Node ${meta.node}, ${meta.runtime}. ${passed} of ${tests.length} tests ` +
      `passed; the ${rows.length} paths ran side by side in ${Math.round(meta.totalSeconds)} s.`,
    '',
    `| path | ${columns.join(' | ')} | total | notes |`,
    `| --- | ${columns.map(() => '---').join(' | ')} | --- | --- |`,
  ];
  for (const row of rows) {
    const marks = columns.map((id) => {
      const test = row.tests.find((candidate) => candidate.id === id);
      return test === undefined ? '–' : test.passed ? PASS : FAIL;
    });
    lines.push(
      `| ${cell(row.path.label)} | ${marks.join(' | ')} | ${passedOf(row)}/${row.tests.length} | ${cell(row.note)} |`,
    );
  }
  const failing = rows.filter((row) => passedOf(row) < row.tests.length);
  if (failing.length > 0) {
    lines.push('', "The failing tests' errors, as the suite printed them (each with the tests that had it):", '');
    for (const row of failing) {
      const grouped = groupedErrors(row);
      const shown = grouped
        .slice(0, ERRORS_PER_PATH)
        .map(({ error, tests: which }) => `\`${error.replaceAll('`', "'")}\` (${which})`);
      const more = grouped.length > ERRORS_PER_PATH ? `; and ${grouped.length - ERRORS_PER_PATH} more` : '';
      lines.push(`- **${row.path.id}**: ${shown.join('; ')}${more}`);
    }
  }
  return lines.join('\n');
}

/** The committed table's result per `path label|test id` (`pass` or `fail`); empty without a table. */
export function committedSuiteResults(file: string): Map<string, string> {
  const results = new Map<string, string>();
  let columns: string[] | undefined;
  for (const line of sectionOf(file, SUITE_BEGIN, SUITE_END).split('\n')) {
    if (!line.startsWith('|')) continue;
    const cells = line
      .split(/(?<!\\)\|/)
      .slice(1, -1)
      .map((part) => part.trim());
    if (cells[0] === 'path') {
      columns = cells;
      continue;
    }
    if (columns === undefined || (cells[0] ?? '').startsWith('---')) continue;
    const label = (cells[0] ?? '').replaceAll('\\|', '|');
    cells.forEach((value, index) => {
      const id = columns?.[index];
      if (index === 0 || id === undefined || !(value === PASS || value === FAIL)) return;
      results.set(`${label}|${id}`, value === PASS ? 'pass' : 'fail');
    });
  }
  return results;
}

export interface SuiteVerdict {
  /** A failing test the committed table shows passing or does not list: CI goes red. */
  regressions: Array<{ row: SuiteRow; test: string; error: string }>;
  /** Per path, the failing tests the committed table shows failing. */
  known: Array<{ row: SuiteRow; tests: string[] }>;
  /** Per path, the passing tests the committed table shows failing: commit the new table. */
  fixed: Array<{ row: SuiteRow; tests: string[] }>;
}

export function suiteVerdict(rows: SuiteRow[], committed: Map<string, string>): SuiteVerdict {
  const verdict: SuiteVerdict = { regressions: [], known: [], fixed: [] };
  for (const row of rows) {
    const shown = (test: string): string | undefined => committed.get(`${row.path.label}|${test}`);
    const known = row.tests.filter((test) => !test.passed && shown(test.id) === 'fail').map((test) => test.id);
    const fixed = row.tests.filter((test) => test.passed && shown(test.id) === 'fail').map((test) => test.id);
    for (const test of row.tests)
      if (!test.passed && shown(test.id) !== 'fail')
        verdict.regressions.push({ row, test: test.id, error: test.errors.slice(0, 3).join('; ') });
    if (known.length > 0) verdict.known.push({ row, tests: known });
    if (fixed.length > 0) verdict.fixed.push({ row, tests: fixed });
  }
  return verdict;
}
