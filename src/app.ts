import type { FastifyInstance } from 'fastify';
import type { GatewayConfig } from './config/types.js';
import { UpstreamPauses } from './core/upstream-pauses.js';
import { CircuitBreakers } from './core/circuit-breaker.js';
import { capacitiesOf } from './core/upstream-capacity.js';
import { mountOpenAiCompat } from './routes/openai-compat.js';
import { LeasedLimits } from './core/leased-limits.js';
import { ChatService } from './core/chat-service.js';
import { HealthService } from './core/health-service.js';
import { ModelCatalog } from './core/model-catalog.js';
import { ModelRouter } from './core/model-router.js';
import { UpstreamProbe } from './core/upstream-probe.js';
import { RateLimitService } from './core/rate-limit-service.js';
import { AdminAuthenticator } from './auth/admin-auth.js';
import { Authenticator } from './auth/authenticator.js';
import { OAuthVerifier } from './auth/oauth.js';
import type { Server as TlsServer } from 'node:tls';
import { CertificateReloader, readCertificate } from './http/tls-certificate.js';
import { createHttpServer } from './http/server.js';
import type { Logger } from './observability/logger.js';
import { createProviders, type ProviderSet } from './providers/registry.js';
import { makeChatHandler } from './routes/chat.js';
import { makeHealthHandler } from './routes/health.js';
import { makeModelsHandler } from './routes/models.js';
import { mountV1 } from './routes/mount-v1.js';
import type { IdempotencyStore, KeyStore, LimitStore, OutboxStore, StoreLifecycle, UpstreamPauseStore, UsageStore } from './store/contract.js';
import { UsageRecorder } from './usage/usage-recorder.js';
import { GatewayMetrics } from './observability/metrics.js';
import { UpstreamAttemptStats, attemptObserver } from './observability/upstream-attempts.js';
import { usageObserver } from './usage/record-request.js';
import { WebhookSender } from './webhooks/deliver.js';
import { WebhookDispatcher } from './webhooks/dispatcher.js';
import { EVENT, INSTANCE, registerChatEvents } from './webhooks/gateway-events.js';
import { Webhooks } from './webhooks/webhooks.js';
import { ChatIdempotency } from './routes/chat-idempotency.js';
import { mountDashboard } from './dashboard/routes.js';

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
}

/** Loads OpenTelemetry only when tracing is on (it is off by default: no module loaded, nothing on the hot path). */
async function startTracing(config: GatewayConfig, app: FastifyInstance) {
  if (!config.tracing) return undefined;
  const { GatewayTracing } = await import('./observability/tracing.js');
  const tracing = new GatewayTracing(config.tracing, config.version, config.environment, app.log);
  app.addHook('onClose', async () => {
    await tracing.shutdown();
  });
  return tracing;
}

/** Stands in when no limit is configured: never called, because the service is disabled then. */
function missingLimiter(): LimitStore {
  const fail = () => Promise.reject(new Error('no limiter store configured'));
  return { admit: fail, settle: fail, consume: fail, adjust: fail, acquire: fail, release: fail };
}

export interface GatewayApp {
  app: FastifyInstance;
  /** Marks the gateway as draining: health turns 503 and responses ask clients to close their connections. */
  beginShutdown(): void;
  /** Loads the TLS certificate files again (SIGHUP); false when there is no HTTPS listener or the pair is bad. */
  reloadCertificate(): boolean;
}

/**
 * Builds the HTTP application from its dependencies. Nothing runs at import time and nothing here reads the
 * environment: the caller (main.ts or a test) decides every input.
 */
