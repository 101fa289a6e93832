import type { ProblemList } from '../../http/validation-details.js';
import type { AttributeFilter, RankingOptions } from '../../core/retrieval/file-search.js';
import { isJsonObject, type JsonObject } from '../../wire/json.js';
import type { ChatFunctionTool } from '../../wire/openai-chat.js';

/** The function the model is offered in place of a `file_search` tool (the gateway runs its calls). */
export const FILE_SEARCH_FUNCTION_NAME = 'file_search';

/** OpenAI's default `max_num_results` of the tool (docs: 10; its bounds 1..50). */
const DEFAULT_MAX_NUM_RESULTS = 10;
const MAX_NUM_RESULTS = 50;
/** The most stores one tool may name (OpenAI takes few; each is a search of its own). */
export const MAX_VECTOR_STORE_IDS = 16;

/** A caller's `file_search` tool, read: what every search it makes is asked with. */
export interface FileSearchSpec {
  /** Where the tool is in the request (`tools[2]`): errors about its stores name `<at>.vector_store_ids`. */
  at: string;
  vectorStoreIds: string[];
  filters: AttributeFilter | undefined;
  maxNumResults: number;
  rankingOptions: RankingOptions | undefined;
}

/** The function tool the model sees: it asks for one or several search queries, the gateway answers with passages. */
export const FILE_SEARCH_FUNCTION: ChatFunctionTool = {
  type: 'function',
  function: {
    name: FILE_SEARCH_FUNCTION_NAME,
    description:
      "Searches the user's files for passages relevant to the queries. Returns numbered passages with their file names; cite a passage you use by writing its number in square brackets, like [1], right after the sentence that uses it.",
    parameters: {
      type: 'object',
      properties: {
        queries: {
          type: 'array',
          items: { type: 'string' },
          description: 'One or more search queries, each a short self-contained question or phrase.',
        },
      },
      required: ['queries'],
      additionalProperties: false,
    },
  },
};

/**
 * Reads a `file_search` tool (`{type, vector_store_ids, filters, max_num_results, ranking_options}`), naming each
 * problem in `problems`; undefined when it cannot be used. Filters and ranking options are the search's to judge
 * (core/retrieval/file-search.ts): only their shape (an object) is checked here.
 */
export function readFileSearchTool(tool: JsonObject, at: string, problems: ProblemList): FileSearchSpec | undefined {
  const ids = tool.vector_store_ids;
  if (
    !Array.isArray(ids) ||
    ids.length === 0 ||
    ids.length > MAX_VECTOR_STORE_IDS ||
    !ids.every((id) => typeof id === 'string' && id !== '' && id.length <= 256)
  ) {
    problems.add({
      field: `${at}.vector_store_ids`,
      problem: `must be a list of 1 to ${MAX_VECTOR_STORE_IDS} vector store ids`,
    });
    return undefined;
  }
  const max = tool.max_num_results ?? DEFAULT_MAX_NUM_RESULTS;
  if (!Number.isSafeInteger(max) || (max as number) < 1 || (max as number) > MAX_NUM_RESULTS) {
    problems.add({ field: `${at}.max_num_results`, problem: `must be an integer from 1 to ${MAX_NUM_RESULTS}` });
    return undefined;
  }
  const filters = tool.filters ?? undefined;
  const ranking = tool.ranking_options ?? undefined;
  if (filters !== undefined && !isJsonObject(filters)) {
    problems.add({ field: `${at}.filters`, problem: 'must be a comparison or compound filter object, or null' });
    return undefined;
  }
  if (ranking !== undefined && !isJsonObject(ranking)) {
    problems.add({ field: `${at}.ranking_options`, problem: 'must be an object or null' });
    return undefined;
  }
  return {
    at,
    vectorStoreIds: ids as string[],
    filters: filters as AttributeFilter | undefined,
    maxNumResults: max as number,
    rankingOptions: ranking as RankingOptions | undefined,
  };
}
