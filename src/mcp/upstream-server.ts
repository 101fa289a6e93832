import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import type { ZodType } from 'zod';
import type { McpServerConfig } from '../config/mcp-schema.js';
import { GatewayError } from '../errors/gateway-error.js';
import { scrubCut } from '../secrets/redact.js';
import { boundedFetch } from './bounded-fetch.js';
import { clientSdk, type ClientSdk } from './sdk.js';
import { guardStdout } from './stdio-guard.js';
import type { ToolCallOptions } from './upstream-contract.js';

/** What a server's connection reports to the pool. */
export interface UpstreamServerHooks {
  /** Its tool list may have changed (its `tools/list_changed`, or a new connection). */
  toolsChanged(server: string): void;
  warn(message: string, fields: Record<string, unknown>): void;
  /** A stdio server's stderr line (scrubbed of its secrets, cut). */
  debug(message: string, fields: Record<string, unknown>): void;
}

/** The most tools one server may list (more pages are not read), and the most pages read. */
const MAX_TOOLS = 2_000;
const MAX_LIST_PAGES = 50;
/** Backoff between failed connects: 0.5 s doubled to 30 s, with ±20 % jitter. */
const FIRST_BACKOFF_MS = 500;
const MAX_BACKOFF_MS = 30_000;
/** A stdio server's stderr lines kept for the log (the last ones, each cut), and a JSON message's largest size. */
const STDERR_LINE_CHARS = 500;
/** JSON-RPC's (the SDK's) code for a request that timed out. */
const REQUEST_TIMEOUT = -32001;

/**
 * One configured upstream MCP server, spoken to with the official SDK's client: connected lazily on first use,
 * reconnected after a failure (the next use, after a backoff), and re-initialised once, transparently, when its
 * Streamable HTTP session has expired (a 404 for the session: the request was not run, so it is sent again). Its
 * tool list is kept until the server says it changed. One connection (and one upstream session) per server per
 * gateway process, shared by every caller: docs/mcp.md, "Sessions".
 */
export class UpstreamServer {
  private client: Client | undefined;
  private connecting: Promise<Client> | undefined;
  private tools: Promise<Tool[]> | undefined;
  private failures = 0;
  private retryAtMs = 0;
  private closed = false;
  /**
   * The progress listeners of the calls in flight, by the token the gateway gave each. Read by a handler of ours:
   * the SDK's own `onprogress` drops a progress notification read together with the result (its handler runs a
   * tick later, after the request's handlers are gone); ours runs before the call's continuation forgets it.
   */
  private readonly progress = new Map<string, NonNullable<ToolCallOptions['onProgress']>>();
  private progressTokens = 0;
  /** The SDK, once the first connection loaded it (sdk.ts). */
  private sdk: ClientSdk | undefined;

  constructor(
    readonly config: McpServerConfig,
    private readonly maxMessageBytes: number,
    private readonly hooks: UpstreamServerHooks,
  ) {}

  get name(): string {
    return this.config.name;
  }

  /** The secret values its connection is made with (header values, a child's environment): scrubbed from answers. */
  secrets(): string[] {
    return this.config.secrets;
  }

  async listTools(): Promise<Tool[]> {
    this.tools ??= this.withClient((client) => this.readTools(client));
    const tools = this.tools;
    try {
      return await tools;
    } catch (error) {
      if (this.tools === tools) this.tools = undefined;
      throw error;
    }
  }

  /**
   * Calls `tool`; cut at the server's call timeout or by `options.signal` (the SDK sends the server
   * `notifications/cancelled` either way). An expired session is re-established and the call sent once more.
   */
  async callTool(tool: string, args: Record<string, unknown>, options: ToolCallOptions): Promise<CallToolResult> {
    return this.withClient(
      async (client) => {
        const token = options.onProgress ? `gw-${++this.progressTokens}` : undefined;
        if (token !== undefined && options.onProgress) this.progress.set(token, options.onProgress);
        try {
          return await client.request(
            {
              method: 'tools/call',
              params: {
                name: tool,
                arguments: args,
                ...(token === undefined ? {} : { _meta: { progressToken: token } }),
              },
            },
            this.loaded().types.CallToolResultSchema,
            { timeout: this.config.callTimeoutMs, ...(options.signal ? { signal: options.signal } : {}) },
          );
        } catch (error) {
          if (options.signal?.aborted) throw options.signal.reason;
          if (error instanceof this.loaded().types.McpError && error.code === REQUEST_TIMEOUT)
            throw new GatewayError('mcp_tool_timeout', {
              server: this.name,
              tool,
              timeout_ms: this.config.callTimeoutMs,
            });
          throw error;
        } finally {
          if (token !== undefined) this.progress.delete(token);
        }
      },
      tool,
      options.signal,
    );
  }

