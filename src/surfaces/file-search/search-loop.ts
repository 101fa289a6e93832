import type { CallingAs } from '../../core/pipeline/call-as.js';
import type { FileSearch } from '../../core/retrieval/file-search.js';
import type { ChatCompletionChunk, ChatMessage, ChatRequestBody, ToolCall } from '../../providers/provider-contract.js';
import { argumentsObject } from '../tool-arguments.js';
import { GatewayToolLoop } from '../tool-turns/gateway-tool-loop.js';
import { laterToolChoice, loopTurnBody } from '../tool-turns/gateway-turns.js';
import { PassageIndex, toolResultText, type SearchRun } from './passages.js';
import { newSearchId, type SearchEvent } from './search-turns.js';
import { FILE_SEARCH_FUNCTION_NAME, type FileSearchSpec } from './tool-spec.js';

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
 * asked for is not run and not shown). Each turn is a call of its own through the pipeline (the shared drivers of
 * tool-turns/); the answer's usage is every turn's. What was searched and found (`passages`) is what the surface
 * shows and cites.
 */
export class FileSearchLoop extends GatewayToolLoop<SearchEvent> {
  readonly passages = new PassageIndex();

  constructor(
    private readonly fileSearch: FileSearch,
    private readonly spec: FileSearchSpec,
    private readonly as: CallingAs,
  ) {
    super();
  }

  get searchesLeft(): number {
    return Math.max(0, (this.fileSearch.maxToolSearches ?? MAX_SEARCHES) - this.passages.searches.length);
  }

  runs(name: string): boolean {
    return name === FILE_SEARCH_FUNCTION_NAME;
  }

  goesOn(calls: readonly ToolCall[], callsTheirs: boolean): boolean {
    return calls.length > 0 && !callsTheirs && this.searchesLeft > 0;
  }

  /** The body of a turn: the conversation so far; once no search is left, the model must answer. */
  turnBody(body: ChatRequestBody, messages: ChatMessage[], turn: number): ChatRequestBody {
    return loopTurnBody(body, messages, turn, () =>
      laterToolChoice(body, this.searchesLeft > 0, (name) => this.runs(name)),
    );
  }

  /** Runs a turn's searches in order, each shown as it starts and when it is done. */
  async *answerCalls(calls: readonly ToolCall[]): AsyncGenerator<ChatCompletionChunk, ChatMessage[], undefined> {
    const messages: ChatMessage[] = [];
    for (const call of calls) {
      const id = newSearchId();
      if (this.searchesLeft > 0)
        yield this.events.chunk({ kind: 'started', run: { id, queries: [], hits: [], first: 0 } });
      const { message, run } = await this.answerCall(call, id);
      messages.push(message);
      if (run) yield this.events.chunk({ kind: 'done', run });
    }
    return messages;
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
