import { GatewayError } from '../errors/gateway-error.js';
import type { FileSearch } from '../core/retrieval/file-search.js';
import { DONE_FRAME, formatEvent } from '../http/sse.js';
import type { ChatRequestBody } from '../providers/provider-contract.js';
import { isJsonObject } from '../wire/json.js';
import { ChatCitationStream, citedCompletion, type ChatFileSearch } from './file-search/chat-citations.js';
import { planFileSearch } from './file-search/gateway-search.js';
import { FILE_SEARCH_FUNCTION, FILE_SEARCH_FUNCTION_NAME } from './file-search/tool-spec.js';
import type { ApiSurface, StreamEncoder, SurfaceCall } from './surface.js';

/** Chat completions, the gateway's own model: nothing to translate; chunks leave as the provider normalised them. */
const CHAT_ENCODER: StreamEncoder = {
  open: () => '',
  chunk: (item) => (item.internal === true ? '' : formatEvent(item.json ?? JSON.stringify(item.chunk))),
  end: () => DONE_FRAME,
  fail: (error, shape) => shape.streamFrame(error.toBody(), error.status, error.headers),
};

/**
 * Chat completions as a surface: the body is the chat request, the answer the provider's, untouched, unless the
 * request has a `file_search` tool (a gateway extension of chat: OpenAI has it on the Responses API only). The
 * gateway runs that tool (surfaces/file-search/): the model is offered a `file_search` function in its place, and
 * the answer carries its citations as `url_citation` annotations and the searches as `file_search_results`
 * (docs/retrieval.md). Without a search on this gateway (`fileSearch` absent) such a tool is refused.
 */
export function chatSurface(fileSearch: FileSearch | undefined): ApiSurface {
  return {
    route: 'chat',
    forwardsRawBody: true,
    toChat: (body, call) =>
      hasFileSearch(body) ? withFileSearch(body as ChatRequestBody, fileSearch, call) : (body as ChatRequestBody),
    answer: (completion, call) => {
      const search = call.state as ChatFileSearch | undefined;
      return search ? citedCompletion(completion.toString('utf8'), search) : completion;
    },
    encoder: (call) => {
      const search = call.state as ChatFileSearch | undefined;
      return search ? new ChatCitationStream(search) : CHAT_ENCODER; // stateless: one for every stream
    },
    isCompleteEnd: (frame) => frame.endsWith(DONE_FRAME),
  };
}

/** Chat completions without vector stores (a `file_search` tool is refused). */
export const CHAT_SURFACE: ApiSurface = chatSurface(undefined);

function hasFileSearch(body: unknown): boolean {
  const tools = (body as { tools?: unknown }).tools;
  return Array.isArray(tools) && tools.some((tool) => isJsonObject(tool) && tool.type === 'file_search');
}

/** The request with its `file_search` tool as the function the gateway answers, its loop set on the call. */
async function withFileSearch(
  body: ChatRequestBody,
  fileSearch: FileSearch | undefined,
  call: SurfaceCall,
): Promise<ChatRequestBody> {
  const tools = body.tools as unknown[];
  const at = tools.findIndex((tool) => isJsonObject(tool) && tool.type === 'file_search');
  if (!fileSearch)
    throw new GatewayError('capability_not_supported', {
      field: `tools[${at}].type`,
      problem: 'file_search tools need vector stores, which this gateway does not serve',
    });
  const plan = await planFileSearch(tools, fileSearch, call);
  if (plan.kind === 'not_ours') throw plan.error;
  if (plan.kind !== 'gateway') return body;
  const named = tools.findIndex(
    (tool) => isJsonObject(tool) && isJsonObject(tool.function) && tool.function.name === FILE_SEARCH_FUNCTION_NAME,
  );
  if (named >= 0)
    throw new GatewayError('validation_failed', {
      field: `tools[${named}].function.name`,
      problem: `a function named "${FILE_SEARCH_FUNCTION_NAME}" cannot be declared with a file_search tool`,
    });
  call.loop = plan.loop;
  call.state = { loop: plan.loop, origin: call.publicOrigin?.() ?? '' } satisfies ChatFileSearch;
  const others = tools.filter((tool) => !(isJsonObject(tool) && tool.type === 'file_search'));
  return { ...body, tools: [...others, FILE_SEARCH_FUNCTION] };
}