  /** Any other request (prompts, resources, completion), its result as the server sent it. */
  async request<T>(
    method: string,
    params: Record<string, unknown> | undefined,
    schema: ZodType<T>,
    signal?: AbortSignal,
  ): Promise<T> {
    return this.withClient(
      (client) =>
        client.request({ method, ...(params ? { params } : {}) } as never, schema as never, {
          timeout: this.config.callTimeoutMs,
          ...(signal ? { signal } : {}),
        }) as Promise<T>,
    );
  }

  /** Closes its connection (a stdio server's process ends); a closed server is not connected again. */
  async close(): Promise<void> {
    this.closed = true;
    const client = this.client;
    this.client = undefined;
    this.tools = undefined;
    await client?.close().catch(() => undefined);
  }

  /** Runs `use` on a connected client; a failure of the connection is `mcp_server_unavailable`, an upstream's error `mcp_upstream_error`. */
  private async withClient<T>(use: (client: Client) => Promise<T>, tool?: string, signal?: AbortSignal): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      const client = await this.connected();
      try {
        return await use(client);
      } catch (error) {
        if (signal?.aborted) throw signal.reason; // the caller's cancellation: the connection is fine
        if (attempt === 0 && sessionExpired(this.loaded(), error)) {
          this.drop(client);
          continue;
        }
        throw this.upstreamError(error, tool);
      }
    }
  }

  private async connected(): Promise<Client> {
    if (this.client) return this.client;
    if (this.closed) throw this.unavailable('the server was removed from the config');
    const wait = this.retryAtMs - Date.now();
    if (wait > 0 && !this.connecting) throw this.unavailable('its last connection attempt failed', wait);
    this.connecting ??= this.connect().finally(() => {
      this.connecting = undefined;
    });
    return this.connecting;
  }

  private async connect(): Promise<Client> {
    const { connection } = this.config;
    try {
      this.sdk ??= await clientSdk();
      let client: Client;
      if (connection.kind === 'stdio') client = await this.open(this.stdio(connection));
      else if (connection.transport === 'sse') client = await this.open(this.sse(connection));
      else
        try {
          client = await this.open(this.streamable(connection));
        } catch (error) {
          // Legacy SSE servers answer the Streamable HTTP POST with a 4xx (404/405): the spec's fallback.
          if (connection.transport !== 'auto' || !refusedPost(this.loaded(), error)) throw error;
          client = await this.open(this.sse(connection));
        }
      this.failures = 0;
      this.retryAtMs = 0;
      if (this.closed) {
        await client.close().catch(() => undefined);
        throw this.unavailable('the server was removed from the config');
      }
      this.client = client;
      this.tools = undefined;
      this.hooks.toolsChanged(this.name);
      return client;
    } catch (error) {
      if (error instanceof GatewayError) throw error;
      this.failures++;
      const backoff = Math.min(MAX_BACKOFF_MS, FIRST_BACKOFF_MS * 2 ** (this.failures - 1));
      this.retryAtMs = Date.now() + Math.round(backoff * (0.8 + Math.random() * 0.4));
      const reason = scrubCut(error instanceof Error ? error.message : String(error), this.secrets(), 300);
      this.hooks.warn('MCP server connection failed', { server: this.name, reason, failures: this.failures });
      throw this.unavailable(reason, this.retryAtMs - Date.now());
    }
  }

  private async open(transport: Transport): Promise<Client> {
    const sdk = this.loaded();
    const client = new sdk.Client({ name: 'llm-gateway', version: '1' }, { capabilities: {} });
    client.onclose = () => this.drop(client);
    client.onerror = () => undefined; // a failed request rejects its own promise; a dead transport closes
    try {
      await client.connect(transport, { timeout: this.config.connectTimeoutMs });
    } catch (error) {
      await client.close().catch(() => undefined);
      throw error;
    }
    client.setNotificationHandler(sdk.types.ProgressNotificationSchema, (notification) => {
      const { progressToken, progress, total, message } = notification.params;
      this.progress.get(String(progressToken))?.({
        progress,
        ...(total === undefined ? {} : { total }),
        ...(message === undefined ? {} : { message }),
      });
    });
    if (client.getServerCapabilities()?.tools?.listChanged)
      client.setNotificationHandler(sdk.types.ToolListChangedNotificationSchema, () => {
        if (this.client !== client) return;
        this.tools = undefined;
        this.hooks.toolsChanged(this.name);
      });
    return client;
  }

  /** The SDK: loaded by the connection every use of it follows. */
  private loaded(): ClientSdk {
    if (!this.sdk) throw new Error('the MCP SDK is used before a connection loaded it');
    return this.sdk;
  }

  /** Forgets a client whose connection ended (its next use connects again). */
  private drop(client: Client): void {
    if (this.client !== client) return;
    this.client = undefined;
    this.tools = undefined;
    void client.close().catch(() => undefined);
    this.hooks.toolsChanged(this.name);
  }

  private async readTools(client: Client): Promise<Tool[]> {
    const tools: Tool[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < MAX_LIST_PAGES && tools.length < MAX_TOOLS; page++) {
      const result = await client.request(
        { method: 'tools/list', ...(cursor === undefined ? {} : { params: { cursor } }) },
        this.loaded().types.ListToolsResultSchema,
        { timeout: this.config.connectTimeoutMs },
      );
      tools.push(...result.tools.slice(0, MAX_TOOLS - tools.length));
      cursor = result.nextCursor;
      if (cursor === undefined) break;
    }
    return tools;
  }

  private stdio(connection: Extract<McpServerConfig['connection'], { kind: 'stdio' }>): Transport {
    const sdk = this.loaded();
    const transport = new sdk.StdioClientTransport({
      command: connection.command,
      args: connection.args,
      env: { ...sdk.getDefaultEnvironment(), ...connection.env },
      ...(connection.cwd === undefined ? {} : { cwd: connection.cwd }),
      stderr: 'pipe',
    });
    const secrets = this.secrets();
    transport.stderr?.on('data', (chunk: Buffer) => {
      const line = scrubCut(chunk.toString('utf8').trim(), secrets, STDERR_LINE_CHARS);
      if (line !== '') this.hooks.debug('MCP server stderr', { server: this.name, line });
    });
    return guardStdout(transport, this.maxMessageBytes, () => this.drop(this.client as Client));
  }

  private streamable(connection: Extract<McpServerConfig['connection'], { kind: 'http' }>): Transport {
    return new (this.loaded().StreamableHTTPClientTransport)(new URL(connection.url), {
      requestInit: { headers: connection.headers },
      fetch: boundedFetch(this.maxMessageBytes),
      reconnectionOptions: {
        maxReconnectionDelay: 30_000,
        initialReconnectionDelay: 1_000,
        reconnectionDelayGrowFactor: 2,
        maxRetries: 2,
      },
    });
  }

  private sse(connection: Extract<McpServerConfig['connection'], { kind: 'http' }>): Transport {
    const fetch = boundedFetch(this.maxMessageBytes);
    return new (this.loaded().SSEClientTransport)(new URL(connection.url), {
      requestInit: { headers: connection.headers },
      eventSourceInit: {
        fetch: (url, init) =>
          fetch(url, { ...init, headers: { ...connection.headers, ...(init?.headers as Record<string, string>) } }),
      },
      fetch,
    });
  }

  private unavailable(reason: string, retryAfterMs?: number): GatewayError {
    return new GatewayError(
      'mcp_server_unavailable',
      {
        server: this.name,
        reason,
        ...(retryAfterMs === undefined ? {} : { retry_after_ms: Math.max(1, Math.ceil(retryAfterMs)) }),
      },
      { headers: { 'retry-after': String(Math.max(1, Math.ceil((retryAfterMs ?? 1_000) / 1000))) } },
    );
  }

  private upstreamError(error: unknown, tool: string | undefined): unknown {
    if (error instanceof GatewayError || (error instanceof Error && error.name === 'AbortError')) return error;
    if (!this.sdk || !(error instanceof this.sdk.types.McpError)) {
      // The connection failed under the request (a reset, a dead child): the next use connects again.
      if (this.client) this.drop(this.client);
      return this.unavailable(scrubCut(error instanceof Error ? error.message : String(error), this.secrets(), 300));
    }
    return new GatewayError('mcp_upstream_error', {
      server: this.name,
      ...(tool === undefined ? {} : { tool }),
      upstream_code: error.code,
      upstream_message: scrubCut(error.message, this.secrets(), 2_000),
    });
  }
}

/** A Streamable HTTP request refused because the server no longer knows the session (it restarted, or expired it). */
function sessionExpired(sdk: ClientSdk, error: unknown): boolean {
  return error instanceof sdk.StreamableHTTPError && error.code === 404;
}

/** A Streamable HTTP initialize refused with a 4xx: the server may speak only the legacy SSE transport. */
function refusedPost(sdk: ClientSdk, error: unknown): boolean {
  return error instanceof sdk.StreamableHTTPError && error.code !== undefined && error.code >= 400 && error.code < 500;
}
