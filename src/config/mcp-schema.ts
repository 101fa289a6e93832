import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { Env } from './env.js';
import { resolveSecretRef } from './secret-ref.js';
import { toolPatternsProblems } from './tool-patterns.js';

/**
 * `mcp_servers` (the upstream MCP servers, in the shape MCP clients' own config files use) and `mcp` (the MCP
 * gateway's settings): docs/mcp.md. A server is a `url` (Streamable HTTP, or legacy SSE where it only speaks that)
 * or a `command` (stdio, a child process). Secrets (a header's value, a child's environment variable) come from the
 * environment or a file, never the config file: a header whose name says it carries one refuses a literal value.
 */

/**
 * A server's name: what its tools are listed under (`<server>__<tool>` on `/mcp`), its own endpoint (`/mcp/<name>`),
 * a key's `mcp_tools` patterns (`<server>/<tool glob>`) and a Responses tool's `server_label`. Lower case letters,
 * digits and single hyphens: no underscore, so the `__` that joins it to a tool's name is never part of it.
 */
export const MCP_SERVER_NAME = /^[a-z0-9](?:[a-z0-9-]{0,30}[a-z0-9])?$/;

/** A value the config names by reference (a secret) or, for a value that is not one, literally. */
const valueRef = z.union([
  z.string().max(8192),
  z
    .object({
      env: z.string().min(1).max(256).optional(),
      file: z.string().min(1).max(4096).optional(),
      /** Put before the secret (`"Bearer "`). */
      prefix: z.string().max(64).optional(),
    })
    .strict()
    .refine((ref) => (ref.env === undefined) !== (ref.file === undefined), {
      message: 'give exactly one of env or file',
    }),
]);

/** Header names whose value is a secret: a literal value for one is refused (use `{env}` or `{file}`). */
const SECRET_HEADER = /authorization|cookie|token|secret|key|password|credential/i;
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,255}$/;

const limitsSchema = z
  .object({
    /** Calls a minute, across every caller (a sliding window: the limits' GCRA). */
    calls_per_minute: z.number().int().min(1).max(10_000_000).optional(),
    /** Calls in flight at once. */
    concurrent: z.number().int().min(1).max(100_000).optional(),
  })
  .strict();

export const mcpServerSchema = z
  .object({
    name: z.string().regex(MCP_SERVER_NAME, {
      message: 'lower case letters, digits and single hyphens, at most 32 (no underscore: `__` joins it to tool names)',
    }),
    /** Streamable HTTP (or legacy SSE) endpoint. */
    url: z
      .url({ protocol: /^https?$/ })
      .max(2048)
      .optional(),
    /** `auto`: Streamable HTTP, falling back to legacy SSE when the server refuses its POST with a 4xx. */
    transport: z.enum(['auto', 'streamable_http', 'sse']).default('auto'),
    headers: z.record(z.string().regex(HEADER_NAME), valueRef).optional(),
    /** A stdio server: the program and its arguments (run without a shell). */
    command: z.string().min(1).max(4096).optional(),
    args: z.array(z.string().max(8192)).max(256).optional(),
    /** The child's environment: these only, plus PATH and HOME (the SDK's safe defaults), never the gateway's own. */
    env: z.record(z.string().regex(ENV_NAME), valueRef).optional(),
    /** The child's working folder (relative to the config file). */
    cwd: z.string().min(1).max(4096).optional(),
    /** How long a connection (a child's start, an HTTP initialize) may take before the call fails. */
    connect_timeout_seconds: z.number().min(0.1).max(600).default(30),
    /** How long one tool call may take; past it the call fails (`mcp_tool_timeout`) and the server is told to cancel. */
    call_timeout_seconds: z.number().min(0.1).max(3_600).default(60),
    /** Across every caller. */
    limits: limitsSchema.optional(),
  })
  .strict()
  .superRefine((server, ctx) => {
    if ((server.url === undefined) === (server.command === undefined))
      ctx.addIssue({ code: 'custom', message: 'give exactly one of url (HTTP) or command (stdio)' });
    if (server.url === undefined && server.headers !== undefined)
      ctx.addIssue({ code: 'custom', path: ['headers'], message: 'headers are for a url server' });
    if (server.command === undefined && (server.args !== undefined || server.env !== undefined || server.cwd))
      ctx.addIssue({ code: 'custom', message: 'args, env and cwd are for a command (stdio) server' });
    for (const [name, value] of Object.entries(server.headers ?? {}))
      if (typeof value === 'string' && SECRET_HEADER.test(name))
        ctx.addIssue({
          code: 'custom',
          path: ['headers', name],
          message: 'secrets do not belong in the config file: give { env: VARIABLE } or { file: path }',
        });
  });

export const mcpServersSchema = z
  .array(mcpServerSchema)
  .max(256)
  .superRefine((servers, ctx) => {
    const seen = new Set<string>();
    servers.forEach((server, i) => {
      if (seen.has(server.name))
        ctx.addIssue({ code: 'custom', path: [i, 'name'], message: `"${server.name}" is named twice` });
      seen.add(server.name);
    });
  });

