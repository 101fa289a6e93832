import { dimensionsSchema } from '../providers/request-bounds.js';

/**
 * JSON Schema of an embeddings body (OpenAI's shape), compiled once by Fastify. `input` is a string, a list of
 * strings, a list of token ids, or a list of token-id lists (2,048 entries at most, as OpenAI allows). Unknown
 * fields pass through to an OpenAI-compatible upstream.
 */
const tokenIds = { type: 'array', minItems: 1, items: { type: 'integer', minimum: 0 } } as const;

export const embeddingsBodySchema = {
  type: 'object',
  required: ['model', 'input'],
  properties: {
    model: { type: 'string', minLength: 1, maxLength: 256 },
    input: {
      anyOf: [
        { type: 'string' },
        { type: 'array', minItems: 1, maxItems: 2048, items: { type: 'string' } },
        { type: 'array', minItems: 1, maxItems: 2048, items: { type: 'integer', minimum: 0 } },
        { type: 'array', minItems: 1, maxItems: 2048, items: tokenIds },
      ],
    },
    dimensions: dimensionsSchema,
    encoding_format: { type: 'string', enum: ['float', 'base64'] },
    user: { type: 'string', maxLength: 256 },
  },
} as const;
