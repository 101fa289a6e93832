import type { NativeBatchApi, NativeBatchRequest, NativeLineResult } from '../../providers/batch-api.js';
import type { BatchRecord, BatchStore, NativeBatchState } from '../../store/batch-contract.js';
import { isGatewayError } from '../../errors/gateway-error.js';
import type { BatchBackend, BatchLease } from './batch-backend.js';
import { allLines } from './batch-results.js';
import { lineUsageOf } from './batch-usage.js';

/** Where one model's lines would go natively: undefined when its upstream has no batch API (or `batch: gateway`). */
export interface NativeRoute {
  upstream: string;
  upstreamModel: string;
  api: NativeBatchApi;
}

export interface NativeBackendOptions {
  store: BatchStore;
  /** The model's native route in the current config, or a reason it has none (kept as the batch's reason). */
  route(model: string): NativeRoute | string;
  /** The batch API of an upstream by name in the current config (a reload may have removed it). */
  apiOf(upstream: string): NativeBatchApi | undefined;
  /**
   * Why the owner's lines cannot be forwarded as they are now (a revoked key, a model it may not call, a budget
   * that must be enforced line by line): the gateway runs them itself then, and each line meets the same refusal.
   */
  refusal(batch: BatchRecord, models: ReadonlySet<string>): Promise<string | undefined>;
  /** A forwarded line's answer was recorded: its usage record and metrics, at the batch price. */
  onLine(batch: BatchRecord, upstream: string, model: string, result: NativeLineResult): void;
  /** How often a forwarded batch is polled. */
  pollMs: number;
  /** How long a cancel (or the window's end) waits for the upstream to end the batch and give its partial results. */
  closeWaitMs: number;
  log: { info(object: object, message: string): void; warn(object: object, message: string): void };
  now?: () => number;
}

/** A line's model, or undefined when its body names none (the gateway runs such a batch: each line gets its 400). */
function modelOf(body: string): string | undefined {
  try {
    const model = (JSON.parse(body) as { model?: unknown }).model;
    return typeof model === 'string' && model !== '' ? model : undefined;
  } catch {
    return undefined;
  }
}

/** Submits that fail this many times in a row (network, 5xx) make the batch run in the gateway instead. */
const MAX_SUBMIT_FAILURES = 3;
/** A forwarded batch's line whose result the upstream never gave. */
const MISSING = { code: 'batch_result_missing', message: "The upstream's batch gave no result for this request." };

/**
 * Forwards a batch to its upstream's own batch API (half the price at OpenAI, Anthropic and Gemini), where every
 * line's model goes to one upstream that has one: the lines are written in the upstream's shape (models renamed),
 * submitted, polled, and each result recorded by the same store call that records a line the gateway ran
 * (`recordOutcome`: once), with a usage record at the batch price. The decision and each upstream id are stored as
 * soon as they are known (`NativeBatchState`): a restart polls the batch it created, and a crash between the create
 * and the store write is recovered by `find` (the gateway's batch id is in the upstream batch's metadata). When the
 * upstream refuses the upload or the create, the batch is run by the gateway instead (logged); once created, an
 * upstream batch that fails ends its unanswered lines with an error rather than running them again (no double bill).
 */
export class NativeBatchBackend implements BatchBackend {
  readonly name = 'native';
  private readonly submitFailures = new Map<string, number>();
  private readonly now: () => number;

  constructor(private readonly options: NativeBackendOptions) {
    this.now = options.now ?? Date.now;
  }

  async takes(batch: BatchRecord): Promise<boolean> {
    const { store } = this.options;
    const known = await store.nativeState(batch.id);
    if (known) return known.mode === 'native';
    const decided = await this.decide(batch);
    await store.saveNativeState(batch.id, decided);
    this.options.log.info(
      { batch_id: batch.id, mode: decided.mode, upstream: decided.upstream, reason: decided.reason },
      decided.mode === 'native' ? "batch: forwarded to its upstream's batch API" : 'batch: run by the gateway',
    );
    return decided.mode === 'native';
  }