export const mcpSectionSchema = z
  .object({
    /** The largest arguments of one tool call, JSON bytes (413 `mcp_arguments_too_large`). */
    max_argument_bytes: z
      .number()
      .int()
      .min(1024)
      .max(64 * 1024 * 1024)
      .default(1024 * 1024),
    /** The largest result of one tool call passed on, JSON bytes (larger: `mcp_upstream_error`). */
    max_result_bytes: z
      .number()
      .int()
      .min(1024)
      .max(256 * 1024 * 1024)
      .default(8 * 1024 * 1024),
    /** Each caller's own tool calls (a key's `limits` may not say; these apply to every caller but the admin). */
    caller_limits: limitsSchema.prefault({ calls_per_minute: 600, concurrent: 16 }),
    /** Tool calls one model answer may make through the gateway's loop (Responses `mcp`, Messages `mcp_servers`). */
    max_loop_calls: z.number().int().min(1).max(256).default(16),
    /** The tools an OAuth token with the `mcp` route may call (patterns as a key's `mcp_tools`); default none. */
    oauth_tools: z.array(z.string().min(1).max(300)).max(1024).default([]),
  })
  .strict()
  .prefault({});

export type McpServerFileEntry = z.infer<typeof mcpServerSchema>;
export type McpSection = z.infer<typeof mcpSectionSchema>;

/** Calls a minute and in flight at once (either absent: no such limit). */
export interface McpLimits {
  callsPerMinute: number | undefined;
  concurrent: number | undefined;
}

/** One upstream MCP server as the program reads it: secrets resolved, durations in ms. */
export interface McpServerConfig {
  name: string;
  /**
   * A digest of everything the connection is made with (secrets' values included, never shown): a reload that leaves
   * it unchanged keeps the server's connection; one that changes it (a rotated secret too) reconnects.
   */
  fingerprint: string;
  connectTimeoutMs: number;
  callTimeoutMs: number;
  limits: McpLimits;
  /** The values read from the environment or a file (never logged, scrubbed from what the server answers). */
  secrets: string[];
  connection:
    | { kind: 'http'; url: string; transport: 'auto' | 'streamable_http' | 'sse'; headers: Record<string, string> }
    | { kind: 'stdio'; command: string; args: string[]; env: Record<string, string>; cwd: string | undefined };
}

export interface McpConfig {
  servers: McpServerConfig[];
  maxArgumentBytes: number;
  maxResultBytes: number;
  callerLimits: McpLimits;
  maxLoopCalls: number;
  oauthTools: string[];
}

/** The two sections as the program reads them; each unreadable secret is a problem naming its field. */
export function toMcp(
  servers: McpServerFileEntry[] | undefined,
  section: McpSection,
  env: Env,
  fileDir: string,
  problems: string[],
): McpConfig {
  problems.push(...toolPatternsProblems(section.oauth_tools, 'mcp.oauth_tools'));
  return {
    servers: (servers ?? []).map((server, i) => toServer(server, `mcp_servers[${i}]`, env, fileDir, problems)),
    maxArgumentBytes: section.max_argument_bytes,
    maxResultBytes: section.max_result_bytes,
    callerLimits: toLimits(section.caller_limits),
    maxLoopCalls: section.max_loop_calls,
    oauthTools: section.oauth_tools,
  };
}

function toServer(
  server: McpServerFileEntry,
  where: string,
  env: Env,
  fileDir: string,
  problems: string[],
): McpServerConfig {
  const secrets: string[] = [];
  const value = (ref: z.infer<typeof valueRef>, at: string): string => {
    if (typeof ref === 'string') return ref;
    const secret = resolveSecretRef(ref, { env: `${at}.env`, file: `${at}.file` }, env, fileDir, problems);
    if (secret !== undefined) secrets.push(secret);
    return `${ref.prefix ?? ''}${secret ?? ''}`;
  };
  const values = (record: Record<string, z.infer<typeof valueRef>> | undefined, at: string) =>
    Object.fromEntries(Object.entries(record ?? {}).map(([name, ref]) => [name, value(ref, `${at}.${name}`)]));
  const common = {
    name: server.name,
    connectTimeoutMs: Math.round(server.connect_timeout_seconds * 1000),
    callTimeoutMs: Math.round(server.call_timeout_seconds * 1000),
    limits: toLimits(server.limits),
  };
  const connection: McpServerConfig['connection'] =
    server.url !== undefined
      ? {
          kind: 'http',
          url: server.url,
          transport: server.transport,
          headers: values(server.headers, `${where}.headers`),
        }
      : {
          kind: 'stdio',
          command: server.command ?? '',
          args: server.args ?? [],
          env: values(server.env, `${where}.env`),
          cwd: server.cwd === undefined ? undefined : resolvePath(fileDir, server.cwd),
        };
  const fingerprint = createHash('sha256')
    .update(JSON.stringify([connection, common.connectTimeoutMs]))
    .digest('hex');
  return { ...common, fingerprint, connection, secrets };
}

function toLimits(entry: z.infer<typeof limitsSchema> | undefined): McpLimits {
  return { callsPerMinute: entry?.calls_per_minute, concurrent: entry?.concurrent };
}

function resolvePath(dir: string, path: string): string {
  return path.startsWith('/') ? path : `${dir.replace(/\/+$/, '')}/${path}`;
}
