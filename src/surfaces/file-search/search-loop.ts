import type { CompletedChat, StartedStream } from '../../core/pipeline/chat-service.js';
import type { CallInput } from '../../core/pipeline/model-call.js';
import type { CallingAs } from '../../core/pipeline/call-as.js';
import type { FileSearch } from '../../core/retrieval/file-search.js';
import type {
  ChatCompletionChunk,
  ChatMessage,
  ChatRequestBody,
  ToolCall,
  Usage,
} from '../../providers/provider-contract.js';
import { chatUsageOf } from '../../providers/usage-shapes.js';
import { argumentsObject, toolCallFields } from '../tool-arguments.js';
import type { ChatTurns, ToolLoop } from '../tool-loop.js';
import { PassageIndex, toolResultText, type SearchRun } from './passages.js';
import { searchStream } from './search-stream.js';
import { newSearchId, turnInput, type SearchEvent, type SearchTurns } from './search-turns.js';
import { FILE_SEARCH_FUNCTION_NAME, type FileSearchSpec } from './tool-spec.js';
import { MAX_SEARCH_CALLS_PER_TURN } from './turn-reader.js';
import { sumPriced, sumUsage } from './usage-sum.js';

/**
 * The most searches one answer runs unless the search says (`FileSearch.maxToolSearches`, the config's
 * `vector_stores.max_tool_searches`); past them the model is asked to answer (`tool_choice: none`).
 */
export const MAX_SEARCHES = 4;
/** The most queries of one search the gateway runs, and the most characters of each (the model writes them). */
const MAX_QUERIES = 8;
const MAX_QUERY_CHARS = 2048;

/**
 * The `file_search` tool, run by the gateway for any upstream: the model is offered a function (tool-spec.ts); each
 * turn that calls only it gets its searches run on the caller's stores (`FileSearch`, as the caller) and their
 * passages as the tool results (passages.ts), and the next turn goes; at most MAX_SEARCHES searches (or the search's own bound), then one more
 * turn without the tool. A turn that calls a tool of the caller's, or calls none, is the answer (a search it also
 * asked for is not run and not shown). Each turn is a call of its own through the pipeline (ChatTurns); the answer's
 * usage is every turn's. What was searched and found (`passages`) is what the surface shows and cites.
 */
export class FileSearchLoop implements ToolLoop, SearchTurns {
  readonly passages = new PassageIndex();
  /** The usage the upstreams reported for the turns before the last one of a stream (search-stream.ts adds them). */
  earlierUsage: Usage | undefined;
  /** The search events of a stream, by the (internal) chunk that carries each to the surface's encoder. */
  private readonly events = new WeakMap<ChatCompletionChunk, SearchEvent>();

  constructor(
    private readonly fileSearch: FileSearch,
    private readonly spec: FileSearchSpec,
    private readonly as: CallingAs,
  ) {}

  async complete(chat: ChatTurns, body: ChatRequestBody, input: CallInput): Promise<CompletedChat> {
    const messages = [...body.messages];
    const turns: CompletedChat[] = [];
    for (let turn = 0; ; turn++) {
      const done = await chat.complete(this.turnBody(body, messages, turn), turnInput(input, turn));
      turns.push(done);
      const completion = JSON.parse(done.result.body.toString('utf8')) as CompletionShape;
      const choice = completion.choices?.[0];
      const calls = choice?.message?.tool_calls ?? [];
      const { ours, theirs } = splitCalls(calls);
      if (ours.length === 0 || theirs.length > 0 || this.searchesLeft === 0) {
        if (choice?.message) finishWithout(choice, theirs);
        const usage = sumUsage(turns.map((t) => t.result.usage));
        if (usage && turns.length > 1) completion.usage = chatUsageOf(usage);
        const text = JSON.stringify(completion);
        return { ...done, result: { body: Buffer.from(text), usage }, usage: sumPriced(turns.map((t) => t.usage)) };
      }
      messages.push({ role: 'assistant', content: choice?.message?.content ?? null, tool_calls: ours });
      for (const call of ours) messages.push((await this.answerCall(call)).message);
    }
  }

  stream(chat: ChatTurns, body: ChatRequestBody, input: CallInput): Promise<StartedStream> {
    return searchStream(this, chat, body, input);
  }

  /** The search event an internal chunk of this loop's stream carries (undefined: an upstream's chunk). */
  eventOf(chunk: ChatCompletionChunk): SearchEvent | undefined {
    return this.events.get(chunk);
  }

