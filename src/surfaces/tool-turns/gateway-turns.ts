import type { CallInput } from '../../core/pipeline/model-call.js';
import type {
  ChatCompletionChunk,
  ChatMessage,
  ChatRequestBody,
  ToolCall,
  Usage,
} from '../../providers/provider-contract.js';

/**
 * One tool loop the gateway runs for a request (file_search: surfaces/file-search/search-loop.ts; MCP tools:
 * surfaces/mcp-tools/mcp-loop.ts), as the shared turn drivers (loop-complete.ts, loop-stream.ts) ask it: which
 * function names are its tools, whether a turn that called them goes on, the next turn's body, and running a turn's
 * calls. What it ran, it keeps itself, for the surface to show.
 */
export interface GatewayTurns {
  /** The usage the upstreams reported for the turns before the last one of a stream (the stream driver adds them). */
  earlierUsage: Usage | undefined;
  /** Whether `name` is a function of the gateway's (its calls are the loop's, not the caller's). */
  runs(name: string): boolean;
  /**
   * Whether a turn that called `calls` of the gateway's tools (and, `callsTheirs`, one of the caller's) is followed by
   * another turn; false: it is the answer, and `closing` is told of the calls it made that were not run.
   */
  goesOn(calls: readonly ToolCall[], callsTheirs: boolean): boolean;
  /** The body of turn `turn` (0: the first), the conversation being `messages`. */
  turnBody(body: ChatRequestBody, messages: ChatMessage[], turn: number): ChatRequestBody;
  /**
   * Runs a turn's calls; yields the internal chunks that carry what happens to the surface's encoder (a stream shows
   * them; a JSON answer reads what the loop kept), and returns the tool messages of the next turn, one per call.
   */
  answerCalls(calls: readonly ToolCall[]): AsyncGenerator<ChatCompletionChunk, ChatMessage[], undefined>;
  /**
   * The answer's turn made `calls` of the gateway's tools, which are not run (MCP: approvals asked for), besides a
   * call of the caller's when `callsTheirs`; the chunks that show what the loop made of them.
   */
  closing?(calls: readonly ToolCall[], callsTheirs: boolean): ChatCompletionChunk[];
}

/**
 * The events of a loop's stream, each carried to the surface's encoder by an internal chunk of its own (it shows
 * nothing on a surface that does not read it): the encoder asks which event a chunk carries.
 */
export class LoopEvents<E> {
  private readonly events = new WeakMap<ChatCompletionChunk, E>();

  /** A new internal chunk that carries `event`. */
  chunk(event: E): ChatCompletionChunk {
    const chunk: ChatCompletionChunk = { object: 'chat.completion.chunk', choices: [] };
    this.events.set(chunk, event);
    return chunk;
  }

  /** The event a chunk carries (undefined: an upstream's chunk, or another loop's). */
  of(chunk: ChatCompletionChunk): E | undefined {
    return this.events.get(chunk);
  }
}

/**
 * A turn's call input: the request's, with the turn's own lease id after the first (a lease is keyed by it), and
 * never the caller's raw bytes (the body is the loop's).
 */
export function turnInput(input: CallInput, turn: number): CallInput {
  return { ...input, rawBody: undefined, requestId: turn === 0 ? input.requestId : `${input.requestId}.${turn}` };
}

/**
 * The tool choice of a turn after the first: `none` once no call is left; `required`, or a choice of one of ours,
 * becomes `auto` (the first turn made the call it asked for: asked again, the model could only call tools forever).
 */
export function laterToolChoice(
  body: ChatRequestBody,
  callsLeft: boolean,
  ours: (name: string) => boolean,
): ChatRequestBody['tool_choice'] {
  if (!callsLeft) return 'none';
  if (body.tool_choice === 'required') return 'auto';
  const fn = (body.tool_choice as { function?: { name?: unknown } } | undefined)?.function;
  return typeof fn?.name === 'string' && ours(fn.name) ? 'auto' : body.tool_choice;
}

/** The body of turn `turn`: the conversation so far; after the first, the tool choice laterToolChoice says. */
export function loopTurnBody(
  body: ChatRequestBody,
  messages: ChatMessage[],
  turn: number,
  choice: () => ChatRequestBody['tool_choice'],
): ChatRequestBody {
  if (turn === 0) return { ...body, messages };
  const next: ChatRequestBody = { ...body, messages };
  const chosen = choice();
  if (chosen === undefined) delete next.tool_choice;
  else next.tool_choice = chosen;
  return next;
}
