import type { NativeOwnerStore, ResponseCacheStore, ResponseStore } from './store/store-contract.js';
import type { FastifyInstance } from 'fastify';
import type { GatewayConfig } from './config/types.js';
import { checkConfigRoutes } from './config/route-check.js';
import { CallPipeline } from './core/pipeline/call-pipeline.js';
import { ChatService } from './core/pipeline/chat-service.js';
import { EmbeddingService } from './core/pipeline/embedding-service.js';
import { ModelCatalog } from './core/models/model-catalog.js';
import { TokenCountService } from './core/pipeline/token-count-service.js';
import { createHttpServer } from './http/server.js';
import { readCertificate } from './http/tls-certificate.js';
import type { Logger } from './observability/logger.js';
import { UpstreamAttemptStats, attemptObserver } from './observability/upstream-attempts.js';
import { createProviders, type ProviderSet } from './providers/provider-registry.js';
import { ResponseCache } from './routes/response-cache.js';
import { makeEmbeddingsHandler } from './routes/embeddings-route.js';
import { makeKeyHandlers } from './routes/keys-routes.js';
import { KeyService } from './auth/key-service.js';
import { NativeOwnership } from './surfaces/native-ownership.js';
import { wireResponses } from './wiring/responses-wiring.js';
import { makeHealthHandler } from './routes/health-route.js';
import { mountProtectedResourceMetadata } from './routes/protected-resource-route.js';
import { makeModelsHandler } from './routes/models-route.js';
import { mountOpenAiCompat } from './routes/openai-compat.js';
import { mountV1 } from './routes/mount-v1.js';
import { embeddingsBodySchema } from './routes/embeddings-schema.js';
import { SURFACES } from './surfaces/surface-registry.js';
import type { SurfaceDescriptor } from './surfaces/descriptor.js';
import type { FileSearch } from './core/retrieval/file-search.js';
import { mountSurfaces, surfaceData, v1Calls } from './wiring/surfaces-wiring.js';
import type {
  IdempotencyStore,
  KeyStore,
  LimitStore,
  OutboxStore,
  StoreLifecycle,
  UpstreamPauseStore,
  UsageStore,
} from './store/store-contract.js';
import { wireAuth } from './wiring/auth-wiring.js';
import { wireBatches } from './wiring/batches-wiring.js';
import { makeCallAs } from './routes/call-as-inject.js';
import type { CallAs } from './core/pipeline/call-as.js';
import type { BatchStore } from './store/batch-contract.js';
import { wireDashboard } from './wiring/dashboard-wiring.js';
import { wireHealth } from './wiring/health-wiring.js';
import { wireIdempotency, wireSealedIdempotency } from './wiring/idempotency-wiring.js';
import { wireLimits } from './wiring/limits-wiring.js';
import { wireMetrics } from './wiring/metrics-wiring.js';
import { wireObservers } from './wiring/observers-wiring.js';
import { wireCertificates } from './wiring/tls-wiring.js';
import { wireUpstreams } from './wiring/upstreams-wiring.js';
import { wireWebhooks } from './wiring/webhooks-wiring.js';
import { wireFiles, type WiredFiles } from './wiring/files-wiring.js';
import { vectorStoreMetrics, wireVectorStores, type WiredVectorStores } from './wiring/vector-stores-wiring.js';
import { wireMcp, type WiredMcp } from './wiring/mcp-wiring.js';
import { wireToolCallLimiter, wireToolCallRecords } from './wiring/tool-calls-wiring.js';
import type { VectorStoreStore } from './store/vector-contract.js';
import type { ToolCallStore } from './store/tool-call-contract.js';
import type { FileStore, ForwardedFileStore, UploadStore } from './store/file-contract.js';
import type { StorageUseStore } from './store/storage-use.js';
import { ConfigGenerations } from './core/pipeline/config-generation.js';
import { firstGeneration } from './wiring/config-generation-wiring.js';
import { wireConfigReload, type ReloadTrigger } from './wiring/config-reload-wiring.js';

