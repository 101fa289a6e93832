// The matrix as markdown, and its place in docs/compatibility.md: the text between the two markers is replaced,
// everything around it (the hand-written explanations) is kept.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import type { CellResult } from './judge.js';

export const BEGIN = '<!-- conformance-matrix:begin (written by `npm run conformance`; edits inside are replaced) -->';
export const END = '<!-- conformance-matrix:end -->';

const MARK = { pass: '✅ pass', fail: '❌ fail', 'not-yet': '⏳ not yet' } as const;

function cell(text: string): string {
  return text.replaceAll('|', '\\|').replaceAll('\n', ' ');
}

export function matrixMarkdown(
  results: CellResult[],
  meta: { date: string; totalSeconds: number; node: string; platform: string; network: string },
): string {
  const rows = results.map((result) => {
    const seconds = result.outcome === 'not-yet' ? '–' : result.seconds.toFixed(1);
    return `| ${result.path.client} | ${result.version} | ${cell(result.path.label)} | ${MARK[result.outcome]} | ${seconds} | ${cell(result.note)} |`;
  });
  const counted = results.filter((result) => result.outcome !== 'not-yet');
  const passed = counted.filter((result) => result.outcome === 'pass').length;
  return [
    `Last run: ${meta.date}, ${meta.platform}, Node ${meta.node}, network: ${meta.network}. ${passed} of ${counted.length} runs ` +
      `passed; the whole run took ${Math.round(meta.totalSeconds)} s (after \`npm run build\`; installing a client not yet in the cache counts).`,
    '',
    '| client | version | path | result | seconds | notes |',
    '| --- | --- | --- | --- | --- | --- |',
    ...rows,
  ].join('\n');
}

const SKELETON = `# Compatibility: real agent CLIs through the gateway

${BEGIN}
${END}
`;

/** Replaces the matrix's section of `file` (creating the file with just that section when it does not exist). */
export function writeMatrix(file: string, markdown: string): void {
  writeSection(file, markdown, BEGIN, END);
}

/** Replaces the text between two markers of `file`; a missing file is made from the matrix's skeleton. */
export function writeSection(file: string, markdown: string, beginMarker: string, endMarker: string): void {
  const text = existsSync(file) ? readFileSync(file, 'utf8') : SKELETON;
  const begin = text.indexOf(beginMarker);
  const end = text.indexOf(endMarker);
  if (begin === -1 || end === -1 || end < begin)
    throw new Error(`${file}: the markers ${beginMarker} ... ${endMarker} are missing or out of order`);
  writeFileSync(file, `${text.slice(0, begin + beginMarker.length)}\n${markdown}\n${text.slice(end)}`);
}

/** The text between two markers of `file` ('' when the file or a marker is missing). */
export function sectionOf(file: string, beginMarker: string, endMarker: string): string {
  if (!existsSync(file)) return '';
  const text = readFileSync(file, 'utf8');
  const begin = text.indexOf(beginMarker);
  const end = text.indexOf(endMarker);
  return begin === -1 || end < begin ? '' : text.slice(begin + beginMarker.length, end);
}

/** The committed matrix's result per `client|path label` (`pass`, `fail`, `not yet`), or an empty map without one. */
export function committedResults(file: string): Map<string, string> {
  const results = new Map<string, string>();
  if (!existsSync(file)) return results;
  const text = readFileSync(file, 'utf8');
  const section = text.slice(text.indexOf(BEGIN) + BEGIN.length, text.indexOf(END));
  for (const line of section.split('\n')) {
    const cells = line.split(/(?<!\\)\|/).map((part) => part.trim());
    // ['', client, version, path, result, seconds, notes, '']
    const [, client, , path, result] = cells;
    if (
      client === undefined ||
      path === undefined ||
      result === undefined ||
      client === 'client' ||
      client.startsWith('---')
    )
      continue;
    results.set(`${client}|${path.replaceAll('\\|', '|')}`, result.replace(/^\S+\s/, ''));
  }
  return results;
}

export function resultKey(result: CellResult): string {
  return `${result.path.client}|${result.path.label}`;
}

/**
 * The failures against the committed matrix: a regression is a failing cell it shows passing or does not list; a
 * known one is a failing cell it shows failing; fixed, a passing cell it shows failing. CI goes red on a regression
 * only, so a failure waiting for its fix does not hide every other result, and a fixed cell is named so that the
 * new matrix gets committed and guards it from then on.
 */
export function verdict(
  results: CellResult[],
  committed: Map<string, string>,
): { regressions: CellResult[]; known: CellResult[]; fixed: CellResult[] } {
  const failed = results.filter((result) => result.outcome === 'fail');
  return {
    regressions: failed.filter((result) => committed.get(resultKey(result)) !== 'fail'),
    known: failed.filter((result) => committed.get(resultKey(result)) === 'fail'),
    fixed: results.filter((result) => result.outcome === 'pass' && committed.get(resultKey(result)) === 'fail'),
  };
}
