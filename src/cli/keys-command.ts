import { KeyService, stateOf } from '../auth/key-service.js';
import { isGatewayError } from '../errors/gateway-error.js';
import type { GatewayEnvironment } from '../config/names.js';
import { toolPatternsProblems } from '../config/tool-patterns.js';
import { grantableRoutes } from '../names/api-names.js';
import type { ApiKeyRecord, KeyStore } from '../store/store-contract.js';
import type { CliOutput } from './webhooks-command.js';

/**
 * `--name x --routes chat` → { name: 'x', routes: 'chat' }; bare flags → 'true'; the rest are positionals. A flag
 * named in `repeatable` may be given several times, its values joined by commas (as if given once as a list);
 * any other given twice keeps its last value.
 */
export function parseFlags(
  args: string[],
  repeatable: ReadonlySet<string> = new Set(),
): { flags: Record<string, string>; positionals: string[] } {
  const flags: Record<string, string> = {};
  const positionals: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    if (!arg.startsWith('--')) {
      positionals.push(arg);
      continue;
    }
    const next = args[i + 1];
    const name = arg.slice(2);
    if (next === undefined || next.startsWith('--')) flags[name] = 'true';
    else {
      const earlier = flags[name];
      flags[name] = repeatable.has(name) && earlier !== undefined ? `${earlier},${next}` : next;
      i++;
    }
  }
  return { flags, positionals };
}

/** "90s", "15m", "24h", "30d" → milliseconds; undefined when malformed. */
export function parseDuration(text: string): number | undefined {
  const match = /^(\d+)(s|m|h|d)$/.exec(text.trim());
  if (!match) return undefined;
  const unit = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 }[match[2] as 's' | 'm' | 'h' | 'd'];
  return Number(match[1]) * unit;
}

class UsageError extends Error {}

function positiveInt(flags: Record<string, string>, name: string): number | undefined {
  const raw = flags[name];
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new UsageError(`--${name} takes a whole number of 1 or more (got "${raw}")`);
  return n;
}

function rightsFrom(
  flags: Record<string, string>,
  nowMs: number,
  grantable: readonly string[],
): Omit<ApiKeyRecord, 'keyId' | 'environment' | 'hash' | 'createdMs'> {
  const name = flags.name;
  if (!name || name === 'true') throw new UsageError('--name is required (who or what the key is for)');
  const routes = (flags.routes ?? 'chat')
    .split(',')
    .map((r) => r.trim())
    .filter(Boolean);
  const unknown = routes.filter((r) => !grantable.includes(r));
  if (unknown.length > 0 || routes.length === 0)
    throw new UsageError(`--routes: a comma-separated list of ${grantable.join(', ')} (got "${flags.routes}")`);
  const models = (flags.models ?? '')
    .split(',')
    .map((m) => m.trim())
    .filter(Boolean);
  if (models.length === 0)
    throw new UsageError('--models is required: a comma-separated list of model ids, or "*" for every model');
  const mcpTools = toolPatternsFrom(flags);
  const rpm = positiveInt(flags, 'rpm');
  const tpm = positiveInt(flags, 'tpm');
  const concurrent = positiveInt(flags, 'concurrent');
  const budgetTokens = positiveInt(flags, 'budget-tokens');
  const budgetUsd = flags['budget-usd'] === undefined ? undefined : Number(flags['budget-usd']);
  if (budgetUsd !== undefined && !(Number.isFinite(budgetUsd) && budgetUsd > 0))
    throw new UsageError(`--budget-usd takes an amount above 0 (got "${flags['budget-usd']}")`);
  let budget: ApiKeyRecord['budget'];
  if (budgetTokens !== undefined || budgetUsd !== undefined) {
    const period = parseDuration(flags['budget-period'] ?? '30d');
    if (period === undefined) throw new UsageError('--budget-period: a duration like 1d or 30d');
    budget = {
      ...(budgetTokens !== undefined ? { tokens: budgetTokens } : {}),
      ...(budgetUsd !== undefined ? { cost_usd: budgetUsd } : {}),
      period_seconds: period / 1000,
    };
  }
  let expiresMs: number | undefined;
  if (flags.expires !== undefined) {
    const after = parseDuration(flags.expires);
    const at = after !== undefined ? nowMs + after : Date.parse(flags.expires);
    if (Number.isNaN(at) || at <= nowMs) throw new UsageError('--expires: a duration (90d) or a future ISO 8601 time');
    expiresMs = at;
  }
  return {
    name,
    routes,
    models,
    ...(rpm !== undefined || tpm !== undefined || concurrent !== undefined
      ? {
          limits: {
            ...(rpm !== undefined ? { requests_per_minute: rpm } : {}),
            ...(tpm !== undefined ? { tokens_per_minute: tpm } : {}),
            ...(concurrent !== undefined ? { concurrent } : {}),
          },
        }
      : {}),
    ...(budget ? { budget } : {}),
    ...(mcpTools.length > 0 ? { mcpTools } : {}),
    ...(expiresMs !== undefined ? { expiresMs } : {}),
  };
}

/** Flags that may be repeated (`--mcp-tools fs/read_* --mcp-tools github/*`), their values joined. */
const REPEATABLE_FLAGS: ReadonlySet<string> = new Set(['mcp-tools']);