export interface AppDependencies {
  config: GatewayConfig;
  logger: Logger;
  store: StoreLifecycle;
  /** Built from config when not given (tests may pass their own). */
  providers?: ProviderSet;
  /** The store behind the rate limits (SQLite or Redis); needed when `config.limits` defines any limit. */
  limiter?: { store: LimitStore; kind: string };
  /** The store behind Idempotency-Key (SQLite or Redis). */
  idempotency: { store: IdempotencyStore; kind: string };
  /** Where upstream pauses (after an upstream 429 with Retry-After) are shared between instances. */
  pauses: UpstreamPauseStore;
  /** The webhook outbox (SQLite or Redis); needed when webhook subscriptions are configured. */
  outbox?: OutboxStore;
  /** Scoped API keys; without it only the admin token is accepted. */
  keys?: KeyStore;
  /** Where usage records go; none are kept without it. */
  usage?: UsageStore;
  /** Where MCP tool-call records go (beside the usage records); none are kept without it. */
  toolCalls?: ToolCallStore;
  /** Stored Responses API responses; without it nothing is stored and previous_response_id is refused. */
  responses?: ResponseStore;
  /**
   * Who made each id an upstream keeps for a natively forwarded call; without it a forwarded request that refers
   * to such an id (`previous_response_id`, a container) is refused.
   */
  nativeOwners?: NativeOwnerStore;
  /** The exact response cache; without it no model's answers are cached. */
  responseCache?: ResponseCacheStore;
  /** Batches and their lines (OpenAI's Batch API, Anthropic's Message Batches); without it the batch paths are 404. */
  batches?: BatchStore;
  /**
   * Files and uploads (docs/files.md); without them `/v1/files` and `/v1/uploads` are not served. `storage`: the
   * stored bytes ledger; without it the storage quotas are not applied.
   */
  files?: { files: FileStore; uploads: UploadStore; forwarded?: ForwardedFileStore; storage?: StorageUseStore };
  /** Vector stores, their files and chunks (docs/retrieval.md); without it `/v1/vector_stores` is not served. */
  vectorStores?: VectorStoreStore;
  /** The API surfaces served; the registry's (surfaces/surface-registry.ts) when not given (tests may pass their own). */
  surfaces?: readonly SurfaceDescriptor[];
  /**
   * Searches of the callers' vector stores, which the `file_search` tool runs: the vector stores' own when not given
   * (tests may pass their own); without either that tool is refused.
   */
  fileSearch?: FileSearch;
  /**
   * Reads and validates the config file again, for live reloads (SIGHUP, the file watch); throws ConfigError.
   * Without it the configuration never changes while running.
   */
  readConfig?: () => GatewayConfig | Promise<GatewayConfig>;
}

export interface GatewayApp {
  app: FastifyInstance;
  /** Marks the gateway as draining: health turns 503 and responses ask clients to close their connections. */
  beginShutdown(): void;
  /**
   * Loads the TLS certificate files again (SIGHUP), off the event loop (the outcome is logged: a bad pair keeps the
   * running one); false when there is no HTTPS listener.
   */
  reloadCertificate(): boolean;
  /** The files of every caller (core/files/file-service.ts), for services beside the routes; undefined without stores. */
  files: WiredFiles | undefined;
  /** Vector stores and their search (docs/retrieval.md); undefined without a vector store. */
  vectorStores: WiredVectorStores | undefined;
  /** The MCP servers and the tool-call service (docs/mcp.md). */
  mcp: WiredMcp;
  /** A call made as a caller through the whole request pipeline, its outcome typed (routes/call-as-inject.ts). */
  callAs: CallAs;
  /**
   * Reads the config file again and applies it when it is good (SIGHUP); a no-op without `readConfig`. Resolves
   * once that reload (or the waiting one it joined) has run.
   */
  reloadConfig(trigger: ReloadTrigger): Promise<void>;
}

/**
 * Builds the HTTP application from its dependencies: a table of contents of the features, each wired by its own
 * unit in src/wiring/ (which also closes what it opened when the app closes). Importing it starts nothing (undici's
 * prototype patch aside: docs/architecture.md, "What runs at import time") and nothing here reads the environment:
 * the caller (src/serve.ts, a test, an embedding program) decides every input.
 */
