import { ConfigError, loadConfig } from '../config/load.js';
import type { GatewayConfig } from '../config/types.js';
import { checkConfigRoutes } from '../config/route-check.js';
import { hashPassword } from '../secrets/password.js';
import { openStateStores, type StateStores } from '../store/open-state-stores.js';
import { openUsageStore } from '../store/open-usage-store.js';
import { openSqliteStore } from '../store/sqlite/sqlite-store.js';
import { keysCommand, servedRoutes } from './keys-command.js';
import { modelsCommand } from './models-command.js';
import { tailUsage, usageCommand } from './usage-command.js';
import { toolCallsCommand } from './tool-calls-command.js';
import { listDeadLetters, redeliver, sendTestEvent, type CliOutput } from './webhooks-command.js';

const HELP: Record<string, string> = {
  start: `gateway start
  Starts the gateway (the same as \`npm start\` / \`node dist/main.js\`), configured by the environment:
  GATEWAY_ENV, GATEWAY_CONFIG, PORT, HOST, DATA_DIR, ADMIN_TOKEN, UPSTREAM_*, REDIS_URL, DATABASE_URL, WORKERS.`,
  config: `gateway config check [file]
  Reads the config file (the argument, or GATEWAY_CONFIG) with the environment, as the server would, and prints
  either a summary or every problem, each naming its field. Exit code 0 when valid, 2 otherwise.`,
  keys: `gateway keys create --name N --models m1,m2|* [--routes chat,models,responses,embeddings] [--rpm N] [--tpm N] [--concurrent N]
                   [--budget-tokens N] [--budget-usd X] [--budget-period 30d] [--expires 90d]
                   [--mcp-tools 'fs/read_*,github/*' (or the flag repeated; with --routes ...,mcp)]
  gateway keys list [--json]
  gateway keys rotate <key id> [--grace 24h]
  gateway keys revoke <key id>
  Scoped API keys of this environment (GATEWAY_ENV); the secret is printed once, at creation. docs/auth.md`,
  models: `gateway models [--prices] [--format table|json] [model ...]
  The declared models (and any model named here, as the gateway would route it) with their context window and,
  with --prices, the prices that apply (USD per million tokens) and where each comes from: the config, the price
  catalog (its date is printed), or none. Reads the config file only: no server needed. docs/usage.md`,
  users: `gateway users hash-password
  Reads a password (12 characters or more) on standard input and prints its scrypt hash, for auth.basic_users.`,
  usage: `gateway usage [--by model|caller|route|day] [--since 7d] [--format table|csv|json]
  Requests, errors, tokens, cost and mean latency per group over the period ending now.
gateway usage tail [--failures] [--interval 2] [--format table|json]
  Live: the last 10 requests, then each new one as it is recorded, until Ctrl-C. docs/usage.md
gateway usage tools [--since 7d] [--format table|csv|json]
  MCP tool calls per caller, server and tool: calls, errors, refused, p50/p99 ms, bytes in and out. docs/mcp.md`,
  webhooks: `gateway webhooks test <subscription>
  gateway webhooks dead [--limit N] [--json]
  gateway webhooks redeliver <delivery id>... | --all
  Signed test events, dead letters and their redelivery. docs/webhooks.md`,
};

export const USAGE = `usage: gateway <command> [--help]

  start              run the gateway
  config check       validate a config file and explain each problem
  keys               create, list, rotate, revoke scoped API keys
  models             the models with their prices and context windows, and where each comes from
  users              hash a password for Basic authentication
  usage              usage summaries by model, key or day (table, CSV, JSON); MCP tool calls
  webhooks           send a test event, list and redeliver dead letters

Every command reads the same environment as the server (GATEWAY_ENV, GATEWAY_CONFIG, DATA_DIR, REDIS_URL,
DATABASE_URL). \`gateway <command> --help\` for details.`;

/** The operators' command line, free of process globals: the entry point passes argv, env and the output. */

