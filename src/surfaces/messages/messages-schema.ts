/**
 * JSON Schema of an Anthropic Messages body, compiled once by Fastify (Ajv): the types of what the gateway reads.
 * What a block may hold depends on its `type`; the translation checks that, naming the block.
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
    max_tokens: { type: 'integer', minimum: 1 },
    messages: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        required: ['role', 'content'],
        properties: { role: { type: 'string', enum: ['user', 'assistant'] }, content: { type: ['string', 'array'], items: block } },
      },
    },
    system: { type: ['string', 'array'], items: block },
    tools: { type: 'array', items: { type: 'object', required: ['name'], properties: { name: { type: 'string', minLength: 1, maxLength: 128 }, input_schema: { type: 'object' } } } },
    tool_choice: { type: 'object', required: ['type'], properties: { type: { type: 'string', enum: ['auto', 'any', 'tool', 'none'] }, name: { type: 'string' }, disable_parallel_tool_use: { type: 'boolean' } } },
    stop_sequences: { type: 'array', items: { type: 'string' }, maxItems: 64 },
    temperature: { type: 'number', minimum: 0, maximum: 1 },
    top_p: { type: 'number', minimum: 0, maximum: 1 },
    top_k: { type: 'integer', minimum: 0 },
    thinking: { type: 'object', required: ['type'], properties: { type: { type: 'string', enum: ['enabled', 'disabled'] }, budget_tokens: { type: 'integer', minimum: 1 } } },
    metadata: { type: 'object', properties: { user_id: { type: 'string', maxLength: 256 } } },
    stream: { type: 'boolean' },
  },
} as const;
