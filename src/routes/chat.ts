import { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ChatService, StartedStream } from '../core/chat-service.js';
import type { CallScope } from '../core/call-scope.js';
import { DONE_FRAME, SSE_HEADERS, formatErrorEvent, formatEvent } from '../http/sse.js';
import { toGatewayError } from '../http/error-handler.js';
import { CLIENT_CLOSED_STATUS, logAccess } from '../http/access-log.js';
import type { ChatRequestBody, StreamChunk } from '../providers/contract.js';
import { ClientGoneError } from '../errors/client-gone.js';
import { checkConversation, readUpstreamKey } from './chat-rules.js';

/** POST /v1/?route=chat: validated body in, OpenAI `chat.completion` JSON or a `chat.completion.chunk` SSE stream out. */
export function makeChatHandler(chat: ChatService, bodyLimitBytes: number) {
  return async function handleChat(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const body = request.body as ChatRequestBody;
    request.chatModel = body.model;
    checkConversation(body);
    const call = {
      caller: request.caller,
      upstreamKey: readUpstreamKey(request.headers['x-upstream-key']),
      requestId: request.id,
      rawBody: request.rawBody,
    };
    if (body.stream === true) return streamAnswer(request, reply, await chat.stream(body, call), bodyLimitBytes);

    const { result, headers } = await chat.complete(body, call, (scope, upstream) => {
      request.upstreamName = upstream;
      cancelWhenClientLeaves(reply, scope);
    });
    return reply.headers(headers).type(request.responseType).send(result.body);
  };
}

/**
 * Streams an answer. Nothing is sent until the first chunk arrives, so an upstream that fails before it answers
 * still gets a proper JSON error with its own status. After that the status is committed: a failure becomes one
 * final `event: error` and the stream ends WITHOUT `[DONE]`, so a client never mistakes a cut answer for a
 * complete one. `Readable.from` pulls one chunk at a time, so a slow client stalls the upstream read (TCP
 * backpressure) instead of growing memory.
 */
async function streamAnswer(
  request: FastifyRequest,
  reply: FastifyReply,
  started: StartedStream,
  bodyLimitBytes: number,
): Promise<FastifyReply> {
  const { scope, chunks, upstream } = started;
  request.upstreamName = upstream;
  cancelWhenClientLeaves(reply, scope);
  let first: IteratorResult<StreamChunk>;
  try {
    first = await chunks.next();
  } catch (error) {
    await started.finish(undefined);
    throw error;
  }
  void reply.headers(started.headers).headers(SSE_HEADERS);
  return reply.send(Readable.from(sseFrames(first, started, request, bodyLimitBytes), { objectMode: false }));
}

async function* sseFrames(
  first: IteratorResult<StreamChunk>,
  started: StartedStream,
  request: FastifyRequest,
  bodyLimitBytes: number,
): AsyncGenerator<string> {
  const { chunks, scope } = started;
  let finished = false;
  let totalTokens: number | undefined;
  try {
    let next = first;
    while (next.done !== true) {
      totalTokens = next.value.chunk.usage?.total_tokens ?? totalTokens;
      yield formatEvent(next.value.json ?? JSON.stringify(next.value.chunk));
      next = await chunks.next();
    }
    finished = true;
    yield DONE_FRAME;
  } catch (error) {
    if (error instanceof ClientGoneError || scope.signal.reason instanceof ClientGoneError) return;
    const failure = toGatewayError(error, bodyLimitBytes);
    request.errorCode = failure.code;
    request.log.warn({ code: failure.code, details: failure.details }, 'stream failed after it started');
    yield formatErrorEvent(failure.toBody());
  } finally {
    await started.finish(totalTokens);
    if (!finished) await chunks.return?.();
    if (scope.signal.reason instanceof ClientGoneError) {
      request.errorCode = 'client_closed_request';
      logAccess(request, CLIENT_CLOSED_STATUS);
    }
  }
}

function cancelWhenClientLeaves(reply: FastifyReply, scope: CallScope): void {
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) scope.clientGone();
  });
}