  /** Native when every line's model goes to one upstream whose batch API runs the batch's endpoint. */
  private async decide(batch: BatchRecord): Promise<NativeBatchState> {
    const gateway = (reason: string): NativeBatchState => ({
      mode: 'gateway',
      upstream: null,
      phase: 'decided',
      upstreamFileId: null,
      upstreamBatchId: null,
      reason,
    });
    if ((await this.options.store.pendingCount(batch.id)) !== batch.counts.total)
      return gateway('some lines were already run by the gateway');
    const models = new Set<string>();
    let upstream: string | undefined;
    for await (const line of allLines(this.options.store, batch.id)) {
      const model = modelOf(line.body);
      if (model === undefined) return gateway(`line ${line.index} names no model`);
      if (models.has(model)) continue;
      models.add(model);
      const route = this.options.route(model);
      if (typeof route === 'string') return gateway(route);
      if (!route.api.endpoints.has(batch.endpoint))
        return gateway(`${route.upstream}'s batch API does not run ${batch.endpoint}`);
      if (upstream !== undefined && route.upstream !== upstream) return gateway('its models go to several upstreams');
      upstream = route.upstream;
    }
    if (upstream === undefined) return gateway('no lines');
    const refused = await this.options.refusal(batch, models);
    if (refused) return gateway(refused);
    return { mode: 'native', upstream, phase: 'decided', upstreamFileId: null, upstreamBatchId: null, reason: null };
  }

  async run(batch: BatchRecord, lease: BatchLease): Promise<void> {
    let state = await this.options.store.nativeState(batch.id);
    if (state?.mode !== 'native' || state.upstream === null) return;
    const api = this.options.apiOf(state.upstream);
    if (!api) {
      if (state.phase === 'decided') await this.fallBack(batch, state, `upstream ${state.upstream} is gone`);
      else this.options.log.warn({ batch_id: batch.id, upstream: state.upstream }, 'batch: its upstream is gone');
      await this.pause(lease);
      return;
    }
    if (state.phase === 'decided') {
      const submitted = await this.submit(batch, state, api, lease);
      if (!submitted) return;
      state = submitted;
    }
    if (state.phase === 'submitted') await this.follow(batch, state, api, lease, false);
  }

  /** A cancel or the window's end: the upstream batch is cancelled, and what it did is recorded before the rest closes. */
  async beforeClose(batch: BatchRecord, lease: BatchLease): Promise<void> {
    const state = await this.options.store.nativeState(batch.id);
    if (state?.mode !== 'native' || state.phase !== 'submitted' || state.upstream === null) return;
    const api = this.options.apiOf(state.upstream);
    if (!api || state.upstreamBatchId === null) return;
    await api.cancel(state.upstreamBatchId, lease.signal).catch((error: unknown) => {
      this.options.log.warn({ batch_id: batch.id, err: error }, 'batch: cancelling the upstream batch failed');
    });
    await this.follow(batch, state, api, lease, true);
  }

  /** Uploads and creates (or finds the batch a crash left created): the new state, or undefined to stop this turn. */
  private async submit(
    batch: BatchRecord,
    state: NativeBatchState,
    api: NativeBatchApi,
    lease: BatchLease,
  ): Promise<NativeBatchState | undefined> {
    const { store } = this.options;
    let current = state;
    try {
      const found = await this.findCreated(batch.id, current.upstream, api, lease.signal);
      if (found === undefined) {
        const created = await api.submit(
          {
            gatewayBatchId: batch.id,
            endpoint: batch.endpoint,
            lines: () => this.requests(batch),
            uploadedFileId: current.upstreamFileId ?? undefined,
            onUploaded: async (fileId) => {
              current = { ...current, upstreamFileId: fileId };
              await store.saveNativeState(batch.id, current);
            },
          },
          lease.signal,
        );
        current = {
          ...current,
          upstreamFileId: created.fileId ?? current.upstreamFileId,
          upstreamBatchId: created.batchId,
        };
      } else current = { ...current, upstreamBatchId: found };
      current = { ...current, phase: 'submitted' };
      await store.saveNativeState(batch.id, current);
      this.submitFailures.delete(batch.id);
      this.options.log.info(
        { batch_id: batch.id, upstream: current.upstream, upstream_batch_id: current.upstreamBatchId },
        found === undefined ? 'batch: created upstream' : 'batch: found upstream after a restart',
      );
      return current;
    } catch (error) {
      if (lease.signal.aborted) return undefined;
      const failures = (this.submitFailures.get(batch.id) ?? 0) + 1;
      this.submitFailures.set(batch.id, failures);
      const refused = isGatewayError(error) && error.status >= 400 && error.status < 500 && error.status !== 429;
      const reason = `the upstream ${refused ? 'refused' : 'failed'} the batch: ${describe(error)}`;
      if (refused || failures >= MAX_SUBMIT_FAILURES) {
        this.submitFailures.delete(batch.id);
        await this.fallBack(batch, current, reason);
      } else {
        this.options.log.warn(
          { batch_id: batch.id, failures, reason },
          'batch: submitting upstream failed, will retry',
        );
        await this.pause(lease);
      }
      return undefined;
    }
  }

