import { GatewayError, isGatewayError } from '../../errors/gateway-error.js';
import { conversationAsItems, NATIVE_ENCODER, nativeReferences } from './native-forward.js';
import type { NativeOwnership } from '../native-ownership.js';
import type { ChatExtra, ChatMessage } from '../../providers/provider-contract.js';
import { NativeForward, type ApiSurface, type SurfaceCall } from '../surface.js';
import { completionToResponse } from './chat-to-response.js';
import { responseShell } from './response-object.js';
import { resolveItemReferences } from './item-references.js';
import { newId } from './ids.js';
import { responsesToChat, type TranslatedRequest } from './request-to-chat.js';
import { responseJson } from './response-json.js';
import { ResponseStream } from './response-stream.js';
import type { PreviousTurn, ResponseHistory } from './response-history.js';
import type { ResponseObject, ResponsesRequest } from '../../wire/openai-responses.js';
import type { ToolNames } from './tool-names.js';
import type { FileSearch } from '../../core/retrieval/file-search.js';
import type { ChatRequestBody } from '../../providers/provider-contract.js';
import type { ResponsesInputItem } from '../../wire/openai-responses.js';
import { planFileSearch, type FileSearchPlan } from '../file-search/gateway-search.js';
import type { FileSearchLoop } from '../file-search/search-loop.js';
import { FILE_SEARCH_FUNCTION, FILE_SEARCH_FUNCTION_NAME } from '../file-search/tool-spec.js';
import { withFileSearch, type ResponsesFileSearch } from './file-search-output.js';
import { FILE_SEARCH_RESULTS } from './request-fields.js';
import type { McpLoopDeps } from '../mcp-tools/mcp-deps.js';
import type { McpToolLoop } from '../mcp-tools/mcp-loop.js';
import { offerMcp, planResponsesMcp } from './mcp-request.js';
import { withMcp } from './mcp-output.js';

/** What one Responses call keeps between its translation and its answer. */
interface ResponsesCallState {
  shell: ResponseObject;
  request: ResponsesRequest;
  /** The response it continues, if any (where the new turn goes on from). */
  previous: PreviousTurn | undefined;
  /** This request's input as chat messages (without instructions or earlier turns): what its turn stores. */
  input: ChatMessage[];
  /** The names the request's tools have upstream, and back. */
  names: ToolNames;
  /** The `file_search` tool the gateway runs for this call, if any. */
  search: ResponsesFileSearch | undefined;
  /** The `mcp` tools the gateway runs for this call, if any. */
  mcp: McpToolLoop | undefined;
}

/**
 * What a model with a native upstream sends there as it is rather than through chat: whatever the exact translation
 * refuses, for what it holds (built-in tools, reasoning items, fields only the Responses API has), for a value the
 * gateway does not read (the upstream judges its own API), or for an id only the upstream may hold.
 */
const GOES_NATIVE = new Set(['capability_not_supported', 'validation_failed', 'response_not_found']);

/** What the Responses surface is built with (its descriptor's SurfaceDeps, asked per model). */
export interface ResponsesSurfaceOptions {
  /** Stored responses (absent: none kept). */
  history: ResponseHistory | undefined;
  /** Whether some upstream of the model speaks the Responses API. */
  forwards: (model: string) => boolean;
  ownership: NativeOwnership;
  /** Whether every upstream of the model carries a chat field; absent: all do. */
  carries?: (model: string, field: ChatExtra) => boolean;
  /** Whether the model's requests go natively first (`responses: native`); absent: none do. */
  nativeFirst?: (model: string) => boolean;
  /** The search the `file_search` tool runs on the caller's stores (absent: the tool is refused or goes natively). */
  fileSearch?: FileSearch | undefined;
  /** The MCP servers the `mcp` tool names, run by the gateway (absent: the tool is refused or goes natively). */
  mcp?: McpLoopDeps | undefined;
}

/**
 * The OpenAI Responses API as a surface of the chat pipeline: a Responses request is translated into a chat
 * request for any provider, and the chat answer back into a `response` object or the typed event stream. For a
 * model with an upstream that speaks the Responses API (`forwards`), only a request that translates exactly goes
 * through chat; any other goes there as it is. For any other model the translation is tolerant: it maps what has
 * an equivalent where the model's upstreams carry it (`carries`) and names in `call.notes` what it leaves out. A
 * request forwarded natively may refer only to the upstream's ids its caller made through the gateway (`ownership`).
 */
