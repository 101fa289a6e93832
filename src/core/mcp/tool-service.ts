import { randomUUID } from 'node:crypto';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import type { McpConfig, McpLimits } from '../../config/mcp-schema.js';
import { GatewayError, isGatewayError } from '../../errors/gateway-error.js';
import { withoutServerSecrets } from './server-secrets.js';
import type { RateState } from '../limits/rate-limit-headers.js';
import type { McpUpstreams, ToolCallOptions } from '../../mcp/upstream-contract.js';
import type { ToolCallOutcome, ToolCallRecord } from './tool-call-record.js';
import type { ToolRights } from './tool-rights.js';

/** Who makes a tool call, and through which way. */
export interface ToolCaller {
  /** `admin`, `key:<id>`, `oauth:<sub>`… (the principal's caller). */
  caller: string;
  environment: string;
  rights: ToolRights;
  /** The caller's own tool-call limits; undefined: the config's `mcp.caller_limits`; null: none (the admin token). */
  limits: McpLimits | null | undefined;
  /** The HTTP request the call came in. */
  requestId: string;
  via: ToolCallRecord['via'];
  /** The W3C `traceparent` of the request's span (tracing on): the call's span is its child. */
  traceparent?: string | undefined;
}

/** One tool as a caller is shown it. */
export interface ListedTool {
  server: string;
  /** The server's definition (its own `name`). */
  tool: Tool;
}

/** What `listTools` found: the tools, and the servers the caller may use that could not be reached. */
export interface ToolListing {
  tools: ListedTool[];
  unavailable: Array<{ server: string; code: string; message: string }>;
}

/** A call admitted by the limits: `release` ends its concurrency slot. */
export interface AdmittedCall {
  release(): void;
  /** The caller's binding limit (the answer's RateLimit-* headers), when one applies. */
  rate: RateState | undefined;
}

/** One call as the limits see it. */
export interface ToolCallAdmission {
  caller: string;
  /** Undefined: the caller has no limits (the admin token). */
  callerLimits: McpLimits | undefined;
  server: string;
  serverLimits: McpLimits;
  /**
   * The longest the call can hold its concurrency slots (the server's connect and call timeouts): a slot held past
   * it (its process died) lapses by itself.
   */
  holdMs: number;
}

/** The tool-call limits per caller and per server (core/mcp's limiter: shared across instances when the store is). */
export interface ToolCallLimiter {
  /** Admits one call or throws GatewayError `rate_limited` (details name the limit; Retry-After). */
  admit(call: ToolCallAdmission): Promise<AdmittedCall>;
}

/** What an observer may use of a call beyond its record (never stored). */
export interface ToolCallContext {
  /** The W3C `traceparent` of the span the call belongs to (the request's), when tracing is on. */
  traceparent?: string | undefined;
}

/** Told of every tool call (records, metrics, events, spans): `started` when it is admitted, `ended` once. */
export interface ToolCallObserver {
  started?(record: Omit<ToolCallRecord, 'outcome' | 'code' | 'durationMs' | 'bytesOut'>): void;
  ended(record: ToolCallRecord, context: ToolCallContext): void;
}

/** A result with what it cost, for the caller's answer (RateLimit-* headers). */
export interface ToolCallAnswer {
  result: CallToolResult;
  callId: string;
  rate: RateState | undefined;
}

/**
 * The one way every MCP tool call goes, whoever asked (`/mcp`, the Responses API's `mcp` tool, the Messages API's
 * `mcp_servers`): the caller's rights (a tool it may not call is refused whether or not it exists), the argument
 * bound, the limits per caller and per server, the upstream call (its timeout, the caller's cancellation), the
 * result's bound and the server's secrets scrubbed from it, and one record of how it ended (never the arguments or
 * the result, only their sizes). Listing shows a caller only the tools it may call, in a stable order.
 */
export class McpToolService {
  constructor(
    private readonly upstreams: McpUpstreams,
    private readonly settings: () => McpConfig,
    private readonly limiter: ToolCallLimiter,
    private readonly observer: ToolCallObserver,
  ) {}

  /** The servers a caller with `rights` may use, in name order. */
  servers(rights: ToolRights): string[] {
    return this.upstreams
      .names()
      .filter((server) => rights.allowsServer(server))
      .sort();
  }

