// Single environment variables read into typed values (admin tokens, environment, integers, workers, log level,
// timeouts), each problem added to the list loadConfig reports at once.
import { availableParallelism } from 'node:os';
import { ENVIRONMENTS, type GatewayEnvironment } from './names.js';
import type { Timeouts } from './types.js';
import type { Env } from './env.js';

/** ADMIN_TOKEN may hold several comma-separated tokens, so a new one can be rolled out before the old one is removed. */
export function parseAdminTokens(raw: string | undefined): string[] {
  if (!raw) return [];
  return raw
    .split(',')
    .map((t) => t.trim())
    .filter((t) => t.length > 0);
}

/** Outside dev a gateway never starts unprotected, nor with a token short enough to guess. */
export const MIN_ADMIN_TOKEN_LENGTH = 16;

export function checkAdminTokens(environment: GatewayEnvironment, tokens: string[], problems: string[]): void {
  if (environment === 'dev') return;
  if (tokens.length === 0) {
    problems.push(`ADMIN_TOKEN: required when GATEWAY_ENV=${environment} (comma-separate several tokens to rotate)`);
  } else if (tokens.some((t) => t.length < MIN_ADMIN_TOKEN_LENGTH)) {
    problems.push(
      `ADMIN_TOKEN: every token must have at least ${MIN_ADMIN_TOKEN_LENGTH} characters when GATEWAY_ENV=${environment}`,
    );
  }
}

export function parseEnvironment(raw: string | undefined, problems: string[]): GatewayEnvironment {
  const value = raw ?? 'dev';
  if ((ENVIRONMENTS as readonly string[]).includes(value)) return value as GatewayEnvironment;
  problems.push(`GATEWAY_ENV: must be one of ${ENVIRONMENTS.join(', ')} (got "${value}")`);
  return 'dev';
}

export function envTimeouts(env: Env, problems: string[]): Partial<Timeouts> {
  return {
    connectMs: parseIntEnv(env, 'UPSTREAM_CONNECT_TIMEOUT_MS', problems),
    firstByteMs: parseIntEnv(env, 'UPSTREAM_FIRST_BYTE_TIMEOUT_MS', problems),
    idleMs: parseIntEnv(env, 'UPSTREAM_IDLE_TIMEOUT_MS', problems),
    totalMs: parseIntEnv(env, 'UPSTREAM_TOTAL_TIMEOUT_MS', problems),
  };
}

export function parseIntEnv(
  env: Env,
  name: string,
  problems: string[],
  min = 1,
  max = Number.MAX_SAFE_INTEGER,
): number | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  const value = Number(raw);
  if (!/^\d+$/.test(raw) || value < min || value > max) {
    problems.push(`${name}: must be a whole number from ${min} to ${max} (got "${raw.slice(0, 40)}")`);
    return undefined;
  }
  return value;
}

/** WORKERS: how many server processes share the port; "auto" is one per CPU core the process may use. */
export function parseWorkers(raw: string | undefined, problems: string[]): number {
  if (raw === undefined || raw === '') return 1;
  if (raw === 'auto') return Math.min(MAX_WORKERS, availableParallelism());
  if (/^\d+$/.test(raw) && Number(raw) >= 1 && Number(raw) <= MAX_WORKERS) return Number(raw);
  problems.push(`WORKERS: must be "auto" or a whole number from 1 to ${MAX_WORKERS} (got "${raw.slice(0, 40)}")`);
  return 1;
}

export const MAX_WORKERS = 64;

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

export function parseLogLevel(raw: string | undefined, problems: string[]): string {
  if (raw === undefined || raw === '') return 'info';
  if (LOG_LEVELS.includes(raw)) return raw;
  problems.push(`LOG_LEVEL: must be one of ${LOG_LEVELS.join(', ')} (got "${raw.slice(0, 40)}")`);
  return 'info';
}
