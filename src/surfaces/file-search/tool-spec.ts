import { isGatewayError } from '../../errors/gateway-error.js';
import type { FieldProblem, ProblemList } from '../../http/validation-details.js';
import { toolSearchFields } from '../../core/retrieval/search-input.js';
import type { AttributeFilter, RankingOptions } from '../../core/retrieval/file-search.js';
import type { JsonObject } from '../../wire/json.js';
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
 * problem in `problems`; undefined when it cannot be used. Filters and ranking options are read as a search body's
 * (core/retrieval/search-input.ts): the search compiles them unchecked, so a malformed filter here would be a
 * TypeError (a 500) after the model's first turn, not the 400 before it.
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
  // Judged as a search body's are (a 400 naming the field): the search compiles and runs them as they are.
  let fields: ReturnType<typeof toolSearchFields>;
  try {
    fields = toolSearchFields(tool, at);
  } catch (error) {
    if (!isGatewayError(error) || error.code !== 'validation_failed') throw error;
    for (const problem of (error.details as { errors?: FieldProblem[] }).errors ?? []) problems.add(problem);
    return undefined;
  }
  return {
    at,
    vectorStoreIds: ids as string[],
    filters: fields.filters,
    maxNumResults: fields.maxNumResults,
    rankingOptions: fields.rankingOptions,
  };
}
