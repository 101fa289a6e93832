/**
 * JSON Schema of a Responses request body, compiled once by Fastify (Ajv). It checks the types of the fields the
 * gateway reads; what an item or a tool may be depends on its `type`, and the translation checks that
 * (request-to-chat.ts), naming the item. Fields it does not list reach the translation, which refuses the
 * ones it cannot honour.
 */
const nullable = (type: string) => ({ type: [type, 'null'] });

export const responsesBodySchema = {
  type: 'object',
  required: ['model', 'input'],
  properties: {
    model: { type: 'string', minLength: 1, maxLength: 256 },
    input: { type: ['string', 'array'], items: { type: 'object' } },
    instructions: nullable('string'),
    tools: { type: 'array', items: { type: 'object', required: ['type'], properties: { type: { type: 'string' } } } },
    tool_choice: { type: ['string', 'object'] },
    parallel_tool_calls: nullable('boolean'),
    temperature: { type: ['number', 'null'], minimum: 0, maximum: 2 },
    top_p: { type: ['number', 'null'], minimum: 0, maximum: 1 },
    max_output_tokens: { type: ['integer', 'null'], minimum: 1 },
    text: { type: ['object', 'null'], properties: { format: { type: ['object', 'null'], required: ['type'], properties: { type: { type: 'string' } } } } },
    reasoning: { type: ['object', 'null'], properties: { effort: nullable('string'), summary: nullable('string') } },
    metadata: { type: ['object', 'null'], maxProperties: 16, additionalProperties: { type: 'string', maxLength: 512 } },
    store: nullable('boolean'),
    previous_response_id: { type: ['string', 'null'], maxLength: 256 },
    stream: nullable('boolean'),
    user: { type: 'string', maxLength: 256 },
    include: { type: ['array', 'null'], items: { type: 'string' } },
  },
} as const;