export async function runCli(
  argv: string[],
  env: NodeJS.ProcessEnv,
  io: CliOutput,
  readStdin: () => Promise<string>,
  stop?: AbortSignal,
): Promise<number> {
  const [area, command, ...rest] = argv;
  if (area === undefined || area === 'help' || area === '--help' || area === '-h') {
    io.out(USAGE);
    return 0;
  }
  const help = HELP[area];
  if (help === undefined) {
    io.err(`unknown command "${area}"\n\n${USAGE}`);
    return 2;
  }
  if (argv.includes('--help') || argv.includes('-h')) {
    io.out(help);
    return 0;
  }
  switch (area) {
    case 'start':
      await import('../main.js'); // the server's entry point: runs until a signal stops it
      return new Promise<number>(() => undefined);
    case 'config':
      if (command !== 'check') {
        io.err(help);
        return 2;
      }
      return configCheck(rest[0] === undefined ? env : { ...env, GATEWAY_CONFIG: rest[0] }, io);
    case 'users': {
      if (command !== 'hash-password') {
        io.err(help);
        return 2;
      }
      const password = (await readStdin()).replace(/\r?\n$/, '');
      if (password.length < 12) {
        io.err('a password of 12 characters or more, on standard input');
        return 2;
      }
      io.out(await hashPassword(password));
      return 0;
    }
    default:
      break;
  }
  const config = loadOrExplain(env, io);
  if (!config) return 2;
  if (area === 'models') return modelsCommand(config, [command ?? '', ...rest].filter(Boolean), io);
  if (area === 'webhooks' && command === 'test') {
    if (!rest[0]) {
      io.err(help);
      return 2;
    }
    return sendTestEvent(config, rest[0], io);
  }
  const sqlite = await openSqliteStore(config.dataDir);
  let state: StateStores | undefined;
  try {
    if (area === 'usage') {
      const opened = await openUsageStore({ ...config, usage: { ...config.usage, enabled: true } }, sqlite);
      try {
        if (!opened) return 2;
        if (command === 'tools') return await toolCallsCommand(opened.toolCalls, rest, io);
        if (command === 'tail')
          return await tailUsage(opened.store, rest, io, {
            signal: stop ?? new AbortController().signal,
            usageEnabled: config.usage.enabled,
          });
        return await usageCommand(opened.store, [command ?? '', ...rest].filter(Boolean), io);
      } finally {
        await opened?.close();
      }
    }
    state = await openStateStores(config, sqlite);
    if (area === 'keys') return await keysCommand(state.keys, config.environment, [command ?? '', ...rest], io);
    if (command === 'dead') {
      const limitAt = rest.indexOf('--limit');
      const limit = limitAt >= 0 ? Number(rest[limitAt + 1]) : 100;
      if (!Number.isInteger(limit) || limit < 1) {
        io.err('--limit takes a whole number of 1 or more');
        return 2;
      }
      return await listDeadLetters(state.outbox, limit, rest.includes('--json'), io);
    }
    if (command === 'redeliver')
      return await redeliver(
        state.outbox,
        rest.filter((a) => !a.startsWith('--')),
        rest.includes('--all'),
        io,
      );
    io.err(help);
    return 2;
  } finally {
    await state?.close();
    await sqlite.close();
  }
}

/** The config, or undefined once its problems are written; `routes`: those the server serves (its grants checked). */
function loadOrExplain(env: NodeJS.ProcessEnv, io: CliOutput, routes?: readonly string[]): GatewayConfig | undefined {
  try {
    const config = loadConfig(env);
    if (routes) checkConfigRoutes(config, routes);
    return config;
  } catch (error) {
    if (error instanceof ConfigError) {
      io.err(`configuration problems:\n${error.problems.map((p) => `  - ${p}`).join('\n')}`);
      return undefined;
    }
    throw error;
  }
}

/** `gateway config check`: what the server would make of this configuration, or every problem in it. */
async function configCheck(env: NodeJS.ProcessEnv, io: CliOutput): Promise<number> {
  const config = loadOrExplain(env, io, await servedRoutes());
  if (!config) {
    io.err(
      '\nEach line names the field (or environment variable) and what is wrong with it; docs/config.md lists every setting.',
    );
    return 2;
  }
  io.out(
    `ok: ${env.GATEWAY_CONFIG ?? '(no config file: environment only)'} is valid for environment ${config.environment}`,
  );
  io.out(
    `  upstreams: ${config.upstreams.map((u) => `${u.name} (${u.kind}, ${new URL(u.baseUrl).host})`).join(', ') || 'none'}`,
  );
  io.out(
    `  models: ${config.models.map((m) => m.id).join(', ') || 'none declared'}${config.defaultUpstream ? `; others go to ${config.defaultUpstream}` : ''}`,
  );
  io.out(
    `  price catalog: ${config.priceCatalog ? `as of ${config.priceCatalog.asOf}, ${config.priceCatalog.models} models (gateway models --prices)` : 'none'}`,
  );
  io.out(
    `  limits: ${config.limits.caller || config.limits.models.size > 0 || config.limits.upstreams.size > 0 ? 'configured' : 'none'}; store: ${config.redisUrl ? 'Redis' : 'SQLite'}; usage records: ${config.usage.enabled ? (config.databaseUrl ? 'PostgreSQL' : 'SQLite') : 'off'}`,
  );
  io.out(
    `  metrics: ${config.metricsEnabled ? 'GET /metrics' : 'off'}; tracing: ${config.tracing ? `OTLP to ${new URL(config.tracing.endpoint).host}` : 'off'}; dashboard: ${config.dashboard.enabled ? '/dashboard' : 'off'}`,
  );
  io.out(
    `  webhooks: ${config.webhooks.subscriptions.map((s) => s.id).join(', ') || 'none'}; OAuth: ${config.oauth ? config.oauth.issuer : 'off'}; Basic users: ${config.basicUsers.length}; HTTPS: ${config.tls ? 'on' : 'off'}`,
  );
  return 0;
}