  /**
   * The tools a caller may call, of one server or of all it may use, sorted by server then tool name (a prompt
   * cache sees the same list in the same order). A server that cannot be reached is named in `unavailable`.
   */
  async listTools(rights: ToolRights, only?: string): Promise<ToolListing> {
    const servers = only === undefined ? this.servers(rights) : [this.knownServer(only)];
    const listing: ToolListing = { tools: [], unavailable: [] };
    const lists = await Promise.allSettled(servers.map((server) => this.upstreams.listTools(server)));
    lists.forEach((list, i) => {
      const server = servers[i] as string;
      if (list.status === 'rejected') {
        const error = list.reason;
        listing.unavailable.push({
          server,
          code: isGatewayError(error) ? error.code : 'mcp_server_unavailable',
          message: isGatewayError(error) ? error.message : 'The MCP server could not be reached.',
        });
        return;
      }
      const tools = [...list.value]
        .filter((tool) => rights.allows(server, tool.name))
        .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      for (const tool of tools) listing.tools.push({ server, tool });
    });
    return listing;
  }

  /** Calls `tool` of `server` as `caller`; throws GatewayError for every refusal and failure (after recording it). */
  async callTool(
    caller: ToolCaller,
    server: string,
    tool: string,
    args: Record<string, unknown>,
    options: ToolCallOptions = {},
  ): Promise<ToolCallAnswer> {
    const settings = this.settings();
    const callId = `mcp_${randomUUID().replaceAll('-', '')}`;
    const startMs = Date.now();
    const bytesIn = Buffer.byteLength(JSON.stringify(args));
    const base = {
      timeMs: startMs,
      callId,
      requestId: caller.requestId,
      caller: caller.caller,
      environment: caller.environment,
      server,
      tool,
      via: caller.via,
      bytesIn,
    };
    const end = (outcome: ToolCallOutcome, code: string | null, bytesOut: number): void =>
      this.observer.ended(
        { ...base, outcome, code, durationMs: Date.now() - startMs, bytesOut },
        { traceparent: caller.traceparent },
      );

    let admitted: AdmittedCall | undefined;
    try {
      if (!caller.rights.allows(server, tool)) throw new GatewayError('mcp_tool_not_allowed', { server, tool });
      this.knownServer(server);
      if (bytesIn > settings.maxArgumentBytes)
        throw new GatewayError('mcp_arguments_too_large', { bytes: bytesIn, max_bytes: settings.maxArgumentBytes });
      const serverConfig = settings.servers.find((s) => s.name === server);
      admitted = await this.limiter.admit({
        caller: caller.caller,
        callerLimits: caller.limits === null ? undefined : ownOrDefault(caller.limits, settings.callerLimits),
        server,
        serverLimits: serverConfig?.limits ?? { callsPerMinute: undefined, concurrent: undefined },
        holdMs: (serverConfig?.connectTimeoutMs ?? 0) + (serverConfig?.callTimeoutMs ?? 0),
      });
    } catch (error) {
      end('refused', isGatewayError(error) ? error.code : 'internal_error', 0);
      throw error;
    }

    this.observer.started?.(base);
    try {
      let raw: CallToolResult;
      try {
        raw = await this.upstreams.callTool(server, tool, args, options);
      } catch (error) {
        end(...failureOf(error, options.signal), 0);
        throw error;
      }
      const text = JSON.stringify(raw);
      const bytesOut = Buffer.byteLength(text);
      if (bytesOut > settings.maxResultBytes) {
        const error = new GatewayError('mcp_upstream_error', {
          server,
          tool,
          reason: `the result is ${bytesOut} bytes, more than mcp.max_result_bytes (${settings.maxResultBytes})`,
        });
        end('upstream_error', error.code, bytesOut);
        throw error;
      }
      const result = withoutServerSecrets(raw, text, this.upstreams.secrets(server));
      end(result.isError === true ? 'tool_error' : 'ok', null, bytesOut);
      return { result, callId, rate: admitted.rate };
    } finally {
      admitted.release();
    }
  }

  private knownServer(server: string): string {
    if (!this.upstreams.has(server))
      throw new GatewayError('mcp_server_not_found', { server, servers: this.upstreams.names() });
    return server;
  }
}

/** A caller's own limits where it has them (a key's), each missing one the config's. */
function ownOrDefault(own: McpLimits | undefined, defaults: McpLimits): McpLimits {
  return {
    callsPerMinute: own?.callsPerMinute ?? defaults.callsPerMinute,
    concurrent: own?.concurrent ?? defaults.concurrent,
  };
}

/** How a failed upstream call is recorded: its outcome and our error code. */
function failureOf(error: unknown, signal: AbortSignal | undefined): [ToolCallOutcome, string] {
  if (signal?.aborted) return ['cancelled', isGatewayError(error) ? error.code : 'client_closed_request'];
  if (!isGatewayError(error)) return ['upstream_error', 'internal_error'];
  return [error.code === 'mcp_tool_timeout' ? 'timeout' : 'upstream_error', error.code];
}
