import { choicesSchema, tokenCountSchema } from '../providers/request-bounds.js';

/**
 * JSON Schema of the chat body, compiled once by Fastify (Ajv) so validation on the hot path is generated code.
 * Unknown top-level fields are allowed and passed through to the provider (new provider parameters keep working
 * without a gateway release); known fields are checked strictly, with no type coercion.
 */
const contentPart = {
  type: 'object',
  required: ['type'],
  properties: { type: { type: 'string', minLength: 1 } },
} as const;

const toolCall = {
  type: 'object',
  required: ['id', 'type', 'function'],
  properties: {
    id: { type: 'string', minLength: 1 },
    type: { type: 'string', enum: ['function'] },
    function: {
      type: 'object',
      required: ['name', 'arguments'],
      properties: { name: { type: 'string', minLength: 1 }, arguments: { type: 'string' } },
    },
  },
} as const;

const message = {
  type: 'object',
  required: ['role'],
  properties: {
    role: { type: 'string', enum: ['system', 'developer', 'user', 'assistant', 'tool'] },
    content: { type: ['string', 'array', 'null'], items: contentPart },
    name: { type: 'string', minLength: 1, maxLength: 256 },
    tool_call_id: { type: 'string', minLength: 1 },
    tool_calls: { type: 'array', items: toolCall },
  },
} as const;

/** A function tool, or (a gateway extension: surfaces/file-search/) a `file_search` tool on the caller's vector stores. */
const tool = {
  type: 'object',
  required: ['type'],
  properties: { type: { type: 'string', enum: ['function', 'file_search'] } },
  if: { properties: { type: { const: 'function' } } },
  then: {
    required: ['function'],
    properties: {
      function: {
        type: 'object',
        required: ['name'],
        properties: {
          // OpenAI's rule for function names.
          name: { type: 'string', pattern: '^[a-zA-Z0-9_-]{1,64}$' },
          description: { type: 'string' },
          parameters: { type: 'object' },
          strict: { type: ['boolean', 'null'] },
        },
      },
    },
  },
  else: {
    required: ['vector_store_ids'],
    properties: {
      vector_store_ids: {
        type: 'array',
        minItems: 1,
        maxItems: 16,
        items: { type: 'string', minLength: 1, maxLength: 256 },
      },
      max_num_results: { type: 'integer', minimum: 1, maximum: 50 },
      filters: { type: ['object', 'null'] },
      ranking_options: { type: ['object', 'null'] },
    },
  },
} as const;

export const chatBodySchema = {
  type: 'object',
  required: ['model', 'messages'],
  properties: {
    model: { type: 'string', minLength: 1, maxLength: 256 },
    messages: { type: 'array', minItems: 1, items: message },
    temperature: { type: 'number', minimum: 0, maximum: 2 },
    top_p: { type: 'number', minimum: 0, maximum: 1 },
    // Bounded (providers/request-bounds.ts): each reaches the admission estimate, limits and budgets.
    max_tokens: tokenCountSchema,
    max_completion_tokens: { ...tokenCountSchema, type: ['integer', 'null'] },
    n: { ...choicesSchema, type: ['integer', 'null'] },
    stream: { type: 'boolean' },
    stream_options: { type: ['object', 'null'] },
    tools: { type: 'array', items: tool },
    tool_choice: {
      type: ['string', 'object'],
      if: { type: 'string' },
      then: { enum: ['none', 'auto', 'required'] },
      else: {
        required: ['type', 'function'],
        properties: {
          type: { type: 'string', enum: ['function'] },
          function: { type: 'object', required: ['name'], properties: { name: { type: 'string', minLength: 1 } } },
        },
      },
    },
  },
} as const;
