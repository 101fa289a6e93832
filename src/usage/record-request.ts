import type { FastifyRequest } from 'fastify';
import type { UsageRecord } from '../store/contract.js';
import type { UsageRecorder } from './usage-recorder.js';
import { upstreamOf } from '../http/request-state.js';

/** One usage record per API request, built when the answer has been sent and handed to the recorder. */
export function usageObserver(recorder: UsageRecorder, environment: string): (request: FastifyRequest, status: number, latencyMs: number) => void {
  return (request, status, latencyMs) => recorder.add(usageRecordOf(request, status, latencyMs, environment));
}

/** `latency`: arrival to now, in ms (measured once for every observer of the request). */
export function usageRecordOf(request: FastifyRequest, status: number, latency: number, environment: string): UsageRecord {
  const usage = request.usage;
  const body = request.body as { stream?: unknown } | undefined;
  return {
    timeMs: Math.round(Date.now() - latency),
    requestId: request.id,
    caller: request.caller,
    environment,
    route: request.routeName ?? 'unknown',
    model: request.chatModel ?? null,
    upstream: upstreamOf(request) ?? null,
    status,
    code: request.errorCode ?? null,
    latencyMs: Math.round(latency * 100) / 100,
    ttfbMs: request.firstByteMs ?? null,
    stream: body?.stream === true,
    promptTokens: usage?.prompt_tokens ?? null,
    completionTokens: usage?.completion_tokens ?? null,
    costUsd: usage?.cost_usd ?? null,
    attempts: request.attempts,
    replay: request.replayed,
  };
}
