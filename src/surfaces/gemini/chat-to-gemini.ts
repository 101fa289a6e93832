import type { Usage } from '../../providers/provider-contract.js';
import { checkedUsage } from '../../providers/usage-figures.js';
import { geminiUsageOf } from '../../providers/usage-shapes.js';
import type { GeminiCandidate, GeminiGenerateResponse, GeminiPart, GeminiUsageMetadata } from '../../wire/gemini.js';
import { geminiFinishReasonOf } from '../../wire/gemini-values.js';
import { argumentsObject, completionToolCalls, cutShort, invalidArguments } from '../tool-arguments.js';

/** What every answer and stream event of one call repeats: the id the gateway gave it, and the model. */
export interface GeminiAnswerIds {
  responseId: string;
  /** The model the URL named: `modelVersion` when the upstream named none. */
  model: string;
}

/** Gemini's usageMetadata of a chat usage, every figure checked (an OpenAI usage's `*_details` become its parts). */
export function geminiUsage(reported: Usage | null | undefined): GeminiUsageMetadata {
  return geminiUsageOf(checkedUsage(reported ?? { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 }));
}

/**
 * A tool call as Gemini's `functionCall` part, whole: its id (the upstream's, else one made from the answer's id
 * and its place, which Gemini CLI then sends back in the call and its response), name, and arguments as the
 * object Gemini carries (src/surfaces/tool-arguments.ts: not a JSON object is `upstream_invalid_response`; in an
 * answer cut short, the cut call's args are `{}`).
 */
export function functionCallPart(call: { id: string; name: string; arguments: string }, cut: boolean): GeminiPart {
  const args = argumentsObject(call.arguments);
  if (args === undefined && !cut) throw invalidArguments(call.id);
  return { functionCall: { id: call.id, name: call.name, args: args ?? {} } };
}

/** The id of a call that came without one: from the answer's id, the candidate and the call's place. */
export function answerCallId(responseId: string, candidate: number, call: number): string {
  return `call_${responseId}_${candidate}_${call}`;
}

/** A completion as the providers hand it on (src/providers/openai-compatible/normalise-answer.ts); calls read by their types. */
interface ChatCompletionBody {
  model?: unknown;
  choices?: Array<{
    index?: unknown;
    message?: { content?: unknown; tool_calls?: unknown };
    finish_reason?: string | null;
  }>;
  usage?: Usage | null;
}

/**
 * A `chat.completion` (JSON text) as a GenerateContentResponse: one candidate per choice, its text as a text part
 * (an empty one when it said nothing and called nothing, as Gemini's final parts can be) and each tool call as a
 * `functionCall` part; the finish reason as Gemini's (a turn that called a tool ends with STOP); the usage as
 * `usageMetadata`; the upstream's model as `modelVersion`.
 */
export function completionToGemini(completionText: string, ids: GeminiAnswerIds): GeminiGenerateResponse {
  const completion = JSON.parse(completionText) as ChatCompletionBody;
  const choices = Array.isArray(completion.choices) ? completion.choices : [];
  const candidates = choices.map((choice, i): GeminiCandidate => {
    const index = typeof choice.index === 'number' ? choice.index : i;
    const text = typeof choice.message?.content === 'string' ? choice.message.content : '';
    const cut = cutShort(choice.finish_reason);
    const calls = completionToolCalls(choice.message?.tool_calls).map((call, k) =>
      functionCallPart(
        {
          id: call.id ?? answerCallId(ids.responseId, index, k),
          name: call.name ?? '',
          arguments: call.arguments ?? '',
        },
        cut,
      ),
    );
    const parts: GeminiPart[] = text !== '' || calls.length === 0 ? [{ text }, ...calls] : calls;
    return { content: { role: 'model', parts }, finishReason: geminiFinishReasonOf(choice.finish_reason), index };
  });
  return {
    candidates,
    usageMetadata: geminiUsage(completion.usage),
    modelVersion: typeof completion.model === 'string' ? completion.model : ids.model,
    responseId: ids.responseId,
  };
}
