/** The OpenAI Responses API's shapes live in src/wire/openai-responses.ts; the tests name them here too. */
export type { OutputItem, ResponseObject, ResponsesRequest } from '../../wire/openai-responses.js';
