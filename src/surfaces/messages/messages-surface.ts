import { randomUUID } from 'node:crypto';
import { NativeForward, passthroughEncoder, type ApiSurface, type SurfaceCall } from '../surface.js';
import type { McpLoopDeps } from '../mcp-tools/mcp-deps.js';
import type { McpToolLoop } from '../mcp-tools/mcp-loop.js';
import { mcpFunctionOf, offerMcp, planMessagesMcp, withoutMcpServers } from './mcp-request.js';
import { mcpToolResultBlock, mcpToolUseBlock } from './mcp-blocks.js';
import { withAnthropicError } from '../../http/anthropic-shape.js';
import { formatEvent } from '../../http/sse.js';
import { completionToMessage } from './chat-to-message.js';
import { MessageStream } from './message-stream.js';
import { messagesToChat, type MessagesRequest } from './request-to-chat.js';
import type { ChatRequestBody } from '../../providers/provider-contract.js';
import { threadPreviousMessageId, type AnthropicAnswerBlock } from '../../wire/anthropic.js';
import { objectOf } from '../../wire/json.js';
import { estimatePromptTokens } from '../../core/tokens/token-estimate.js';
import type { NativeOwnership, NativeReference } from '../native-ownership.js';

/** The caller headers a Messages request forwarded to Anthropic carries upstream (count_tokens too). */
export const ANTHROPIC_FORWARDED_HEADERS: readonly string[] = ['anthropic-version', 'anthropic-beta'];

/** The query a Messages request forwarded to Anthropic carries upstream: `beta=true`, which the SDKs' beta client adds. */
export const ANTHROPIC_FORWARDED_QUERY: readonly string[] = ['beta'];

interface MessagesCallState {
  id: string;
  model: string;
  /** The request as chat: what `message_start` estimates the prompt's tokens of. */
  chat: ChatRequestBody;
  /** The MCP servers the gateway runs for this call (`mcp_servers`), if any. */
  mcp: McpToolLoop | undefined;
}

/**
 * Anthropic's Messages API as a surface of the chat pipeline: a Messages request is translated into a chat
 * request for any provider, and the chat answer back into a Messages object or Anthropic's event stream. Of what
 * Anthropic keeps between calls, a code-execution container (`container`) and a message thread
 * (`thread.previous_message_id`, the reply it continues from) can be named again: a forwarded request may name only
 * one its caller made through the gateway (`ownership`). A translated request's `mcp_servers` naming servers of this
 * gateway are run by the gateway (`mcp`: surfaces/mcp-tools/), the answer carrying `mcp_tool_use` and
 * `mcp_tool_result` blocks as Anthropic's MCP connector does.
 */
export function messagesSurface(
  forwards: (model: string) => boolean,
  ownership: NativeOwnership,
  mcp?: McpLoopDeps,
): ApiSurface {
  return {
    route: 'messages',
    forwardsRawBody: false,
    nativeHeaders: ANTHROPIC_FORWARDED_HEADERS,
    nativeQuery: ANTHROPIC_FORWARDED_QUERY,
    nativeEncoder: () => NATIVE_MESSAGES_ENCODER,
    ownNative: (ids, call) => ownership.record(call.caller, ids),
    toChat(body, call) {
      const request = body as MessagesRequest;
      const native = forwards(request.model);
      // MCP servers of this gateway are run by it, whoever serves the model; others are Anthropic's to call.
      if (request.mcp_servers !== undefined && request.mcp_servers !== null && mcp)
        return translatedWithMcp(request, call, mcp, native).then(
          (chat) => chat ?? forwardNatively(request, call, ownership),
        );
      // To Anthropic itself, always as it is: thinking blocks and signatures, cache_control, server tools, betas.
      if (native) return forwardNatively(request, call, ownership);
      const chat = messagesToChat(request, call.notes);
      call.state = newState(request, chat, undefined);
      return chat;
    },
    answer(completion, call) {
      const state = call.state as MessagesCallState;
      const message = completionToMessage(completion.toString('utf8'), state.id, state.model);
      if (state.mcp) message.content = [...mcpContent(state.mcp), ...message.content];
      return JSON.stringify(message);
    },
    encoder(call) {
      const state = call.state as MessagesCallState;
      const estimate = estimatePromptTokens(state.chat.messages, state.chat.tools);
      return new MessageStream(state.id, state.model, estimate, state.mcp);
    },
    // A data line is one JSON object (it ends with `}`), so only an event line can end with this name.
    isCompleteEnd: (frame) => frame.includes('event: message_stop\n'),
  };
}

