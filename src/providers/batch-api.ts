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
