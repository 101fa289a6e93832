// Load generator of the streams bench: opens N streamed chat calls at once and reads every one to its end.
//   node --import tsx bench/streams-load.ts '<StreamsLoadConfig JSON>'
// Prints `RESULT <StreamsLoadResult JSON>` on stdout. A stream counts as completed only with status 200, every
// content chunk the upstream sent (`"content":"tok `), and the final `data: [DONE]`; anything else is lost.
import { Agent, request } from 'undici';
import { exitWithParent } from './lib/proc.js';

export interface StreamsLoadConfig {
  url: string;
  headers: Record<string, string>;
  body: string;
  streams: number;
  /** Content chunks each stream must carry. */
  chunks: number;
  /** Give up on a stream after this long (it counts as lost). */
  timeoutMs: number;
}

export interface StreamsLoadResult {
  completed: number;
  lost: number;
  /** Why streams were lost, by reason (`status 504`, `no [DONE]`, `short: 12 of 20 chunks`, an error code). */
  reasons: Record<string, number>;
  /** Send to first body byte, ms, of every stream that got one (sorted). */
  firstByteMs: number[];
  wallMs: number;
}

const PIECE = '"content":"tok ';
const DONE = 'data: [DONE]\n\n';

function count(text: string, needle: string): number {
  let n = 0;
  for (let i = text.indexOf(needle); i !== -1; i = text.indexOf(needle, i + needle.length)) n++;
  return n;
}

async function oneStream(
  cfg: StreamsLoadConfig,
  dispatcher: Agent,
  started: number,
  firstBytes: number[],
): Promise<string | undefined> {
  const signal = AbortSignal.timeout(cfg.timeoutMs);
  const response = await request(cfg.url, { method: 'POST', headers: cfg.headers, body: cfg.body, dispatcher, signal });
  let text = '';
  let first = true;
  for await (const part of response.body) {
    if (first) {
      first = false;
      firstBytes.push(performance.now() - started);
    }
    text += (part as Buffer).toString('latin1');
  }
  if (response.statusCode !== 200) return `status ${response.statusCode}`;
  if (!text.endsWith(DONE)) return 'no [DONE]';
  const pieces = count(text, PIECE);
  return pieces === cfg.chunks ? undefined : `short: ${pieces} of ${cfg.chunks} chunks`;
}

async function main(): Promise<void> {
  const raw = process.argv[2];
  if (raw === undefined) throw new Error('usage: streams-load.ts <StreamsLoadConfig JSON>');
  const cfg = JSON.parse(raw) as StreamsLoadConfig;
  // One connection per stream (no bound, no pipelining): N callers, as N separate clients would be.
  const dispatcher = new Agent({
    connections: null,
    pipelining: 1,
    headersTimeout: cfg.timeoutMs,
    bodyTimeout: cfg.timeoutMs,
    connectTimeout: cfg.timeoutMs,
  });
  const firstBytes: number[] = [];
  const reasons: Record<string, number> = {};
  const started = performance.now();
  let completed = 0;
  await Promise.all(
    Array.from({ length: cfg.streams }, () =>
      oneStream(cfg, dispatcher, started, firstBytes).then(
        (lost) => {
          if (lost === undefined) completed += 1;
          else reasons[lost] = (reasons[lost] ?? 0) + 1;
        },
        (error: unknown) => {
          // undici's errors have a string code; AbortSignal.timeout's DOMException a number (23): its name says more.
          const { code, name } = error as { code?: unknown; name?: string };
          const reason = typeof code === 'string' ? code : (name ?? String(code));
          reasons[reason] = (reasons[reason] ?? 0) + 1;
        },
      ),
    ),
  );
  const wallMs = performance.now() - started;
  await dispatcher.close();
  const result: StreamsLoadResult = {
    completed,
    lost: cfg.streams - completed,
    reasons,
    firstByteMs: firstBytes.sort((a, b) => a - b),
    wallMs,
  };
  // Exit once written: exitWithParent keeps stdin (and so the process) open.
  process.stdout.write(`RESULT ${JSON.stringify(result)}\n`, () => process.exit(0));
}

exitWithParent();
main().catch((error: unknown) => {
  process.stderr.write(`streams-load: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