/** The request as it is, to Anthropic (only the container and thread ids its caller made there may be named). */
function forwardNatively(
  request: MessagesRequest,
  call: SurfaceCall,
  ownership: NativeOwnership,
): NativeForward | Promise<NativeForward> {
  const forward = new NativeForward(request, true, countable(request));
  const references = nativeReferences(request);
  return references.length > 0 ? ownership.check(call.caller, references).then(() => forward) : forward;
}

function newState(request: MessagesRequest, chat: ChatRequestBody, mcp: McpToolLoop | undefined): MessagesCallState {
  return { id: `msg_${randomUUID().replaceAll('-', '')}`, model: request.model, chat, mcp };
}

/**
 * A request whose `mcp_servers` the gateway runs: their tools offered, their calls run by the loop (undefined: the
 * servers are not all this gateway's, and the model is Anthropic's, which calls them itself).
 */
async function translatedWithMcp(
  request: MessagesRequest,
  call: SurfaceCall,
  deps: McpLoopDeps,
  native: boolean,
): Promise<ChatRequestBody | undefined> {
  const loop = await planMessagesMcp(request, deps, call, native);
  if (loop === 'native') return undefined;
  const chat = messagesToChat(
    loop ? withoutMcpServers(request) : request,
    call.notes,
    loop ? mcpFunctionOf(loop) : undefined,
  );
  if (loop) offerMcp(chat, call, loop);
  call.state = newState(request, chat, loop);
  return chat;
}

/** The calls the gateway made, each its `mcp_tool_use` and `mcp_tool_result` blocks, before the answer's content. */
function mcpContent(loop: McpToolLoop): AnthropicAnswerBlock[] {
  return loop.calls.flatMap((run) => [mcpToolUseBlock(run), mcpToolResultBlock(run)]);
}

/** A Messages stream forwarded from Anthropic: a failure after the first event is one `error` event in Anthropic's shape (with our code) and no `message_stop`. */
const NATIVE_MESSAGES_ENCODER = passthroughEncoder((error) =>
  formatEvent(JSON.stringify(withAnthropicError(error.toBody(), error.status)), { event: 'error' }),
);

/**
 * The request as chat for the context-window check (no notes: nothing is dropped from a forwarded request); undefined
 * when it holds what chat cannot express, or what the translation refuses (a new block, role or field).
 */
function countable(request: MessagesRequest): ChatRequestBody | undefined {
  try {
    return messagesToChat(request);
  } catch {
    return undefined; // Anthropic checks such a request itself
  }
}

/**
 * What a request names of what Anthropic keeps: the container it reuses (`container` as its id, or `{id, skills}`)
 * and the thread's reply it continues from (`thread.previous_message_id`; someone else's, or one never seen, is a
 * 404 with Anthropic's `thread_not_found`, on which its SDKs send the whole conversation under a new thread).
 */
function nativeReferences(request: MessagesRequest): NativeReference[] {
  const references: NativeReference[] = [];
  const container = request.container;
  const id = typeof container === 'object' && container !== null ? objectOf(container)?.id : container;
  if (typeof id === 'string') references.push({ id, field: 'container' });
  const previous = threadPreviousMessageId(request);
  if (typeof previous === 'string')
    references.push({
      id: previous,
      field: 'thread.previous_message_id',
      errorDetails: { error_code: 'thread_not_found' },
    });
  return references;
}
