import type { StreamBatch, StreamChunk, ToolCall, Usage } from '../../providers/provider-contract.js';
import { checkedUsage } from '../../providers/usage-figures.js';
import { chatUsageOf } from '../../providers/usage-shapes.js';
import { toolCallFields } from '../tool-arguments.js';
import { sumUsage } from './usage-sum.js';

/** The most text and gateway-call argument text one turn keeps for the conversation's next turn. */
const MAX_TURN_TEXT_CHARS = 1024 * 1024;
const MAX_CALL_ARGUMENTS_CHARS = 64 * 1024;
/**
 * The most calls of the gateway's tools one turn keeps (each holds up to MAX_CALL_ARGUMENTS_CHARS, and each becomes a
 * message of the next turn): the calls past it are taken out of the stream and forgotten, as if the model had not
 * made them.
 */
export const MAX_GATEWAY_CALLS_PER_TURN = 16;
/** The most ending chunks one turn holds (an upstream that sends usage on every chunk keeps only its last ones). */
const MAX_HELD_CHUNKS = 32;

interface GatewayCallParts {
  name: string;
  id: string | undefined;
  args: string;
}

/**
 * Reads one streamed model turn of a gateway tool loop (loop-stream.ts): its chunks go on to the caller without the
 * deltas of the calls the gateway runs (`runs`: file_search, MCP tools), and without its ending (the chunks with a
 * finish reason or usage), which is held until the turn is known to be the answer (then it goes, `ending`) or a
 * tool turn (then it is dropped: the next turn goes on). What it said and which of the gateway's tools it called are
 * kept for the conversation's next turn.
 */
export class TurnReader {
  /** The turn's text (bounded), for the next turn's conversation. */
  text = '';
  /** The usage the upstream reported for the turn. */
  usage: Usage | undefined;
  /** Whether the turn called a tool of the caller's. */
  callsTheirs = false;
  private readonly ours = new Map<number, GatewayCallParts>();
  private readonly theirs = new Set<number>();
  /** Gateway calls past MAX_GATEWAY_CALLS_PER_TURN: their deltas are taken out, nothing of them kept. */
  private readonly forgotten = new Set<number>();
  private readonly held: StreamChunk[] = [];

  /** Whether an earlier turn's chunks went out (then this turn's `role`, said again, is left out). */
  private readonly continues: boolean;

  constructor(
    /** Whether a chunk already opened the caller's stream (an emptied first chunk still goes, to open it). */
    private opened: boolean,
    /** Whether a function name is one of the tools the gateway runs (its calls are the loop's, not the caller's). */
    private readonly runs: (name: string) => boolean,
  ) {
    this.continues = opened;
  }

  read(batch: StreamBatch): StreamChunk[] {
    const out: StreamChunk[] = [];
    for (const item of batch) {
      const kept = this.filter(item);
      if (kept) out.push(kept);
    }
    return out;
  }

  /** The calls of the gateway's tools the turn made, as chat tool calls. */
  gatewayCalls(): ToolCall[] {
    return [...this.ours.entries()].map(([index, parts]) => ({
      id: parts.id ?? `call_${parts.name}_${index}`,
      type: 'function',
      function: { name: parts.name, arguments: parts.args },
    }));
  }

  /**
   * The held ending of the answer's turn: without the gateway's calls (a turn left with none stopped), its usage chunk
   * showing every turn's usage (`earlier` added) while the gateway's count stays the turn's own (what its call settles).
   */
  ending(earlier: Usage | undefined): StreamChunk[] {
    const dropped = this.ours.size > 0 && !this.callsTheirs;
    return this.held.map((item) => {
      let chunk = item.chunk;
      const choice = chunk.choices[0];
      if (dropped && choice?.finish_reason === 'tool_calls')
        chunk = { ...chunk, choices: [{ ...choice, finish_reason: 'stop' }, ...chunk.choices.slice(1)] };
      const own = item.usage ?? (chunk.usage ? checkedUsage(chunk.usage) : undefined);
      if (earlier && own && chunk.usage) chunk = { ...chunk, usage: chatUsageOf(sumUsage([earlier, own]) as Usage) };
      if (chunk === item.chunk) return item;
      const { json: _json, templated: _templated, ...rest } = item;
      return { ...rest, chunk, ...(own ? { usage: own } : {}) };
    });
  }

