import { isJsonObject } from '../../wire/json.js';

/** Anthropic's structured output: `output_config.format`, a JSON Schema the answer's text must follow. */
export interface AnthropicOutputFormat {
  type: 'json_schema';
  schema: Record<string, unknown>;
}

/**
 * A chat body's `response_format` as Anthropic's `output_config.format`, for a model that takes it; undefined when
 * there is nothing to send. Only `json_schema` has an equivalent (its `schema`); `json_object` (JSON of any shape)
 * and `text` have none and stay as before: not sent (docs/messages.md, "Structured output to Anthropic").
 */
export function anthropicFormatOf(responseFormat: unknown, model: string): AnthropicOutputFormat | undefined {
  if (!isJsonObject(responseFormat) || responseFormat.type !== 'json_schema') return undefined;
  const spec = responseFormat.json_schema;
  if (!isJsonObject(spec) || !isJsonObject(spec.schema)) return undefined;
  return takesStructuredOutput(model) ? { type: 'json_schema', schema: spec.schema } : undefined;
}

/**
 * Whether a model takes `output_config.format`: Claude from generation 4.5 on (and Opus 4.1), and any model whose
 * name does not say a Claude generation (an Anthropic-compatible server's own, or a name the operator chose): it gets
 * the field and its upstream judges it, rather than an answer that silently ignores the schema. An older Claude
 * (3.x, 4, Sonnet 4.1) would refuse the field, so it goes without it, as before.
 */
export function takesStructuredOutput(model: string): boolean {
  const match = /^claude-(?:(opus|sonnet|haiku|fable|mythos)-(\d{1,2})(?:-(\d{1,2})(?!\d))?|(\d)-(\d)?)/.exec(model);
  if (!match) return true;
  if (match[1] === undefined) return false; // claude-3-5-sonnet, claude-3-haiku: the 3.x names
  const major = Number(match[2]);
  const minor = match[3] === undefined ? 0 : Number(match[3]);
  if (major > 4) return true;
  if (major < 4) return false;
  return minor >= 5 || (match[1] === 'opus' && minor >= 1);
}
