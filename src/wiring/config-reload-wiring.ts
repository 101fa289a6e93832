import cluster from 'node:cluster';
import type { FastifyInstance } from 'fastify';
import type { Authenticator } from '../auth/authenticator.js';
import { checkConfigRoutes } from '../config/route-check.js';
import { oauthVerifier, type ServedRoutes } from './auth-wiring.js';
import { diffConfigs, sameEndpoint, type ConfigChanges } from '../config/config-diff.js';
import { watchConfigFile } from '../config/config-watch.js';
import { keepRestartSettings } from '../config/restart-settings.js';
import { configVersionOf } from '../config/config-version.js';
import { FILE_BOUNDS, readBoundedFile } from '../config/bounded-file.js';
import type { GatewayConfig } from '../config/types.js';
import type { CallPipeline } from '../core/pipeline/call-pipeline.js';
import type { ConfigGenerations } from '../core/pipeline/config-generation.js';
import type { ModelCatalog } from '../core/models/model-catalog.js';
import { EVENT, INSTANCE } from '../webhooks/gateway-events.js';
import { nextGeneration } from './config-generation-wiring.js';
import type { WiredLimits } from './limits-wiring.js';
import type { WiredUpstreams } from './upstreams-wiring.js';
import type { WiredWebhooks } from './webhooks-wiring.js';

/** What a reload re-reads and what it swaps the new generation into. */
export interface ReloadTargets {
  generations: ConfigGenerations;
  /**
   * Reads and validates the config file again (loadConfig); throws (or rejects with) ConfigError listing each bad
   * field. May be async: a cluster worker loads the config modules (zod) only at its first reload.
   */
  read: () => GatewayConfig | Promise<GatewayConfig>;
  pipeline: CallPipeline;
  catalog: ModelCatalog;
  upstreams: WiredUpstreams;
  limits: WiredLimits;
  webhooks: WiredWebhooks;
  auth: Authenticator;
  /** The routes the app serves (a file granting another is refused) and their default OAuth scopes. */
  served: ServedRoutes;
  /** Providers given by the embedding program (tests): kept whatever the file says. */
  fixedProviders: boolean;
  /** The MCP servers and settings (`mcp_servers`, `mcp`): a reload keeps unchanged servers' connections. */
  mcp?: { apply(config: GatewayConfig['mcp']): void };
  /** Whether the response cache was built at start (no model cached then: enabling one needs a restart). */
  cacheBuilt: boolean;
}

export type ReloadTrigger = 'SIGHUP' | 'file change';

/**
 * Live reload of the config file (docs/config.md, "Live reload"): on SIGHUP and when the file changes (watched,
 * debounced), read and validate it; a bad file changes nothing (one log line naming the file and each bad field,
 * counted, shown in health); a good one becomes the next generation, with one audit line and a `config.reloaded`
 * event saying what changed. Calls already running finish on the generation they started with.
 */
export function wireConfigReload(
  app: FastifyInstance,
  targets: ReloadTargets,
): { reload(trigger: ReloadTrigger): Promise<void> } {
  const file = targets.generations.current.config.source?.file;
  // The bytes last judged (applied or refused): the watch and its fallback poll may both report one change, and a
  // file already judged is not read twice (nor is a refused one reported twice).
  let judged = targets.generations.version;
  // Reloads run one after the other: a SIGHUP and a file event arriving together never interleave. At most one
  // waits behind the one running, and every trigger that comes while it waits joins it (a SIGHUP among them makes
  // it a SIGHUP): it reads the files as they are when it starts, so it sees whatever those triggers announced. A
  // storm of signals or file events costs two reads, not one reader thread, audit line and event each.
  let queue: Promise<void> = Promise.resolve();
  let waiting: { trigger: ReloadTrigger; done: Promise<void> } | undefined;
  const reloadNow = async (trigger: ReloadTrigger) => {
    if (trigger === 'file change' && file) {
      const onDisk = await versionOnDisk(file);
      if (onDisk === judged) return;
      if (onDisk !== undefined) judged = onDisk;
    }
    await reloadOnce(app, targets, trigger);
  };
  const reload = (trigger: ReloadTrigger): Promise<void> => {
    if (waiting) {
      if (trigger === 'SIGHUP') waiting.trigger = 'SIGHUP';
      return waiting.done;
    }
    const next: { trigger: ReloadTrigger; done: Promise<void> } = { trigger, done: Promise.resolve() };
    next.done = queue
      .then(() => {
        waiting = undefined;
        return reloadNow(next.trigger);
      })
      .catch((error: unknown) => app.log.error({ err: error }, 'config reload failed'));
    waiting = next;
    queue = next.done;
    return next.done;
  };
  if (file) {
    const watch = watchConfigFile(file, () => reload('file change'));
    app.addHook('onClose', async () => {
      watch.stop();
    });
    // A cluster worker starts on the config the primary read at start; one started after a live reload (a
    // replacement for a worker that died) catches up with the file at once rather than at its next change (a
    // file whose bytes are those running is not read again).
    void reload('file change');
  }
  return { reload };
}

/**
 * The version (short SHA-256) of the file's bytes now, read off the event loop with the config file's bounds (a
 * FIFO or a device is never waited on); undefined when it cannot be read (the reload says why).
 */
