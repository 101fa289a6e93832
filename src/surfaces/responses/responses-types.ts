/** The OpenAI Responses API shapes the gateway reads and writes (the subset documented in docs/responses.md). */
import type { ResponsesUsageObject } from '../../providers/usage-shapes.js';

/** A request body that passed `responsesBodySchema` (types checked; items are checked by the translation). */
export interface ResponsesRequest {
  model: string;
  input: string | Array<Record<string, unknown> & { type?: string }>;
  instructions?: string | null;
  tools?: Array<Record<string, unknown>>;
  tool_choice?: unknown;
  parallel_tool_calls?: boolean | null;
  temperature?: number | null;
  top_p?: number | null;
  max_output_tokens?: number | null;
  text?: { format?: unknown; verbosity?: unknown; [field: string]: unknown } | null;
  reasoning?: { effort?: string | null; summary?: string | null; [field: string]: unknown } | null;
  metadata?: Record<string, string> | null;
  store?: boolean | null;
  previous_response_id?: string | null;
  stream?: boolean | null;
  user?: string;
  background?: boolean | null;
  truncation?: string | null;
  top_logprobs?: number | null;
  [field: string]: unknown;
}

/** The Responses API's usage object (src/providers/usage-shapes.ts). */
export type ResponseUsage = ResponsesUsageObject;

export interface OutputText {
  type: 'output_text';
  text: string;
  annotations: unknown[];
  logprobs?: unknown[];
}

export interface Refusal {
  type: 'refusal';
  refusal: string;
}

export interface MessageItem {
  type: 'message';
  id: string;
  status: 'in_progress' | 'completed' | 'incomplete';
  role: 'assistant';
  content: Array<OutputText | Refusal>;
}

export interface FunctionCallItem {
  type: 'function_call';
  id: string;
  call_id: string;
  name: string;
  /** The caller's `namespace` tool the function is in (set only for such a function: Codex needs it to run the call). */
  namespace?: string;
  arguments: string;
  status: 'in_progress' | 'completed' | 'incomplete';
}

/** A call of a freeform (`custom`) tool: its raw text input (Codex's apply_patch: the patch). */
export interface CustomToolCallItem {
  type: 'custom_tool_call';
  id: string;
  call_id: string;
  name: string;
  namespace?: string;
  input: string;
  status: 'in_progress' | 'completed' | 'incomplete';
}

export type OutputItem = MessageItem | FunctionCallItem | CustomToolCallItem;

export type ResponseStatus = 'in_progress' | 'completed' | 'incomplete' | 'failed';

/** The `response` object. */
export interface ResponseObject {
  id: string;
  object: 'response';
  created_at: number;
  status: ResponseStatus;
  error: { code: string; message: string } | null;
  incomplete_details: { reason: string } | null;
  instructions: string | null;
  max_output_tokens: number | null;
  model: string;
  output: OutputItem[];
  parallel_tool_calls: boolean;
  previous_response_id: string | null;
  reasoning: { effort: string | null; summary: string | null };
  store: boolean;
  temperature: number | null;
  text: { format: unknown };
  tool_choice: unknown;
  tools: unknown[];
  top_p: number | null;
  truncation: string;
  usage: ResponseUsage | null;
  user: string | null;
  metadata: Record<string, string>;
}
