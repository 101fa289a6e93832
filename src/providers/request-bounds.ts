import { MAX_USAGE_TOKENS } from './usage-figures.js';

/**
 * Bounds of the numbers a caller sends that reach a limit, a budget, a price or a store (one `max_tokens` of 1e15
 * once switched its key's limits off). Every surface's schema uses these, so a request past one is a
 * `400 validation_failed` naming the field, and the admission estimate is bounded again in core (a native body is
 * read where no schema checked every field).
 */

/** A token count a caller may ask for (`max_tokens`, `max_output_tokens`, `maxOutputTokens`): the usage bound. */
export const MAX_REQUEST_TOKENS = MAX_USAGE_TOKENS;

/** Choices per call (`n`, Gemini's `candidateCount`): OpenAI's own bound. */
export const MAX_CHOICES = 128;

/** An embedding's size (`dimensions`, Gemini's `outputDimensionality`): the config's bound for a model's own. */
export const MAX_EMBEDDING_DIMENSIONS = 100_000;

/** JSON Schema of a token count a caller asks for. */
export const tokenCountSchema = { type: 'integer', minimum: 1, maximum: MAX_REQUEST_TOKENS } as const;

/** JSON Schema of a number of choices. */
export const choicesSchema = { type: 'integer', minimum: 1, maximum: MAX_CHOICES } as const;

/** JSON Schema of an embedding's size. */
export const dimensionsSchema = { type: 'integer', minimum: 1, maximum: MAX_EMBEDDING_DIMENSIONS } as const;
