import { z } from 'zod';

/** The `batches` section (docs/files.md, "Batches"): how this process runs batch lines. */
export const batchesSectionSchema = z
  .object({
    /** Whether this process runs batch lines (the API answers either way; another process may run them). */
    run: z.boolean().default(true),
    /** Lines in flight per process, across all its batches: the rest of the capacity stays interactive. */
    concurrency: z.number().int().min(1).max(1_000).default(4),
    /** The share of the owner's rate limit a batch may use; past it, its lines wait for the window's reset. */
    rate_share: z.number().gt(0).max(1).default(0.5),
    /** Batches one process works on at once. */
    max_batches: z.number().int().min(1).max(100).default(4),
    /** How long a runner's claim on a batch lasts unrenewed (a dead process's batches are taken over after it). */
    lease_seconds: z.number().min(0.2).max(3_600).default(60),
    /** How often a runner looks for work it was not told of (another process's batches, deferred lines). */
    poll_ms: z.number().int().min(10).max(60_000).default(1_000),
    /** Lines per batch, at most (OpenAI's limit). */
    max_lines: z.number().int().min(1).max(1_000_000).default(50_000),
    /** One line's bytes, at most. */
    max_line_bytes: z
      .number()
      .int()
      .min(1024)
      .max(64 * 1024 * 1024)
      .default(8 * 1024 * 1024),
    /**
     * The body of Anthropic's `POST /v1/messages/batches` (its requests inline), at most: Anthropic's own 256 MB. It
     * is read as a stream, one request at a time (not bounded by server.body_limit_bytes).
     */
    max_create_bytes: z
      .number()
      .int()
      .min(1024)
      .max(1024 * 1024 * 1024)
      .default(256 * 1024 * 1024),
    /**
     * How old an Anthropic create's mark must be before the lines of a create that never got its batch record (a
     * crash part way) are removed (docs/files.md, "How big an Anthropic batch can be"): a younger one may be a create
     * still under way, in this process or another. Keep it above server.request_timeout_seconds.
     */
    create_grace_seconds: z
      .number()
      .min(1)
      .max(30 * 86_400)
      .default(3_600),
    /** How often a batch forwarded to an upstream's own batch API is polled (they take minutes to hours). */
    native_poll_ms: z.number().int().min(10).max(3_600_000).default(30_000),
    /**
     * What a forwarded batch's tokens cost against the model's price: OpenAI, Anthropic and Gemini bill batches at
     * half. Usage records and budgets count the line at this factor.
     */
    native_price_factor: z.number().min(0).max(1).default(0.5),
    /** How long a cancel (or the window's end) waits for the upstream batch to end and give what it did. */
    native_close_wait_seconds: z.number().min(0).max(86_400).default(600),
    /**
     * How long an Anthropic batch's results can be read after its creation (Anthropic's own: 29 days); then
     * `GET .../results` is `404 batch_results_expired` and its lines are removed (docs/files.md, "How long batch
     * results are kept"). Fractions of a day are accepted.
     */
    anthropic_results_retention_days: z.number().positive().max(3_650).default(29),
  })
  .strict()
  .prefault({});

/** The `batches` section as the gateway reads it (GatewayConfig['batches']). */
export interface BatchesConfig {
  run: boolean;
  concurrency: number;
  rateShare: number;
  maxBatches: number;
  leaseMs: number;
  pollMs: number;
  maxLines: number;
  maxLineBytes: number;
  maxCreateBytes: number;
  /** batches.create_grace_seconds in ms. */
  createGraceMs: number;
  nativePollMs: number;
  nativePriceFactor: number;
  nativeCloseWaitMs: number;
  /** batches.anthropic_results_retention_days in ms. */
  anthropicResultsRetentionMs: number;
  /**
   * INSTANCE_ID: this process's instance identity for its batch leases (a restart under the same identity takes
   * its dead predecessor's leases back at once); undefined: the host name and the data folder.
   */
  instanceId: string | undefined;
}

/** INSTANCE_ID, checked: 1 to 200 printable ASCII characters without spaces (empty: unset). */
export function instanceIdOf(
  env: Readonly<Record<string, string | undefined>>,
  problems: string[],
): string | undefined {
  const value = env.INSTANCE_ID;
  if (value === undefined || value === '') return undefined;
  if (/^[\x21-\x7e]{1,200}$/.test(value)) return value;
  problems.push('INSTANCE_ID: 1 to 200 printable ASCII characters, without spaces');
  return undefined;
}

export function toBatches(
  section: z.infer<typeof batchesSectionSchema>,
  instanceId: string | undefined = undefined,
): BatchesConfig {
  return {
    run: section.run,
    concurrency: section.concurrency,
    rateShare: section.rate_share,
    maxBatches: section.max_batches,
    leaseMs: Math.round(section.lease_seconds * 1000),
    pollMs: section.poll_ms,
    maxLines: section.max_lines,
    maxLineBytes: section.max_line_bytes,
    maxCreateBytes: section.max_create_bytes,
    createGraceMs: Math.round(section.create_grace_seconds * 1000),
    nativePollMs: section.native_poll_ms,
    nativePriceFactor: section.native_price_factor,
    nativeCloseWaitMs: Math.round(section.native_close_wait_seconds * 1000),
    anthropicResultsRetentionMs: Math.round(section.anthropic_results_retention_days * 86_400_000),
    instanceId,
  };
}