  private filter(item: StreamChunk): StreamChunk | undefined {
    const reported = item.usage ?? item.chunk.usage;
    if (reported) this.usage = checkedUsage(reported);
    const choice = item.chunk.choices[0];
    let kept = item;
    if (choice) {
      const content = choice.delta.content;
      if (typeof content === 'string' && this.text.length < MAX_TURN_TEXT_CHARS) this.text += content;
      if (this.continues && choice.delta.role !== undefined) kept = withoutRole(kept);
      const calls = kept.chunk.choices[0]?.delta.tool_calls;
      if (Array.isArray(calls)) {
        const theirs = calls.filter((call) => !this.claim(call));
        if (theirs.length !== calls.length) {
          const current = kept.chunk.choices[0] ?? choice;
          const { tool_calls: _calls, ...delta } = current.delta;
          const chunk = {
            ...kept.chunk,
            choices: [{ ...current, delta: theirs.length > 0 ? { ...delta, tool_calls: theirs } : delta }],
          };
          const { json: _json, templated: _templated, ...rest } = kept;
          kept = { ...rest, chunk };
        }
      }
    }
    if (choice?.finish_reason || item.chunk.usage || item.usage) {
      this.hold(kept);
      return undefined;
    }
    const visible = kept === item || hasContent(kept);
    if (!visible && this.opened) return undefined;
    this.opened = true;
    return kept;
  }

  /** Holds an ending chunk; past the bound, the oldest that finishes nothing makes room (the usage is the last's). */
  private hold(item: StreamChunk): void {
    if (this.held.length >= MAX_HELD_CHUNKS) {
      const spare = this.held.findIndex((held) => !held.chunk.choices[0]?.finish_reason);
      this.held.splice(spare === -1 ? 0 : spare, 1);
    }
    this.held.push(item);
  }

  /** Takes a gateway call's delta (true), or marks the caller's call (false). */
  private claim(piece: unknown): boolean {
    const delta = toolCallFields(piece);
    if (!delta) return false;
    const index = delta.index ?? 0;
    if (delta.name !== undefined && !this.ours.has(index) && !this.theirs.has(index) && !this.forgotten.has(index)) {
      if (!this.runs(delta.name)) this.theirs.add(index);
      else if (this.ours.size < MAX_GATEWAY_CALLS_PER_TURN)
        this.ours.set(index, { name: delta.name, id: undefined, args: '' });
      else this.forgotten.add(index); // a number each, as the caller's calls are kept
    }
    if (this.forgotten.has(index)) return true;
    const parts = this.ours.get(index);
    if (!parts) {
      this.callsTheirs ||= this.theirs.has(index);
      return false;
    }
    parts.id ??= delta.id;
    if (delta.arguments !== undefined && parts.args.length < MAX_CALL_ARGUMENTS_CHARS) parts.args += delta.arguments;
    return true;
  }
}

/** The chunk without its first choice's `role` (a later turn of one answer says it again). */
function withoutRole(item: StreamChunk): StreamChunk {
  const choice = item.chunk.choices[0];
  if (!choice) return item;
  const { role: _role, ...delta } = choice.delta;
  const { json: _json, templated: _templated, ...rest } = item;
  return { ...rest, chunk: { ...item.chunk, choices: [{ ...choice, delta }, ...item.chunk.choices.slice(1)] } };
}

function hasContent(item: StreamChunk): boolean {
  const delta = item.chunk.choices[0]?.delta;
  return (
    delta !== undefined &&
    ((typeof delta.content === 'string' && delta.content !== '') || delta.tool_calls !== undefined)
  );
}