  /**
   * The upstream batch a crash may have left created for this one (`find` lists the upstream's batches), or
   * undefined. A 404 on that list says only that the upstream does not list batches there (a Gemini-compatible
   * server, an API version without `GET batches`): not known, never a refusal of the batch, which only the create
   * can give. The price: a crash between such an upstream's create and the store write cannot be recovered by a find.
   */
  private async findCreated(
    batchId: string,
    upstream: string | null,
    api: NativeBatchApi,
    signal: AbortSignal,
  ): Promise<string | undefined> {
    try {
      return await api.find(batchId, signal);
    } catch (error) {
      if (!isGatewayError(error) || error.status !== 404 || signal.aborted) throw error;
      this.options.log.info(
        { batch_id: batchId, upstream, reason: describe(error) },
        "batch: the upstream's batch list is not there (404): nothing to find, creating",
      );
      return undefined;
    }
  }

  /** The batch's pending lines in the upstream's terms: its model name. */
  private async *requests(batch: BatchRecord): AsyncGenerator<NativeBatchRequest> {
    const names = new Map<string, string>();
    for await (const line of allLines(this.options.store, batch.id)) {
      if (line.state !== 'pending') continue;
      const body = JSON.parse(line.body) as Record<string, unknown>;
      const model = String(body.model);
      let name = names.get(model);
      if (name === undefined) {
        const route = this.options.route(model);
        name = typeof route === 'string' ? model : route.upstreamModel;
        names.set(model, name);
      }
      body.model = name;
      yield { index: line.index, endpoint: line.url, body };
    }
  }

  /** The upstream refused (or kept failing) before a batch existed there: the gateway runs the lines itself. */
  private async fallBack(batch: BatchRecord, state: NativeBatchState, reason: string): Promise<void> {
    this.options.log.warn(
      { batch_id: batch.id, upstream: state.upstream, reason },
      'batch: run by the gateway instead',
    );
    await this.options.store.saveNativeState(batch.id, { ...state, mode: 'gateway', reason });
    if (state.upstreamFileId !== null && state.upstream !== null) {
      const api = this.options.apiOf(state.upstream);
      await api?.cleanUp?.(state.upstreamFileId, AbortSignal.timeout(30_000)).catch(() => undefined);
    }
  }