export function responsesSurface(options: ResponsesSurfaceOptions): ApiSurface {
  const { history, forwards, ownership } = options;
  const carries = options.carries ?? (() => true);
  const nativeFirst = options.nativeFirst ?? (() => false);
  return {
    route: 'responses',
    forwardsRawBody: false,
    async toChat(body, call) {
      let request = body as ResponsesRequest;
      const previous = typeof request.previous_response_id === 'string' ? request.previous_response_id : undefined;
      const continued =
        previous !== undefined && history
          ? await history.continuation(call.caller, previous, requestBytes(call))
          : undefined;
      const ours = continued?.messages;
      const native = forwards(request.model);
      const { gatewaySearch, gatewayMcp, goesNative } = await planGatewayTools(request, call, native, options);
      // Earlier answers the caller refers to by id (the AI SDK's default with `store`): the items, where they are ours.
      // References to earlier searches are read past where no upstream holds them (the gateway ran them, or none can).
      const pastSearches = !native || gatewaySearch !== undefined;
      const references = await resolveItemReferences(history, call.caller, request.input);
      if (references) {
        request = { ...request, input: pastSearches ? withoutSearchReferences(references.input) : references.input };
        const unknown = references.unresolved.find((reference) => !pastSearches || !reference.id.startsWith('fs_'));
        if (unknown !== undefined && !native) {
          if (!history) throw keepsNoResponses(unknown.field);
          throw new GatewayError('response_not_found', { id: unknown.id.slice(0, 256), field: unknown.field });
        }
      }
      // A model whose every upstream speaks the Responses API gets it as it is (nothing is lost in a translation).
      const ranHere = gatewaySearch !== undefined || gatewayMcp !== undefined;
      if (native && (goesNative || (nativeFirst(request.model) && !ranHere))) {
        const forward = nativeForward(request, ours, references?.replaced === true);
        await ownership.check(call.caller, nativeReferences(forward.body));
        return forward;
      }
      let translated: TranslatedRequest;
      try {
        if (previous !== undefined && !ours) {
          if (!history) throw keepsNoResponses('previous_response_id');
          throw new GatewayError('response_not_found', { id: previous.slice(0, 256) });
        }
        const carried = new Map<ChatExtra, boolean>(); // each asked once per call: it plans the model's route
        const options = {
          carries: (field: ChatExtra) =>
            carried.get(field) ?? carried.set(field, carries(request.model, field)).get(field) === true,
        };
        const searched = { ...options, fileSearch: gatewaySearch !== undefined, mcp: gatewayMcp !== undefined };
        translated = responsesToChat(request, ours ?? [], native ? searched : { ...searched, notes: call.notes });
      } catch (error) {
        // What only the native API can do goes to an upstream that speaks it, as it is (an id the gateway does not
        // hold may be that upstream's own, if this caller made it there); everything else is refused as it was.
        if (!native || !isGatewayError(error) || !GOES_NATIVE.has(error.code)) throw error;
        const forward = nativeForward(request, ours, references?.replaced === true);
        await ownership.check(call.caller, nativeReferences(forward.body));
        return forward;
      }
      const { chat, names } = translated;
      if (gatewaySearch) offerSearch(chat, names, call, gatewaySearch.loop);
      if (gatewayMcp) await offerMcp(chat, names, call, gatewayMcp, request.input);
      const instructed = typeof request.instructions === 'string' && request.instructions !== '';
      const state: ResponsesCallState = {
        shell: responseShell(request, newId('resp'), Math.floor(Date.now() / 1000)),
        request,
        previous: continued?.previous,
        input: chat.messages.slice((instructed ? 1 : 0) + (ours?.length ?? 0)),
        names,
        search: gatewaySearch && {
          loop: gatewaySearch.loop,
          include: Array.isArray(request.include) && request.include.includes(FILE_SEARCH_RESULTS),
        },
        mcp: gatewayMcp,
      };
      if (!history) state.shell.store = false; // said as it is: this gateway keeps nothing
      call.state = state;
      return chat;
    },
    async answer(completion, call) {
      const state = call.state as ResponsesCallState;
      const response = completionToResponse(completion.toString('utf8'), state.shell, state.names);
      if (state.search) withFileSearch(response, state.search);
      if (state.mcp) withMcp(response, state.mcp);
      const json = responseJson(response);
      await save(history, call, state, response, json);
      return json;
    },
    encoder(call) {
      const state = call.state as ResponsesCallState;
      return new ResponseStream(
        state.shell,
        (response) => save(history, call, state, response, responseJson(response)),
        state.names,
        state.search,
        state.mcp,
      );
    },
    nativeEncoder: () => NATIVE_ENCODER,
    // A response made with `store: false` is kept nowhere upstream: nothing to refer to again, nothing recorded.
    ownNative: (ids, call) =>
      (call.body as ResponsesRequest).store === false ? Promise.resolve() : ownership.record(call.caller, ids),
    // A data line is one JSON object (it ends with `}`), so only an event line can end with these names.
    isCompleteEnd: (frame) =>
      frame.includes('event: response.completed\n') || frame.includes('event: response.incomplete\n'),
  };
}