  /** An internal chunk that carries `event` to the surface's encoder (search-stream.ts). */
  eventChunk(event: SearchEvent): ChatCompletionChunk {
    const chunk: ChatCompletionChunk = { object: 'chat.completion.chunk', choices: [] };
    this.events.set(chunk, event);
    return chunk;
  }

  get searchesLeft(): number {
    return Math.max(0, (this.fileSearch.maxToolSearches ?? MAX_SEARCHES) - this.passages.searches.length);
  }

  /** The body of a turn: the conversation so far; once no search is left, the model must answer. */
  turnBody(body: ChatRequestBody, messages: ChatMessage[], turn: number): ChatRequestBody {
    if (turn === 0) return { ...body, messages };
    const choice = this.searchesLeft === 0 ? 'none' : namesSearch(body.tool_choice) ? 'auto' : body.tool_choice;
    const next: ChatRequestBody = { ...body, messages };
    if (choice === undefined) delete next.tool_choice;
    else next.tool_choice = choice;
    return next;
  }

  /**
   * Runs one call of the search (the model's queries, bounded) as search `id`, or says why not, as the call's tool
   * result; `run` is the search made (undefined: none was).
   */
  async answerCall(call: ToolCall, id: string = newSearchId()): Promise<{ message: ChatMessage; run?: SearchRun }> {
    const reply = (content: string): ChatMessage => ({ role: 'tool', tool_call_id: call.id, content });
    if (this.searchesLeft === 0)
      return { message: reply('Not run: this answer has used all its searches. Answer now with what you found.') };
    const queries = queriesOf(call.function.arguments);
    const found =
      queries.length === 0
        ? { hits: [], queries }
        : await this.fileSearch({
            as: this.as,
            vectorStoreIds: this.spec.vectorStoreIds,
            queries,
            filters: this.spec.filters,
            maxNumResults: this.spec.maxNumResults,
            rankingOptions: this.spec.rankingOptions,
          });
    const run = this.passages.add(id, found.queries.length > 0 ? found.queries : queries, found.hits);
    return { message: reply(toolResultText(run)), run };
  }
}

/** What the loop reads of a completion (the gateway's own JSON: providers normalised it). */
interface CompletionShape {
  choices?: Array<{ message?: ChatMessage; finish_reason?: string | null }>;
  usage?: unknown;
  [field: string]: unknown;
}

/**
 * The calls of the search (the first MAX_SEARCH_CALLS_PER_TURN: the others are dropped, as a stream's are), well
 * formed, and the caller's own as they came. An upstream's call is read field by field (tool-arguments.ts): one
 * without `function`, or with `arguments` sent as an object, is not a TypeError.
 */
export function splitCalls(calls: readonly unknown[]): { ours: ToolCall[]; theirs: ToolCall[] } {
  const ours: ToolCall[] = [];
  const theirs: ToolCall[] = [];
  calls.forEach((call, i) => {
    const fields = toolCallFields(call);
    if (fields?.name !== FILE_SEARCH_FUNCTION_NAME) theirs.push(call as ToolCall);
    else if (ours.length < MAX_SEARCH_CALLS_PER_TURN)
      ours.push({
        id: fields.id ?? `call_file_search_${i}`,
        type: 'function',
        function: { name: FILE_SEARCH_FUNCTION_NAME, arguments: fields.arguments ?? '' },
      });
  });
  return { ours, theirs };
}

/** The answer's message without the search calls it was not given; a turn left with no call stopped. */
function finishWithout(choice: NonNullable<CompletionShape['choices']>[number], theirs: ToolCall[]): void {
  const message = choice.message as ChatMessage;
  if (theirs.length > 0) message.tool_calls = theirs;
  else if (message.tool_calls !== undefined) {
    delete message.tool_calls;
    if (choice.finish_reason === 'tool_calls') choice.finish_reason = 'stop';
  }
}

/** The model's queries: `{queries: [...]}` (or one `query` string), strings only, bounded. */
function queriesOf(args: unknown): string[] {
  const object = typeof args === 'string' ? argumentsObject(args) : undefined;
  const raw = object?.queries ?? object?.query;
  const list: unknown[] = Array.isArray(raw) ? raw : [raw];
  return list
    .filter((query): query is string => typeof query === 'string' && query.trim() !== '')
    .slice(0, MAX_QUERIES)
    .map((query) => query.slice(0, MAX_QUERY_CHARS));
}

function namesSearch(choice: unknown): boolean {
  const fn = (choice as { function?: { name?: unknown } } | undefined)?.function;
  return fn?.name === FILE_SEARCH_FUNCTION_NAME;
}
