import type { GeminiGenerateRequest, GeminiGenerateResponse } from './gemini.js';

/**
 * Gemini's Batch API (generativelanguage `v1beta`) as it goes over the wire: `POST models/{model}:batchGenerateContent`
 * creates a batch and answers a long-running Operation whose `metadata` is the batch; `GET batches/{id}` answers that
 * Operation again (`done`, and the output in `response` once it ended); `GET batches` lists them
 * (`{operations, nextPageToken}`); `POST batches/{id}:cancel`. Field names are Google's JSON mapping (camelCase), as
 * Google's own SDK (js-genai) sends and reads them.
 */

/** One request of an inline batch: the `generateContent` body, and the key the gateway gives it (`line-<index>`). */
export interface GeminiInlinedRequest {
  request: GeminiGenerateRequest;
  metadata: { key: string };
}

/** The body of `batchGenerateContent` with inline requests (under 20 MB in all, Google's bound). */
export interface GeminiBatchCreateRequest {
  batch: {
    displayName: string;
    inputConfig: { requests: { requests: GeminiInlinedRequest[] } };
  };
}

export type GeminiBatchState =
  | 'BATCH_STATE_UNSPECIFIED'
  | 'BATCH_STATE_PENDING'
  | 'BATCH_STATE_RUNNING'
  | 'BATCH_STATE_SUCCEEDED'
  | 'BATCH_STATE_FAILED'
  | 'BATCH_STATE_CANCELLED'
  | 'BATCH_STATE_EXPIRED';

/** google.rpc.Status: `code` is the gRPC code (3 INVALID_ARGUMENT...), not an HTTP status. */
export interface GeminiRpcStatus {
  code: number;
  message: string;
  details?: unknown[];
}

/** One answer of an inline batch, in the order of the requests; `metadata` echoes the request's (when it does). */
export interface GeminiInlinedResponse {
  response?: GeminiGenerateResponse;
  error?: GeminiRpcStatus;
  metadata?: { key?: string };
}

/** Where an ended batch's answers are: inline, or a JSONL file of the Files API (`files/...`). */
export interface GeminiBatchOutput {
  inlinedResponses?: { inlinedResponses: GeminiInlinedResponse[] };
  responsesFile?: string;
}

/** The batch (`GenerateContentBatch`), carried as an Operation's `metadata`. */
export interface GeminiBatch {
  name: string;
  model: string;
  displayName: string;
  state: GeminiBatchState;
  output?: GeminiBatchOutput;
  batchStats?: Record<string, string>;
}

/** The long-running Operation the create and the get answer. */
export interface GeminiBatchOperation {
  name: string;
  metadata: GeminiBatch;
  done?: boolean;
  response?: GeminiBatchOutput;
  error?: GeminiRpcStatus;
}

export interface GeminiBatchList {
  operations: GeminiBatchOperation[];
  nextPageToken?: string;
}

/** One line of a responses file: the request's key and its answer or error. */
export interface GeminiBatchFileLine {
  key?: string;
  response?: GeminiGenerateResponse;
  error?: GeminiRpcStatus;
}

/** gRPC code → HTTP status, Google's canonical mapping (google/rpc/code.proto). Anything else: 500. */
const HTTP_OF_RPC: Readonly<Record<number, number>> = {
  1: 499,
  2: 500,
  3: 400,
  4: 504,
  5: 404,
  6: 409,
  7: 403,
  8: 429,
  9: 400,
  10: 409,
  11: 400,
  12: 501,
  13: 500,
  14: 503,
  15: 500,
  16: 401,
};

export function httpStatusOfRpc(code: unknown): number {
  return (typeof code === 'number' ? HTTP_OF_RPC[code] : undefined) ?? 500;
}