async function versionOnDisk(file: string): Promise<string | undefined> {
  try {
    return configVersionOf(await readBoundedFile(file, FILE_BOUNDS.config));
  } catch {
    return undefined;
  }
}

async function reloadOnce(app: FastifyInstance, targets: ReloadTargets, trigger: ReloadTrigger): Promise<void> {
  const { generations } = targets;
  const running = generations.current.config;
  const file = running.source?.file ?? '(no config file)';
  let next: GatewayConfig;
  try {
    next = await targets.read();
  } catch (error) {
    refuse(app, targets, trigger, file, error);
    return;
  }
  // A file put back to the bytes that run, after a refused edit, only clears the error.
  if (trigger === 'file change' && next.source?.version === running.source?.version) {
    if (generations.clearError())
      app.log.info({ config_file: file, version: generations.version }, 'config file is back to the running version');
    return;
  }
  const { config, needRestart } = keepRestartSettings(running, next);
  if (!targets.cacheBuilt && (config.cache.undeclaredModels || config.models.some((m) => m.cache)))
    needRestart.push('cache (no model cached at start: the response cache was not built)');
  let changes: ConfigChanges;
  try {
    changes = apply(targets, config);
  } catch (error) {
    refuse(app, targets, trigger, file, error);
    return;
  }
  if (needRestart.length > 0)
    app.log.warn(
      { config_file: file, settings: needRestart },
      `config reload: ${needRestart.join(', ')} need a restart; keeping the running values`,
    );
  const summary = summarize(changes);
  app.log.info(
    {
      audit: 'config.reloaded',
      trigger,
      config_file: file,
      version: generations.version,
      previous_version: running.source?.version ?? 'unknown',
      ...summary,
      ...(needRestart.length > 0 ? { need_restart: needRestart } : {}),
    },
    'config reloaded',
  );
  void targets.webhooks.webhooks.emit(EVENT.configReloaded, {
    version: generations.version,
    previous_version: running.source?.version ?? 'unknown',
    trigger,
    ...summary,
    need_restart: needRestart,
    instance: INSTANCE,
    ...(cluster.worker ? { worker: cluster.worker.id } : {}),
  });
}

/** Makes `config` the current generation and moves the long-lived state over to it; returns what changed. */
function apply(targets: ReloadTargets, config: GatewayConfig): ConfigChanges {
  checkConfigRoutes(config, targets.served.routes);
  const previous = targets.generations.current;
  const changes = diffConfigs(previous.config, config);
  const { generation, retired } = nextGeneration(previous, config, targets.limits, targets.fixedProviders);
  const { upstreams } = targets;
  // Circuits and pauses describe an endpoint's health: kept while the upstream is the same endpoint.
  const nextByName = new Map(config.upstreams.map((u) => [u.name, u]));
  for (const before of previous.config.upstreams) {
    const after = nextByName.get(before.name);
    if (!after || !sameEndpoint(before, after)) upstreams.breakers.forget(before.name);
    if (!after) upstreams.pauses.forget(before.name);
  }
  upstreams.capacity.update(config.upstreams);
  targets.pipeline.swap(generation);
  targets.catalog.update(config, generation.defaultProbe, generation.providers.builtins, generation.prices);
  if (changes.sections.includes('webhooks')) targets.webhooks.reconfigure(config.webhooks);
  if (changes.sections.includes('mcp')) targets.mcp?.apply(config.mcp);
  // `mcp` too: OAuth tokens' tools (mcp.oauth_tools) are the authenticator's.
  if (['auth.oauth', 'auth.basic_users', 'mcp'].some((section) => changes.sections.includes(section)))
    targets.auth.reconfigure({
      // The same issuer keeps its verifier (and its cached signing keys).
      oauth: !changes.sections.includes('auth.oauth')
        ? targets.auth.oauth
        : config.oauth
          ? oauthVerifier(config.oauth, targets.served)
          : undefined,
      basicUsers: config.basicUsers,
      oauthTools: config.mcp.oauthTools,
    });
  targets.generations.apply(generation);
  // undici's close waits for the requests these pools carry: a stream on a changed upstream finishes first.
  for (const provider of retired) void provider.close().catch(() => undefined);
  return changes;
}

function refuse(app: FastifyInstance, targets: ReloadTargets, trigger: ReloadTrigger, file: string, error: unknown) {
  const problems = (error as { problems?: unknown }).problems;
  const list = Array.isArray(problems) ? problems.map(String) : [(error as Error).message ?? String(error)];
  targets.generations.refuse(file, list);
  app.log.error(
    { config_file: file, trigger, problems: list, version: targets.generations.version },
    `config reload refused (${file}), keeping the running configuration: ${list.join('; ')}`,
  );
}

/** The audit line's and the event's account of a reload (names only). */
function summarize(changes: ConfigChanges): Record<string, unknown> {
  return {
    models_added: changes.models.added,
    models_removed: changes.models.removed,
    models_changed: changes.models.changed,
    upstreams_added: changes.upstreams.added,
    upstreams_removed: changes.upstreams.removed,
    upstreams_changed: changes.upstreams.changed,
    limits_changed: changes.limits,
    prices_changed: changes.prices,
    sections_changed: changes.sections,
  };
}