/** A file_search tool the gateway runs. */
type FileSearchPlanned = Extract<FileSearchPlan, { kind: 'gateway' }>;

/**
 * The tools the gateway runs for the request. A file_search tool on the caller's stores here is run by the gateway;
 * on stores it does not hold, it goes to an upstream that speaks the API (the caller's own OpenAI stores), or is a
 * 404. An mcp tool naming a server of this gateway is run by the gateway; any other goes to an upstream that speaks
 * the API (OpenAI calls a public server itself), or is refused (no outbound connection a caller chooses).
 */
async function planGatewayTools(
  request: ResponsesRequest,
  call: SurfaceCall,
  native: boolean,
  options: ResponsesSurfaceOptions,
): Promise<{ gatewaySearch: FileSearchPlanned | undefined; gatewayMcp: McpToolLoop | undefined; goesNative: boolean }> {
  const search = await planFileSearch(request.tools, options.fileSearch, call);
  if (search.kind === 'not_ours' && !native) throw search.error;
  const mcpPlan = await planResponsesMcp(request, options.mcp, call, native);
  if (mcpPlan.kind === 'not_ours' && !native) throw mcpPlan.error;
  const gatewaySearch = search.kind === 'gateway' ? search : undefined;
  const gatewayMcp = mcpPlan.kind === 'gateway' ? mcpPlan.loop : undefined;
  if (gatewayMcp && gatewaySearch)
    throw new GatewayError('capability_not_supported', {
      field: 'tools',
      problem: 'a file_search tool and mcp tools run by the gateway cannot be combined in one request',
    });
  return { gatewaySearch, gatewayMcp, goesNative: search.kind === 'not_ours' || mcpPlan.kind === 'not_ours' };
}

/**
 * The input without references to searches the gateway ran that it does not hold (the AI SDK sends one per earlier
 * `file_search_call` while `store` is on): their passages went into that answer; a translated upstream needs nothing.
 */
function withoutSearchReferences(input: ResponsesInputItem[]): ResponsesInputItem[] {
  return input.filter(
    (item) => !(item.type === 'item_reference' && typeof item.id === 'string' && item.id.startsWith('fs_')),
  );
}

/** The chat request offered the search function, its calls run by `loop` (a caller's function may not take its name). */
function offerSearch(chat: ChatRequestBody, names: ToolNames, call: SurfaceCall, loop: FileSearchLoop): void {
  if (names.callerTool(FILE_SEARCH_FUNCTION_NAME) !== undefined)
    throw new GatewayError('validation_failed', {
      field: 'tools',
      problem: `a function named "${FILE_SEARCH_FUNCTION_NAME}" cannot be declared with a file_search tool`,
    });
  chat.tools = [...(chat.tools ?? []), FILE_SEARCH_FUNCTION];
  call.loop = loop;
}

/** A reference to a stored response on a gateway that keeps none (`responses.store: false`). */
function keepsNoResponses(field: string): GatewayError {
  return new GatewayError('capability_not_supported', {
    field,
    problem: 'this gateway keeps no responses (responses.store is false in its config)',
  });
}

async function save(
  history: ResponseHistory | undefined,
  call: SurfaceCall,
  state: ResponsesCallState,
  response: ResponseObject,
  json: string,
): Promise<void> {
  if (!history || !response.store) return;
  const { request, previous, input, names } = state;
  await history.save(call.caller, { request, previous, input, response, responseText: json, names });
}

/** The caller's body in UTF-8 bytes (what its body limit counted); 0 when the pipeline kept no raw text. */
function requestBytes(call: SurfaceCall): number {
  return call.rawBody === undefined ? 0 : Buffer.byteLength(call.rawBody);
}

/**
 * The request as it goes to a native upstream: untouched, unless it continues a conversation the gateway holds
 * (then that conversation leads its input, and `previous_response_id`, unknown upstream, is dropped) or referred to
 * items the gateway holds (`rewritten`: those items replace the references).
 */
function nativeForward(request: ResponsesRequest, ours: ChatMessage[] | undefined, rewritten: boolean): NativeForward {
  if (!ours) return new NativeForward(request, !rewritten);
  const { previous_response_id: _previous, ...rest } = request;
  const input = typeof request.input === 'string' ? [{ role: 'user', content: request.input }] : request.input;
  return new NativeForward({ ...rest, input: [...conversationAsItems(ours), ...input] }, false);
}