/** `--mcp-tools 'fs/read_*,github/*'` (or the flag repeated): the MCP tools a key may call, each pattern checked. */
function toolPatternsFrom(flags: Record<string, string>): string[] {
  const raw = flags['mcp-tools'];
  if (raw === undefined) return [];
  if (raw === 'true')
    throw new UsageError("--mcp-tools takes <server>/<tool glob> patterns, e.g. 'fs/read_*,github/*'");
  const patterns = [...new Set(raw.split(',').map((p) => p.trim()))].filter(Boolean);
  const problems = toolPatternsProblems(patterns, '--mcp-tools');
  if (problems.length > 0) throw new UsageError(problems.join('\n'));
  return patterns;
}

/** The routes the server serves, a key's possible rights: the names table's and its registered surfaces' own. */
export async function servedRoutes(): Promise<readonly string[]> {
  const { SURFACES } = await import('../surfaces/surface-registry.js');
  return grantableRoutes(SURFACES);
}

/**
 * `gateway keys create|list|rotate|revoke`. The secret is printed once, at creation (and rotation), and stored
 * only as its SHA-256.
 */
export async function keysCommand(
  keys: KeyStore,
  environment: GatewayEnvironment,
  args: string[],
  io: CliOutput,
  nowMs = Date.now(),
): Promise<number> {
  const grantable = await servedRoutes();
  const [command, ...rest] = args;
  const { flags, positionals } = parseFlags(rest, REPEATABLE_FLAGS);
  // the same service code as the admin API
  const service = new KeyService(keys, environment, undefined, undefined, grantable);
  try {
    switch (command) {
      case 'create': {
        const rights = rightsFrom(flags, nowMs, grantable);
        const { key, view } = await service.create(rights, nowMs);
        io.out(
          `created key ${view.keyId} (${rights.name}) for ${environment}; routes ${rights.routes.join(',')}; models ${rights.models.join(',')}` +
            (rights.mcpTools ? `; mcp tools ${rights.mcpTools.join(',')}` : ''),
        );
        io.out(`key: ${key}`);
        io.out('Store it now: it is shown only once.');
        return 0;
      }
      case 'list': {
        const all = await keys.list();
        if (flags.json === 'true') {
          io.out(JSON.stringify(all.map(({ hash: _hash, ...r }) => ({ ...r, status: stateOf(r, nowMs) }))));
          return 0;
        }
        if (all.length === 0) io.out('no keys');
        for (const r of all) {
          io.out(
            `${r.keyId}  ${stateOf(r, nowMs).padEnd(8)} ${r.name}  routes=${r.routes.join(',')}  models=${r.models.join(',')}` +
              `${r.mcpTools?.length ? `  mcp_tools=${r.mcpTools.join(',')}` : ''}` +
              `${r.limits ? `  limits=${JSON.stringify(r.limits)}` : ''}${r.budget ? `  budget=${[r.budget.tokens !== undefined ? `${r.budget.tokens} tokens` : '', r.budget.cost_usd !== undefined ? `$${r.budget.cost_usd}` : ''].filter(Boolean).join(' + ')}/${r.budget.period_seconds}s` : ''}` +
              `${r.expiresMs !== undefined ? `  expires=${new Date(r.expiresMs).toISOString()}` : ''}${r.rotatedFrom ? `  rotated_from=${r.rotatedFrom}` : ''}`,
          );
        }
        return 0;
      }
      case 'rotate': {
        const [keyId] = positionals;
        const old = keyId === undefined ? undefined : await keys.get(keyId);
        if (!old) throw new UsageError(`usage: gateway keys rotate <key id> [--grace 24h]; no key "${keyId ?? ''}"`);
        if (stateOf(old, nowMs) !== 'active')
          throw new UsageError(`key ${old.keyId} is ${stateOf(old, nowMs)}: only an active key can be rotated`);
        const grace = parseDuration(flags.grace ?? '24h');
        if (grace === undefined) throw new UsageError('--grace: a duration like 1h or 7d');
        const { key, view, previous } = await service.rotate(old.keyId, grace, nowMs);
        io.out(
          `created key ${view.keyId} replacing ${old.keyId}, same rights; ${old.keyId} keeps working until ${new Date(previous.expiresMs ?? nowMs).toISOString()}`,
        );
        io.out(`key: ${key}`);
        io.out('Store it now: it is shown only once.');
        return 0;
      }
      case 'revoke': {
        const [keyId] = positionals;
        if (keyId === undefined || !(await keys.get(keyId)))
          throw new UsageError(`usage: gateway keys revoke <key id>; no key "${keyId ?? ''}"`);
        await service.revoke(keyId, nowMs);
        io.out(`revoked ${keyId} (every instance refuses it within 5 s)`);
        return 0;
      }
      default:
        throw new UsageError(
          'usage: gateway keys create --name N --models m1,m2|* [--routes chat,models,responses,embeddings] [--rpm N] [--tpm N] [--concurrent N] [--budget-tokens N] [--budget-usd X] [--budget-period 30d] [--expires 90d] [--mcp-tools server/tool-glob,...]\n       gateway keys list [--json] | rotate <key id> [--grace 24h] | revoke <key id>',
        );
    }
  } catch (error) {
    if (error instanceof UsageError) {
      io.err(error.message);
      return 2;
    }
    if (isGatewayError(error) && error.status < 500) {
      io.err(`${error.message} ${JSON.stringify(error.details)}`);
      return 2;
    }
    throw error;
  }
}