  /**
   * Polls the upstream batch until it ends, then records its results. Returns early when the lease is lost or the
   * process stops, or (not `closing`) when the gateway's batch leaves `in_progress`: the runner's next step (cancel,
   * expiry) calls `beforeClose`. `closing` waits at most `closeWaitMs` for the upstream to end.
   */
  private async follow(
    batch: BatchRecord,
    state: NativeBatchState,
    api: NativeBatchApi,
    lease: BatchLease,
    closing: boolean,
  ): Promise<void> {
    const upstreamBatchId = state.upstreamBatchId as string;
    const giveUpAt = this.now() + this.options.closeWaitMs;
    while (!lease.lost && !lease.signal.aborted) {
      if (!closing) {
        const fresh = await this.options.store.get(batch.owner, batch.id);
        if (fresh?.status !== 'in_progress' || this.now() >= fresh.expiresMs) return;
      } else if (this.now() >= giveUpAt) return;
      let status;
      try {
        status = await api.status(upstreamBatchId, lease.signal);
      } catch (error) {
        if (lease.signal.aborted) return;
        this.options.log.warn({ batch_id: batch.id, err: describe(error) }, 'batch: polling the upstream failed');
        await this.pause(lease);
        continue;
      }
      if (status.state === 'running') {
        await this.pause(lease);
        continue;
      }
      if (status.state === 'ended') await this.collect(batch, state, api, upstreamBatchId, lease);
      if (lease.signal.aborted) return;
      const failure =
        status.state === 'failed'
          ? {
              code: 'batch_upstream_failed',
              message: `The upstream's batch failed (${status.upstreamStatus})${status.reason ? `: ${status.reason}` : ''}.`,
            }
          : MISSING;
      // A cancel or expiry leaves the lines without a result to the runner (canceled, expired).
      if (!closing) await this.closeUnanswered(batch, failure);
      await this.options.store.saveNativeState(batch.id, { ...state, phase: 'collected' });
      if (state.upstreamFileId !== null) await api.cleanUp?.(state.upstreamFileId, lease.signal).catch(() => undefined);
      return;
    }
  }

  private async collect(
    batch: BatchRecord,
    state: NativeBatchState,
    api: NativeBatchApi,
    upstreamBatchId: string,
    lease: BatchLease,
  ): Promise<void> {
    const { store } = this.options;
    const modelAt = await this.modelsOf(batch);
    for await (const result of api.results(upstreamBatchId, lease.signal, batch.endpoint)) {
      if (result.index < 0 || result.index >= batch.counts.total) continue; // not a line of this batch
      const ok = result.status >= 200 && result.status < 300;
      const recorded = await store.recordOutcome(batch.id, result.index, {
        state: ok ? 'succeeded' : 'errored',
        statusCode: result.status,
        response: result.body,
        requestId: result.requestId,
        error: null,
        usage: ok ? lineUsageOf(result.usage) : undefined,
      });
      if (recorded) this.options.onLine(batch, state.upstream as string, modelAt(result.index), result);
    }
  }

  /** Each line's model as the caller named it: one read of the lines (a map only when the batch has several). */
  private async modelsOf(batch: BatchRecord): Promise<(index: number) => string> {
    const byIndex = new Map<number, string>();
    const names = new Set<string>();
    for await (const line of allLines(this.options.store, batch.id)) {
      const model = modelOf(line.body) ?? 'unknown';
      names.add(model);
      byIndex.set(line.index, model);
    }
    if (names.size === 1) {
      const [only] = names as unknown as [string];
      return () => only;
    }
    return (index) => byIndex.get(index) ?? 'unknown';
  }

  /** Lines the upstream gave no result for: errored with why. */
  private async closeUnanswered(batch: BatchRecord, failure: { code: string; message: string }): Promise<void> {
    const { store } = this.options;
    let after = -1;
    for (;;) {
      const pending = await store.pendingLines(batch.id, after, Number.MAX_SAFE_INTEGER, 500);
      for (const line of pending)
        await store.recordOutcome(batch.id, line.index, {
          state: 'errored',
          statusCode: 502,
          response: JSON.stringify({ code: failure.code, message: failure.message, details: {} }),
          requestId: null,
          error: null,
        });
      const last = pending[pending.length - 1];
      if (!last || pending.length < 500) return;
      after = last.index;
    }
  }

  /** Waits one poll interval, or less when the lease ends. */
  private pause(lease: BatchLease): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, this.options.pollMs);
      lease.signal.addEventListener('abort', done, { once: true });
      function done() {
        clearTimeout(timer);
        lease.signal.removeEventListener('abort', done);
        resolve();
      }
    });
  }
}

function describe(error: unknown): string {
  if (isGatewayError(error)) return `${error.code} (${error.status})`;
  return error instanceof Error ? error.message : String(error);
}
