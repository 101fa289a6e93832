import { tokenCountSchema } from '../../providers/request-bounds.js';

/**
 * JSON Schema of a Responses request body, compiled once by Fastify (Ajv). It checks only the fields the gateway
 * reads itself, on every path: the model it routes, the input it counts and refers to, `stream`,
 * `max_output_tokens` (the estimate), `previous_response_id` and `store`. A request forwarded natively goes as it
 * is, and its upstream judges the rest of its own API; a translated one has every other field checked by the
 * translation (request-fields.ts), which names each problem as this schema would.
 */
const nullable = (type: string) => ({ type: [type, 'null'] });

export const responsesBodySchema = {
  type: 'object',
  required: ['model', 'input'],
  properties: {
    model: { type: 'string', minLength: 1, maxLength: 256 },
    input: { type: ['string', 'array'], items: { type: 'object' } },
    max_output_tokens: { ...tokenCountSchema, type: ['integer', 'null'] },
    store: nullable('boolean'),
    previous_response_id: { type: ['string', 'null'], maxLength: 256 },
    stream: nullable('boolean'),
  },
} as const;
