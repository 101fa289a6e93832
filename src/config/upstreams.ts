// Upstreams: a config file entry, or the one the UPSTREAM_* variables describe, into an UpstreamConfig, with the
// timeouts merged from the defaults, the file and the environment.
import { DEFAULT_AZURE_API_VERSION, PROVIDER_KIND_NAMES, providerKind } from './provider-presets.js';
import { upstreamSchema, type ConfigFile } from './schema.js';
import type { Timeouts, UpstreamConfig } from './types.js';
import { isLoopbackHost } from '../net/address-guard.js';
import type { Env } from './env.js';
import { resolveSecretRef } from './secret-ref.js';
import { parseIntEnv } from './env-values.js';

/** Defaults chosen for chat workloads: generation can legitimately take minutes, silence for 60 s cannot. */
export const DEFAULT_TIMEOUTS: Timeouts = { connectMs: 5_000, firstByteMs: 60_000, idleMs: 60_000, totalMs: 600_000 };
export const ENV_UPSTREAM_NAME = 'default';

export function mergeTimeouts(
  base: Timeouts,
  file: ConfigFile['timeouts'] | undefined,
  override: Partial<Timeouts> = {},
): Timeouts {
  return {
    connectMs: override.connectMs ?? file?.connect_ms ?? base.connectMs,
    firstByteMs: override.firstByteMs ?? file?.first_byte_ms ?? base.firstByteMs,
    idleMs: override.idleMs ?? file?.idle_ms ?? base.idleMs,
    totalMs: override.totalMs ?? file?.total_ms ?? base.totalMs,
  };
}

/** What reading an upstream entry needs besides the entry: the default timeouts, where secrets come from, the problems found. */
export interface UpstreamReading {
  defaults: Timeouts;
  env: Env;
  /** The config file's folder, which a secret file's relative path is read from. */
  fileDir: string;
  problems: string[];
}

export function toUpstream(
  entry: NonNullable<ConfigFile['upstreams']>[number],
  index: number,
  { defaults, env, fileDir, problems }: UpstreamReading,
): UpstreamConfig {
  const apiKey = resolveSecretRef(
    { env: entry.api_key_env, file: entry.api_key_file },
    { env: `upstreams[${index}].api_key_env`, file: `upstreams[${index}].api_key_file` },
    env,
    fileDir,
    problems,
  );
  const preset = providerKind(entry.kind);
  const baseUrl = entry.base_url ?? preset?.baseUrl;
  if (!baseUrl) problems.push(`upstreams[${index}].base_url: required for kind ${entry.kind}`);
  else if (insecure(baseUrl) && !entry.allow_insecure_http) {
    problems.push(
      `upstreams[${index}].base_url: plain http:// to a host that is not loopback; use https:// (TLS 1.2+), or set allow_insecure_http: true for a trusted private network`,
    );
  }
  return {
    name: entry.name,
    kind: entry.kind,
    auth: preset?.auth ?? 'bearer',
    deploymentInPath: preset?.deploymentInPath ?? false,
    apiVersion: preset?.deploymentInPath ? (entry.api_version ?? DEFAULT_AZURE_API_VERSION) : entry.api_version,
    streamUsage:
      entry.stream_usage === undefined
        ? (preset?.streamUsage ?? 'off')
        : entry.stream_usage === 'auto'
          ? 'auto'
          : entry.stream_usage
            ? 'on'
            : 'off',
    baseUrl: (baseUrl ?? 'http://invalid').replace(/\/+$/, ''),
    apiKey,
    maxConnections: entry.max_connections,
    maxConcurrent: entry.max_concurrent,
    queueTimeoutMs: entry.queue_timeout_ms,
    timeouts: mergeTimeouts(defaults, entry.timeouts),
    healthCheck: entry.health_check,
    defaultMaxTokens: entry.default_max_tokens,
    batch: batchMode(entry, index, problems),
  };
}