export async function buildApp(deps: AppDependencies): Promise<GatewayApp> {
  const { config } = deps;
  const providers = deps.providers ?? createProviders(config);
  let shuttingDown = false;
  const isShuttingDown = () => shuttingDown;

  const app = createHttpServer({
    logger: deps.logger,
    bodyLimitBytes: config.bodyLimitBytes,
    requestTimeoutMs: config.requestTimeoutMs,
    isShuttingDown,
    ...(config.tls ? { https: readCertificate(config.tls) } : {}),
    trustedProxies: config.trustedProxies,
  });
  const certificates = config.tls ? new CertificateReloader(app.server as unknown as TlsServer, config.tls, app.log) : undefined;
  certificates?.start();
  app.addHook('onClose', async () => {
    certificates?.stop();
  });
  app.addHook('onClose', async () => {
    await providers.close();
  });

  const limitStore = { healthy: true };
  // Large limits are leased in chunks, so they cost a store step per chunk rather than per request.
  const leased = new LeasedLimits({
    store: deps.limiter?.store ?? missingLimiter(),
    onStoreError: (error) => app.log.warn({ err: error }, 'rate-limit store failing while returning leased units'),
  });
  app.addHook('onClose', async () => {
    await leased.close();
  });
  const limits = new RateLimitService({
    limiter: leased,
    config: config.limits,
    onStoreHealth: (healthy, error) => {
      if (!healthy && limitStore.healthy) app.log.warn({ err: error }, 'rate-limit store failing');
      if (healthy && !limitStore.healthy) app.log.info('rate-limit store recovered');
      limitStore.healthy = healthy;
    },
  });
  if (limits.enabled && !deps.limiter) throw new Error('limits are configured but buildApp was given no limiter store');

  const idempotency = new ChatIdempotency({
    store: deps.idempotency.store,
    ttlMs: config.idempotency.ttlMs,
    // Renewed every 10 s while the call runs; a crashed holder's claims free themselves within 30 s.
    leaseMs: config.idempotency.leaseMs,
    maxReplayBytes: config.idempotency.maxReplayBytes,
    onStoreFailure: config.idempotency.onStoreFailure,
    onStoreHealth: (healthy, error) => {
      if (!healthy) app.log.warn({ err: error }, 'idempotency store failing');
    },
  });
  app.addHook('onClose', async () => {
    idempotency.close();
  });

  const pauses = new UpstreamPauses({
    store: deps.pauses,
    maxPauseMs: config.limits.upstreamPauseMaxMs,
    onStoreError: (error) => app.log.warn({ err: error }, 'upstream pause store failing; pauses stay local to this instance'),
  });

  if (config.webhooks.subscriptions.length > 0 && !deps.outbox) throw new Error('webhook subscriptions are configured but buildApp was given no outbox store');
  const dispatcher = deps.outbox
    ? new WebhookDispatcher({
        store: deps.outbox,
        config: config.webhooks,
        sender: new WebhookSender({
          timeoutMs: config.webhooks.timeoutMs,
          allowPrivateAddresses: config.webhooks.allowPrivateAddresses,
          userAgent: `llm-gateway-webhooks/${config.version}`,
        }),
        log: app.log,
      })
    : undefined;
  const webhooks = new Webhooks({
    config: config.webhooks,
    environment: config.environment,
    store: deps.outbox,
    log: app.log,
    onWritten: () => dispatcher?.soon(),
  });
  app.addHook('onClose', async () => {
    await dispatcher?.close();
  });
  registerChatEvents(app, webhooks);

  // What looks at every API request (chat, models) once it ended, a caller who hung up included: usage records,
  // metrics, the trace's request span (run by endRequest, with the access line).
  const apiObservers = app.requestObservers;
  const recorder = deps.usage && config.usage.enabled ? new UsageRecorder({ store: deps.usage, retentionMs: config.usage.retentionMs, log: app.log }) : undefined;
  if (recorder) {
    apiObservers.push(usageObserver(recorder, config.environment));
    recorder.startRetention();
    app.addHook('onClose', async () => {
      await recorder.close();
    });
  }

  const breakers = new CircuitBreakers({
    ...config.circuitBreaker,
    onTransition: (t) => {
      if (t.kind === 'opened') {
        void webhooks.emit(EVENT.upstreamUnhealthy, { upstream: t.upstream, consecutive_failures: t.failures, cooldown_seconds: Math.round(t.cooldownMs / 1000), instance: INSTANCE });
      } else {
        void webhooks.emit(EVENT.upstreamRecovered, { upstream: t.upstream, unhealthy_for_seconds: Math.round(t.openForMs / 1000), instance: INSTANCE });
      }
    },
  });
  const capacity = capacitiesOf(config.upstreams);
  const probes = [...providers.upstreams.values()].map((p) => new UpstreamProbe(p));
  const defaultProbe = probes.find((p) => p.provider.name === config.defaultUpstream);
  const health = new HealthService({
    version: config.version,
    environment: config.environment,
    store: deps.store,
    probes,
    isShuttingDown,
    limits: limits.enabled ? { kind: deps.limiter?.kind ?? 'unknown', isHealthy: () => limitStore.healthy } : undefined,
    circuits: () => breakers.snapshot(),
    pauses: () => pauses.active(),
    loads: () => capacity.loads(),
  });
  const catalog = new ModelCatalog(config, defaultProbe, providers.builtins);
  // Every upstream attempt is counted and every failed one logged, so a fallback that answers cannot hide a
  // primary that fails (metrics and the dashboard read the same tallies).
  const attempts = new UpstreamAttemptStats();
  const chatService = new ChatService({ router: new ModelRouter(config, providers), limits, pauses, breakers, capacity, observer: attemptObserver(attempts, app.log) });
  const tracing = await startTracing(config, app);
  if (tracing) apiObservers.push((request, status, latencyMs) => tracing.end(request, status, latencyMs));
  const chatHandler = makeChatHandler(
    chatService,
    idempotency,
    config.bodyLimitBytes,
    webhooks.wantsContent(EVENT.chatCompleted),
    tracing ? (request) => tracing.begin(request, Date.now() - (performance.now() - request.receivedAt)) : undefined,
  );
  const admin = new AdminAuthenticator(config.adminTokens);
  const auth = new Authenticator(admin, {
    environment: config.environment,
    keys: deps.keys,
    cacheMs: config.keyCacheMs,
    basicUsers: config.basicUsers,
    ...(config.oauth ? { oauth: new OAuthVerifier(config.oauth) } : {}),
  });
  if (config.metricsEnabled) {
    const outbox = deps.outbox;
    const metrics = new GatewayMetrics({
      circuits: () => breakers.snapshot(),
      pauses: () => pauses.active(),
      loads: () => capacity.loads(),
      attempts,
      ...(outbox && config.webhooks.subscriptions.length > 0
        ? { webhookBacklog: async () => Object.fromEntries(await Promise.all(config.webhooks.subscriptions.map(async (s) => [s.id, await outbox.backlog(s.id)] as const))) }
        : {}),
    });
    apiObservers.push((request, status, latencyMs) => metrics.observe(request, status, latencyMs));
    // Behind the admin token (Prometheus: `authorization: { credentials: <token> }` in the scrape config).
    app.get('/metrics', async (request, reply) => {
      request.routeName = 'metrics';
      await auth.authenticate(request.headers.authorization, 'metrics');
      const scraped = await metrics.scrape();
      return reply.type(scraped.contentType).send(scraped.text);
    });
  }
  if (config.dashboard.enabled) {
    mountDashboard(app, {
      admin,
      adminTokens: config.adminTokens,
      sessionTtlMs: config.dashboard.sessionTtlMs,
      sources: {
        usage: recorder ? deps.usage : undefined,
        flushUsage: async () => recorder?.flush(),
        health: () => health.report(),
        attempts: () => attempts.summary(),
        outbox: deps.outbox,
        subscriptions: config.webhooks.subscriptions.map((s) => s.id),
      },
    });
  }
  mountV1(app, auth, {
    health: makeHealthHandler(health),
    models: makeModelsHandler(catalog),
    chat: chatHandler,
  }, config.version);
  mountOpenAiCompat(app, auth, chatHandler, catalog);

  await app.ready();
  dispatcher?.start();
  return {
    app,
    beginShutdown() {
      shuttingDown = true;
    },
    reloadCertificate: () => certificates?.reload() ?? false,
  };
}
