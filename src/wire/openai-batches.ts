/**
 * OpenAI's Batch API on the wire (https://platform.openai.com/docs/api-reference/batch), both directions: the
 * gateway answers callers with these shapes (routes/batch-views.ts) and sends them to an OpenAI upstream when it
 * forwards a batch there (providers/openai-compatible/openai-batches-client.ts).
 */

export type OpenAiBatchStatus =
  'validating' | 'failed' | 'in_progress' | 'finalizing' | 'completed' | 'expired' | 'cancelling' | 'cancelled';

/** `POST /v1/batches`. */
export interface OpenAiBatchCreate {
  input_file_id: string;
  endpoint: string;
  completion_window: '24h';
  metadata?: Record<string, string>;
}

/** The Batch object (only what the gateway reads of an upstream's is required). */
export interface OpenAiBatchObject {
  id: string;
  object: 'batch';
  endpoint: string;
  status: OpenAiBatchStatus;
  input_file_id: string;
  output_file_id?: string | null;
  error_file_id?: string | null;
  errors?: {
    object: 'list';
    data: Array<{ code?: string; message?: string; param?: string | null; line?: number | null }>;
  } | null;
  metadata?: Record<string, string> | null;
  request_counts?: { total: number; completed: number; failed: number };
}

/** One line of a batch's input file. */
export interface OpenAiBatchInputLine {
  custom_id: string;
  method: 'POST';
  url: string;
  body: Record<string, unknown>;
}

/** One line of a batch's output or error file. */
export interface OpenAiBatchOutputLine {
  id: string;
  custom_id: string;
  response: { status_code: number; request_id: string | null; body: unknown } | null;
  error: { code?: string; message?: string } | null;
}
