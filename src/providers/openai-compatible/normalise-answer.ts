/**
 * Makes what the gateway and the surfaces read of an OpenAI-compatible answer well formed, once, as the provider
 * reads it: a stream's chunk (its choices carry a `delta`) and a whole `chat.completion` (a `message`) have the
 * same shape, so one set of rules serves both. Every surface (chat, Responses, Messages) then sees the same answer,
 * and none has to guard against shapes the chat API never sends. What is changed carries nothing the upstream
 * meant, so it is translated rather than refused:
 *
 * - a choice that is not an object is dropped;
 * - a missing, null or non-object `delta` is an empty delta (some servers end with a bare
 *   `{"index":0,"finish_reason":"stop"}`), a missing, null or non-object `message` an empty assistant message;
 * - a `tool_calls` entry that is not an object is dropped (`tool_calls` itself when nothing is left), and a
 *   `tool_calls` that is neither an array nor null is removed;
 * - a `usage` that is not an object is `null`, as if the upstream had reported none. The counts inside a usage
 *   object are not judged here: usage-figures.ts corrects each one out of range (clamped, flagged on the record)
 *   so limits, prices, records and metrics never add up text, negative or huge counts;
 * - a missing `model` is `sentModel`, the name the gateway asked the upstream for: an answer names the model that
 *   answered, the upstream's word for it, else the one it was asked for (docs/compatibility.md, "Which model an
 *   answer names"), as the Anthropic and Gemini translations do. An empty `model` (Azure's content-filter chunk) is
 *   left as it came: it is the upstream's, and a later chunk names the model.
 *
 * The fields inside a tool call (`id`, `function`, `arguments`) are left as they came: the chat API passes them on,
 * and the surfaces that translate them read each by its type (src/surfaces/tool-arguments.ts). Returns whether
 * anything changed (the upstream's own bytes then no longer describe the answer). A few type checks per choice: no
 * cost a stream or an answer would notice next to parsing it.
 */
export function normaliseAnswer(
  record: { choices: unknown[]; usage?: unknown; model?: unknown },
  part: 'delta' | 'message',
  sentModel?: string,
): boolean {
  let changed = false;
  if (record.model === undefined && sentModel !== undefined) {
    record.model = sentModel;
    changed = true;
  }
  let dropped = false;
  for (const choice of record.choices) {
    if (!isObject(choice)) {
      dropped = true;
      continue;
    }
    const content = choice[part];
    if (!isObject(content)) {
      choice[part] = part === 'delta' ? {} : { role: 'assistant', content: null };
      changed = true;
    } else if (normaliseToolCalls(content)) changed = true;
  }
  if (dropped) record.choices = record.choices.filter(isObject);
  if (record.usage !== undefined && record.usage !== null && !isObject(record.usage)) {
    record.usage = null;
    changed = true;
  }
  return changed || dropped;
}

function normaliseToolCalls(content: Record<string, unknown>): boolean {
  const calls = content.tool_calls;
  if (calls === undefined || calls === null) return false;
  if (!Array.isArray(calls)) {
    delete content.tool_calls;
    return true;
  }
  if (calls.every(isObject)) return false;
  const kept = calls.filter(isObject);
  if (kept.length > 0) content.tool_calls = kept;
  else delete content.tool_calls;
  return true;
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
