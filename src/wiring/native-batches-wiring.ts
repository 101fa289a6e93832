import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { Authenticator } from '../auth/authenticator.js';
import { modelAllowed, principalFromSnapshot } from '../auth/principal.js';
import type { BatchesConfig } from '../config/batches-schema.js';
import type { ConfigGenerations } from '../core/pipeline/config-generation.js';
import { NativeBatchBackend, type NativeRoute } from '../core/batches/native-backend.js';
import { BATCH_ENDPOINT_ROUTES } from '../core/batches/batch-service.js';
import type { LineCounters } from '../core/batches/gateway-run-backend.js';
import type { PricedUsage } from '../core/models/pricing.js';
import { isGatewayError } from '../errors/gateway-error.js';
import type { NativeBatchApi, NativeLineResult } from '../providers/batch-api.js';
import type { RequestRecord } from '../request/request-record.js';
import type { BatchRecord, BatchStore } from '../store/batch-contract.js';

/** The upstream's batch API, if it has one the gateway speaks and the config leaves native batches on. */
function apiOf(generations: ConfigGenerations, upstream: string): NativeBatchApi | undefined {
  const { config, providers } = generations.current;
  if (config.upstreams.find((u) => u.name === upstream)?.batch !== 'native') return undefined;
  return providers.upstreams.get(upstream)?.batches;
}

/** A model's one native route: its first target (what the models route shows); fallbacks are the gateway's. */
function routeOf(generations: ConfigGenerations, model: string): NativeRoute | string {
  let target;
  try {
    target = generations.current.router.resolve(model);
  } catch (error) {
    return isGatewayError(error) ? `model ${model.slice(0, 100)}: ${error.code}` : String(error);
  }
  const api = apiOf(generations, target.upstream);
  if (!api) return `upstream ${target.upstream} has no native batch API (or batch: gateway)`;
  return { upstream: target.upstream, upstreamModel: target.upstreamModel, api };
}

/**
 * A forwarded line's usage record and metrics: the same record an interactive call leaves (so usage queries, key
 * budgets' spend and `llmgw_cost_usd_total` count it), its cost at the batch price (`native_price_factor`).
 */
function recordLine(
  app: FastifyInstance,
  generations: ConfigGenerations,
  factor: number,
  counters: LineCounters,
): (batch: BatchRecord, upstream: string, model: string, result: NativeLineResult) => void {
  return (batch, upstream, model, result) => {
    if (result.status >= 200 && result.status < 300) counters.succeeded += 1;
    else counters.errored += 1;
    const priced = generations.current.prices.priced(model, result.usage);
    const usage: PricedUsage | undefined = priced && {
      ...priced,
      ...(priced.cost_usd !== undefined ? { cost_usd: priced.cost_usd * factor } : {}),
      ...(priced.cache_savings_usd !== undefined ? { cache_savings_usd: priced.cache_savings_usd * factor } : {}),
    };
    const record: RequestRecord = {
      method: 'POST',
      route: BATCH_ENDPOINT_ROUTES[batch.endpoint],
      id: result.requestId ?? `batchline_${randomUUID()}`,
      traceparent: undefined,
      status: result.status,
      latencyMs: 0,
      endedAtMs: Date.now(),
      caller: batch.owner,
      model,
      upstream,
      stream: false,
      url: batch.endpoint,
      usage,
      code: undefined,
      errorDetails: undefined,
      body: undefined,
      answerText: undefined,
      firstByteMs: undefined,
      attempts: 1,
      replayed: false,
      cacheHit: false,
      cacheResult: undefined,
      replayNotStored: undefined,
      trace: undefined,
    };
    for (const observe of app.requestObservers) observe(record);
  };
}

/**
 * Why a batch's lines must be run by the gateway rather than forwarded: the owner's key as it is now (revoked,
 * expired), the right to the lines' route and models, and a budget (enforced line by line: a forwarded batch
 * cannot be stopped where the budget runs out). Each line run by the gateway then meets the same check.
 */
function refusalOf(auth: Authenticator) {
  return async (batch: BatchRecord, models: ReadonlySet<string>): Promise<string | undefined> => {
    let principal;
    try {
      principal = await auth.principalNow(batch.owner, principalFromSnapshot(batch.principal));
    } catch (error) {
      return isGatewayError(error) ? `the owner cannot call: ${error.code}` : String(error);
    }
    const route = BATCH_ENDPOINT_ROUTES[batch.endpoint];
    if (principal.routes && route !== undefined && !principal.routes.has(route))
      return `the owner has no right to ${route}`;
    for (const model of models) if (!modelAllowed(principal, model)) return `the owner may not call ${model}`;
    if (principal.budget) return "the owner's budget is enforced line by line";
    return undefined;
  };
}

/** The backend that forwards whole batches to their upstream's own batch API (core/batches/native-backend.ts). */
export function nativeBatchBackend(
  app: FastifyInstance,
  settings: BatchesConfig,
  deps: { generations: ConfigGenerations; auth: Authenticator; store: BatchStore; counters: LineCounters },
): NativeBatchBackend {
  const { generations, auth, store, counters } = deps;
  return new NativeBatchBackend({
    store,
    route: (model) => routeOf(generations, model),
    apiOf: (upstream) => apiOf(generations, upstream),
    refusal: refusalOf(auth),
    onLine: recordLine(app, generations, settings.nativePriceFactor, counters),
    pollMs: settings.nativePollMs,
    closeWaitMs: settings.nativeCloseWaitMs,
    log: app.log,
  });
}