/** `batch`: the entry's, else native where the kind has a batch API the gateway speaks (Azure's is not built). */
function batchMode(
  entry: NonNullable<ConfigFile['upstreams']>[number],
  index: number,
  problems: string[],
): 'native' | 'gateway' {
  const preset = providerKind(entry.kind);
  if (entry.batch === 'native' && preset?.deploymentInPath)
    problems.push(`upstreams[${index}].batch: native batches are not built for kind ${entry.kind}; use gateway`);
  return entry.batch ?? (preset?.nativeBatches ? 'native' : 'gateway');
}

/** Plain HTTP to anything but this machine: keys and prompts would cross a network in clear text. */
export function insecure(baseUrl: string): boolean {
  const url = URL.canParse(baseUrl) ? new URL(baseUrl) : undefined;
  return url?.protocol === 'http:' && !isLoopbackHost(url.hostname);
}

export function addEnvUpstream(env: Env, upstreams: UpstreamConfig[], timeouts: Timeouts, problems: string[]): boolean {
  const baseUrl = env.UPSTREAM_BASE_URL ?? '';
  if (!/^https?:\/\/[^/]/i.test(baseUrl) || !URL.canParse(baseUrl)) {
    problems.push('UPSTREAM_BASE_URL: must be an http:// or https:// URL'); // not echoed: it may embed a key
    return false;
  }
  if (upstreams.some((u) => u.name === ENV_UPSTREAM_NAME)) {
    problems.push(`UPSTREAM_BASE_URL: the config file already defines an upstream named "${ENV_UPSTREAM_NAME}"`);
    return false;
  }
  if (insecure(baseUrl) && env.UPSTREAM_ALLOW_INSECURE_HTTP !== 'true') {
    problems.push(
      'UPSTREAM_BASE_URL: plain http:// to a host that is not loopback; use https:// (TLS 1.2+), or set UPSTREAM_ALLOW_INSECURE_HTTP=true for a trusted private network',
    );
    return false;
  }
  const kind = env.UPSTREAM_KIND || 'openai-compatible';
  const preset = providerKind(kind);
  if (!preset) {
    problems.push(`UPSTREAM_KIND: must be one of ${PROVIDER_KIND_NAMES.join(', ')} (got "${kind.slice(0, 40)}")`);
    return false;
  }
  // Built through the same path as a file entry: the schema's defaults, the same preset rules, the same key lookup.
  const maxConcurrent = parseIntEnv(env, 'UPSTREAM_MAX_CONCURRENT', problems, 1, 1_000_000);
  const queueTimeoutMs = parseIntEnv(env, 'UPSTREAM_QUEUE_TIMEOUT_MS', problems, 0, 60_000);
  const entry = upstreamSchema.safeParse({
    name: ENV_UPSTREAM_NAME,
    kind,
    base_url: baseUrl,
    allow_insecure_http: true, // checked above, against UPSTREAM_ALLOW_INSECURE_HTTP
    ...(preset?.deploymentInPath && env.UPSTREAM_API_VERSION !== undefined
      ? { api_version: env.UPSTREAM_API_VERSION }
      : {}),
    ...(env.UPSTREAM_API_KEY ? { api_key_env: 'UPSTREAM_API_KEY' } : {}),
    ...(maxConcurrent !== undefined ? { max_concurrent: maxConcurrent } : {}),
    ...(queueTimeoutMs !== undefined ? { queue_timeout_ms: queueTimeoutMs } : {}),
  });
  if (!entry.success) {
    problems.push(
      ...entry.error.issues.map((issue) => `UPSTREAM_* (${issue.path.join('.') || 'upstream'}): ${issue.message}`),
    );
    return false;
  }
  upstreams.push(toUpstream(entry.data, 0, { defaults: timeouts, env, fileDir: '.', problems }));
  return true;
}

export function isHttpUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '';
  } catch {
    return false;
  }
}
