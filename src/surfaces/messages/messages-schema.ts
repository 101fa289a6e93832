import { tokenCountSchema } from '../../providers/request-bounds.js';

/**
 * JSON Schemas of an Anthropic Messages body, compiled once each (Ajv). The route's schema checks only what the
 * gateway reads on every path: the model, `max_tokens` and `stream` (routing, limits, the estimate), and the shape
 * of `messages` and `system` (the context-window check counts them). Everything else is Anthropic's to judge when
 * the request is forwarded to it: a new field, enum value, role or block passes untouched (Claude Code sends
 * `thinking: {type: "adaptive"}` and `role: "system"` messages months before a schema lists them). A request that
 * is translated for another provider is checked against the translation's schema too (request-to-chat.ts).
 */
const block = { type: 'object', required: ['type'], properties: { type: { type: 'string', minLength: 1 } } } as const;

/** `POST /v1/messages/count_tokens`: a Messages request without `max_tokens` (and without `stream`). */
export function countTokensBodySchema() {
  return { ...messagesBodySchema, required: ['model', 'messages'] } as const;
}

export const messagesBodySchema = {
  type: 'object',
  required: ['model', 'max_tokens', 'messages'],
  properties: {
    model: { type: 'string', minLength: 1, maxLength: 256 },
    max_tokens: tokenCountSchema,
    messages: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        required: ['role', 'content'],
        properties: { role: { type: 'string', minLength: 1 }, content: { type: ['string', 'array'], items: block } },
      },
    },
    system: { type: ['string', 'array'], items: block },
    stream: { type: 'boolean' },
  },
} as const;

/**
 * What the translation reads, by type: checked only when the request goes to a non-Anthropic upstream (or is
 * counted by the gateway). A value of the right type that the translation cannot honour is its own 400, naming it.
 */
export const translatedMessagesSchema = {
  type: 'object',
  properties: {
    ...messagesBodySchema.properties,
    tools: {
      type: 'array',
      items: {
        type: 'object',
        required: ['name'],
        properties: {
          name: { type: 'string', minLength: 1, maxLength: 128 },
          type: { type: 'string' },
          input_schema: { type: 'object' },
          description: { type: 'string' },
        },
      },
    },
    tool_choice: {
      type: 'object',
      required: ['type'],
      properties: {
        type: { type: 'string', enum: ['auto', 'any', 'tool', 'none'] },
        name: { type: 'string' },
        disable_parallel_tool_use: { type: 'boolean' },
      },
    },
    stop_sequences: { type: 'array', items: { type: 'string' }, maxItems: 64 },
    temperature: { type: 'number', minimum: 0, maximum: 1 },
    top_p: { type: 'number', minimum: 0, maximum: 1 },
    top_k: { type: 'integer', minimum: 0 },
    thinking: {
      type: 'object',
      required: ['type'],
      properties: {
        type: { type: 'string', minLength: 1 },
        budget_tokens: { type: 'integer', minimum: 1 },
        display: { type: 'string' },
      },
    },
    output_config: {
      type: 'object',
      properties: {
        effort: { type: ['string', 'null'], minLength: 1, maxLength: 32 },
        format: { type: ['object', 'null'] },
      },
    },
    context_management: { type: ['object', 'null'] },
    metadata: { type: 'object', properties: { user_id: { type: ['string', 'null'], maxLength: 256 } } },
  },
} as const;
