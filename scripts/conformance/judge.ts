// Judging one run: it passes when the client exited 0, its final answer holds the task's token (so the tool ran
// and its output came back through the model's answer) and the upstream received that tool output on a later
// turn. Whatever else happened is named in one line: the gateway's refusals (the error bodies the relay saw), what
// the client said, the fields the gateway dropped, and which API the upstream was actually called in.
import { clientError, finalText, shortenError, type ClientOutput } from './clients.js';
import type { Recorded } from './mock-upstream.js';
import type { PathSpec } from './paths.js';
import type { Exchange } from './tap.js';
import { MCP_TOOL, mcpExpected } from './mcp-task.js';

export type Outcome = 'pass' | 'fail' | 'not-yet';

export interface CellResult {
  path: PathSpec;
  version: string;
  outcome: Outcome;
  seconds: number;
  /** One line: why it failed, or what is worth knowing about a pass (dropped fields, a retried refusal). */
  note: string;
  /** Where the run kept what it produced (none for a cell that did not run). */
  dir?: string;
}

export interface RunEvidence {
  output: ClientOutput;
  timedOutAfterS: number | undefined;
  /** The text only the tool's real run can produce: the task file's token, or the MCP server's `Echo: <token>`. */
  expected: string;
  /** On an MCP path: which credential the client sent to /mcp (mcp-credential.ts). */
  credential?: string;
  /** Requests the path's upstream received during the run. */
  upstream: Recorded[];
  /** API calls any other mock received during the run (a path that went somewhere else; health checks are not counted). */
  elsewhere: Recorded[];
  /** The client's exchanges with the gateway (none on the control path). */
  exchanges: Exchange[];
}

function oneLine(text: string, max = 400): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** `responses ×2` / `chat ×1`: the APIs the upstream was called in (readiness and health checks left out). */
function apisSeen(requests: Recorded[]): string {
  const counts = new Map<string, number>();
  for (const request of requests)
    if (request.api !== 'other') counts.set(request.api, (counts.get(request.api) ?? 0) + 1);
  return [...counts].map(([api, count]) => `${api} ×${count}`).join(', ') || 'nothing';
}

/** `gateway 400 capability_not_supported: client_metadata ...` for the first refusal, and how many there were. */
function refusalsOf(exchanges: Exchange[]): string {
  const refused = exchanges.filter((exchange) => exchange.status >= 400 || exchange.status === 0);
  const first = refused[0];
  if (first === undefined) return '';
  const more = refused.length > 1 ? ` (${refused.length} refusals)` : '';
  return `gateway ${first.status} on ${first.method} ${first.url.split('?')[0] ?? ''}: ${shortenError(first.errorBody ?? '')}${more}`;
}

/**
 * A client that speaks MCP only: it passes when it exited 0 and printed what only the real server gives — the tool in
 * the listing (`tools/list`), `Echo: <token>` from the call.
 */
function judgeMcpOnly(path: PathSpec, evidence: RunEvidence): { outcome: Outcome; note: string } {
  const { output } = evidence;
  const wanted = path.mcp === 'list' ? MCP_TOOL : evidence.expected;
  // The token is random: the row shows its place.
  const shown = path.mcp === 'list' ? MCP_TOOL : mcpExpected('<token>');
  const notes = [evidence.credential ?? ''];
  const refusals = refusalsOf(evidence.exchanges);
  if (evidence.timedOutAfterS === undefined && output.code === 0 && output.stdout.includes(wanted)) {
    notes.push(path.mcp === 'list' ? `listed ${MCP_TOOL}` : `got "${shown}"`);
    if (refusals !== '') notes.push(`passed after the client retried a refusal: ${refusals}`);
    return { outcome: 'pass', note: oneLine(notes.filter((note) => note !== '').join('; ')) };
  }
  if (evidence.timedOutAfterS !== undefined) notes.push(`no exit within ${evidence.timedOutAfterS} s`);
  else if (output.code !== 0) notes.push(`exit ${String(output.code)}`);
  notes.push(refusals !== '' ? refusals : `client: ${clientError(path.client, output)}`);
  notes.push(`its output lacks "${shown}"`);
  return { outcome: 'fail', note: oneLine(notes.filter((note) => note !== '').join('; ')) };
}

/** The credential, and the tool the model called as the client named it (the MCP task's first turn). */
function mcpAgentNotes(evidence: RunEvidence): string[] {
  const reply = evidence.upstream.find((request) => request.answered.startsWith('tool:'))?.reply;
  let called = reply !== undefined && reply.type !== 'text' ? `the model called ${reply.name}` : '';
  // Codex's code mode: the MCP tool is a function of the JavaScript its `exec` tool runs.
  const nested = reply?.type === 'custom_tool_call' ? /tools\.(\w+)\(/.exec(reply.input)?.[1] : undefined;
  if (nested !== undefined) called += ` (code mode: tools.${nested})`;
  return [evidence.credential ?? '', called].filter((note) => note !== '');
}

export function judge(path: PathSpec, evidence: RunEvidence): { outcome: Outcome; note: string } {
  if (path.mcp !== undefined && path.mcp !== 'agent') return judgeMcpOnly(path, evidence);
  const { output, expected, upstream, exchanges } = evidence;
  const refusals = refusalsOf(exchanges);
  const dropped = [
    ...new Set(
      exchanges
        .flatMap((exchange) => (exchange.droppedFields ?? '').split(',').map((field) => field.trim()))
        .filter((field) => field !== ''),
    ),
  ];
  const resultArrived = upstream.some((request) => request.toolResults.some((result) => result.includes(expected)));
  const answered = finalText(path.client, output).includes(expected);
  const exitedOk = evidence.timedOutAfterS === undefined && output.code === 0;
  const reached = `upstream got ${apisSeen(upstream)}`;
  const wrongApi = upstream.filter((request) => request.api !== 'other' && request.api !== path.api);
  if (exitedOk && resultArrived && answered && wrongApi.length === 0) {
    const notes = [reached];
    if (path.mcp === 'agent') notes.push(...mcpAgentNotes(evidence));
    if (dropped.length > 0) notes.push(`dropped: ${dropped.join(', ')}`);
    if (refusals !== '') notes.push(`passed after the client retried a refusal: ${refusals}`);
    return { outcome: 'pass', note: oneLine(notes.join('; ')) };
  }
  const problems: string[] = [];
  if (evidence.timedOutAfterS !== undefined) problems.push(`no exit within ${evidence.timedOutAfterS} s`);
  else if (output.code !== 0) problems.push(`exit ${String(output.code)}`);
  if (refusals !== '') problems.push(refusals);
  else {
    const said = clientError(path.client, output);
    if (said !== '') problems.push(`client: ${said}`);
  }
  if (!resultArrived)
    problems.push(
      upstream.some((request) => request.answered.startsWith('tool:'))
        ? 'the tool result never reached the upstream'
        : 'the upstream never asked for the tool',
    );
  else if (!answered) problems.push('the final answer lacks the tool output');
  if (path.mcp === 'agent') problems.push(...mcpAgentNotes(evidence));
  if (wrongApi.length > 0) problems.push(`the upstream was called in ${wrongApi[0]?.api ?? '?'}, not ${path.api}`);
  if (evidence.elsewhere.length > 0) problems.push(`${evidence.elsewhere.length} call(s) went to another upstream`);
  return { outcome: 'fail', note: oneLine(`${problems.join('; ')}; ${reached}`) };
}