// eslint-disable-next-line max-lines-per-function -- the table of contents of the features, one wiring call each, in the order they must be built
export async function buildApp(deps: AppDependencies): Promise<GatewayApp> {
  const { config } = deps;
  let shuttingDown = false;
  const isShuttingDown = () => shuttingDown;
  // What the layers below the surfaces take from the registry: which request is whose API, `?route=`, events.
  const registered = deps.surfaces ?? SURFACES;
  const surfaces = surfaceData(registered);
  // The config may grant any well-formed route name (a surface may declare its own): one this app does not serve
  // fails the start here, before anything is opened.
  checkConfigRoutes(config, surfaces.routes);
  const app = createHttpServer({
    logger: deps.logger,
    bodyLimitBytes: config.bodyLimitBytes,
    requestTimeoutMs: config.requestTimeoutMs,
    isShuttingDown,
    ...(config.tls ? { https: readCertificate(config.tls) } : {}),
    trustedProxies: config.trustedProxies,
    publicBaseUrl: config.publicBaseUrl,
    apis: surfaces.apis,
    v1Routes: surfaces.v1Routes,
    routes: surfaces.routes,
  });
  const certificates = wireCertificates(app, config);
  const providers = deps.providers ?? createProviders(config);
  const limits = wireLimits(app, config, deps.limiter);
  const idempotency = wireIdempotency(app, config, deps.idempotency.store);
  const events = wireWebhooks(app, config, deps.outbox, surfaces.events);
  const upstreams = wireUpstreams(app, config, deps.pauses, events.webhooks);
  // What the config file determines, as one generation a live reload replaces (docs/config.md, "Live reload").
  const generations = new ConfigGenerations(firstGeneration(config, providers, limits));
  app.addHook('onClose', async () => {
    await generations.current.providers.close();
  });
  const { recorder, toolCallRecorder, beginTrace, tracing } = await wireObservers(
    app,
    config,
    deps.usage,
    deps.toolCalls,
  );
  // Every upstream attempt is counted and every failed one logged, so a fallback that answers cannot hide a
  // primary that fails (metrics and the dashboard read the same tallies).
  const attempts = new UpstreamAttemptStats();
  const { breakers, pauses, capacity } = upstreams;
  const { router, prices } = generations.current;
  // Every model call's steps (plan, admit, run, settle) and what they share; one service per kind of call.
  const modelCalls = new CallPipeline({
    router,
    prices,
    limits: limits.service,
    pauses,
    breakers,
    capacity,
    observer: attemptObserver(attempts, app.log),
  });
  const { admin, auth } = wireAuth(config, deps.keys, surfaces);
  // Files (OpenAI's /v1/files and /v1/uploads), which the batches read and write, and which model requests may name.
  const files = wireFiles(app, config, {
    stores: deps.files,
    auth,
    limits: limits.service,
    filesOf: (upstream) => generations.current.providers.upstreams.get(upstream)?.files,
  });
  const chat = new ChatService(modelCalls, files?.forwarding);
  // Only when some model caches: every other gateway's calls never reach the cache's code at all.
  const cache =
    deps.responseCache && (config.cache.undeclaredModels || config.models.some((m) => m.cache))
      ? new ResponseCache({
          store: deps.responseCache,
          environment: config.environment,
          policyOf: (model) => modelCalls.router.cachePolicy(model),
          log: app.log,
        })
      : undefined;
  const pipeline = {
    chat,
    idempotency,
    bodyLimitBytes: config.bodyLimitBytes,
    beginTrace,
    ...(cache ? { cache } : {}),
  };
  // Kept as long as stored responses are (responses.ttl_seconds), whether or not the gateway stores its own.
  const ownership = new NativeOwnership({ store: deps.nativeOwners, ttlMs: config.responses.ttlMs, log: app.log });
  const responses = wireResponses(app, config, deps.responses);
  const health = wireHealth(generations, deps.store, upstreams, limits, isShuttingDown);
  const catalog = new ModelCatalog(config, generations.current.defaultProbe, providers.builtins, prices);
  // The surfaces' typed entry into the pipeline (through the routes mounted above): batches run their lines by it.
  const callAs = makeCallAs(app, auth);
  // Batches: their APIs, and this process's runner of their lines.
  const batchStats = wireBatches(app, config, {
    auth,
    callAs,
    store: deps.batches,
    files: files?.service,
    ...(files ? { quota: files.quota } : {}),
    webhooks: events.webhooks,
    generations,
  });
  // Vector stores (OpenAI's /v1/vector_stores) on the gateway's storage, filled through the embeddings pipeline.
  const vectors = wireVectorStores(app, config, {
    store: deps.vectorStores,
    files: files?.service,
    quota: files?.quota,
    auth,
    limits: limits.service,
    callAs,
    checkModel: (model) => void modelCalls.router.plan(model),
  });
  // MCP: the upstream servers (connected on first use) and the one service every tool call goes through.
  // Each tool call is limited per caller and per server in the limit store, and recorded (usage store, webhooks,
  // spans, metrics: docs/mcp.md, "Limits" and "Records").
  const toolCalls = wireToolCallRecords(app, { recorder: toolCallRecorder, webhooks: events.webhooks, tracing });
  const mcp = wireMcp(app, config, {
    auth,
    limiter: wireToolCallLimiter(app, generations, limits),
    observer: toolCalls.observer,
  });
  // RFC 9728 metadata for MCP clients (unauthenticated; 404 while no OAuth issuer is configured).
  mountProtectedResourceMetadata(app, () => auth.oauth);
  const fileStats = files ? { upstreamDeletes: () => files.cleanup.counts } : undefined;
  wireMetrics(app, config, {
    auth,
    upstreams,
    attempts,
    outbox: deps.outbox,
    recorder,
    generations,
    batches: batchStats,
    files: fileStats,
    vectorStores: vectors ? vectorStoreMetrics(vectors) : undefined,
    toolCalls,
  });
  const keyUsage = deps.usage && recorder ? { store: deps.usage, flush: () => recorder.flush() } : undefined;
  const keyService = deps.keys
    ? new KeyService(deps.keys, config.environment, keyUsage, (keyId) => auth.forgetKey(keyId), surfaces.routes)
    : undefined;
  wireDashboard(app, config, admin, generations, {
    health,
    attempts,
    recorder,
    usage: deps.usage,
    outbox: deps.outbox,
    keys: keyService,
    webhooks: events.webhooks,
    batches: batchStats?.inFlight,
    vectorStores: vectors ? () => vectors.usage.read() : undefined,
    toolCalls: toolCallRecorder && deps.toolCalls ? { store: deps.toolCalls, recorder: toolCallRecorder } : undefined,
  });
  const keyHandlers = makeKeyHandlers(keyService, {
    idempotency: wireSealedIdempotency(app, config, deps.idempotency.store),
    webhooks: events.webhooks,
  });
  // Every API surface on its own paths, from its descriptor (surfaces/surface-registry.ts).
  const tokens = new TokenCountService(modelCalls);
  const embeddingService = new EmbeddingService(modelCalls);
  const mounted = mountSurfaces(
    app,
    registered,
    {
      auth,
      chat,
      tokens,
      embeddings: embeddingService,
      catalog,
      pipeline,
      wantsContent: (kind) => events.webhooks.wantsContent(kind),
    },
    {
      ownership,
      history: responses.history,
      fileSearch: deps.fileSearch ?? vectors?.search,
      mcp: { tools: mcp.tools, config: () => mcp.settings(), environment: config.environment },
    },
  );
  const embeddings = makeEmbeddingsHandler({ embeddings: embeddingService, chat, idempotency, beginTrace, cache });
  const calls = v1Calls(mounted, { embeddings: { handler: embeddings, schema: embeddingsBodySchema } });
  mountV1(
    app,
    auth,
    {
      health: makeHealthHandler(health, (authorization) => admin.isAdmin(authorization)),
      models: makeModelsHandler(catalog),
      keys: keyHandlers,
      calls,
      storedResponses: responses.stored,
    },
    config.version,
    surfaces.v1Routes,
  );
  mountOpenAiCompat(
    app,
    auth,
    { embeddings, storedResponses: responses.stored },
    catalog,
    mounted.flatMap((m) => (m.models ? [m.models] : [])),
  );
  const reloads = deps.readConfig
    ? wireConfigReload(app, {
        generations,
        read: deps.readConfig,
        pipeline: modelCalls,
        catalog,
        upstreams,
        limits,
        webhooks: events,
        auth,
        served: surfaces,
        fixedProviders: deps.providers !== undefined,
        cacheBuilt: cache !== undefined,
        mcp,
      })
    : undefined;
  await app.ready();
  events.start();
  return {
    app,
    beginShutdown: () => {
      shuttingDown = true;
    },
    reloadCertificate: () => {
      if (!certificates) return false;
      void certificates.reload();
      return true;
    },
    files,
    vectorStores: vectors,
    mcp,
    callAs,
    reloadConfig: (trigger) => reloads?.reload(trigger) ?? Promise.resolve(),
  };
}
