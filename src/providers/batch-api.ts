import type { Dispatcher } from 'undici';
import { isGatewayError } from '../errors/gateway-error.js';
import { jsonlLines, type JsonlLine } from '../streaming/jsonl-lines.js';
import type { NativeLineResult } from './provider-contract.js';
import { toUpstreamError } from './transport-errors.js';

/**
 * The native batch contract's types live in contract.ts with the rest of the provider contract (NativeBatchApi...);
 * re-exported here with the helpers every implementation shares.
 */
export type {
  NativeBatchApi,
  NativeBatchRequest,
  NativeBatchStatus,
  NativeLineResult,
  NativeSubmission,
} from './provider-contract.js';

/** The upstream's custom id of a line: fixed by its index (a caller's custom_id may not fit the upstream's rules). */
export function nativeCustomId(index: number): string {
  return `line-${index}`;
}

/** The line index of an upstream custom id, or undefined when it is not one the gateway wrote. */
export function indexOfCustomId(customId: unknown): number | undefined {
  if (typeof customId !== 'string') return undefined;
  const match = /^line-(\d{1,9})$/.exec(customId);
  return match ? Number(match[1]) : undefined;
}

/**
 * The results of an upstream's results file (`response`, JSONL): each line (bounded by `maxLineBytes`, a longer one
 * ends the read: an upstream fault) as `resultOf` reads it, skipping those it gives nothing for. A failure to read
 * is the upstream's (a gateway error as it is); the response's body is let go however the read ends.
 */
export async function* resultLines(
  response: Dispatcher.ResponseData,
  maxLineBytes: number,
  upstream: { name: string; signal: AbortSignal },
  resultOf: (line: JsonlLine) => NativeLineResult | undefined,
): AsyncGenerator<NativeLineResult> {
  try {
    for await (const line of jsonlLines(response.body, maxLineBytes)) {
      const result = resultOf(line);
      if (result) yield result;
    }
  } catch (error) {
    if (isGatewayError(error)) throw error;
    throw toUpstreamError(error, upstream.name, upstream.signal);
  } finally {
    response.body.destroy();
  }
}
