import type { ServerResponse } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Authenticator } from '../../auth/authenticator.js';
import { toolRightsOf } from '../../auth/principal.js';
import type { McpServerContent } from '../../core/mcp/server-content.js';
import type { McpToolService, ToolCaller } from '../../core/mcp/tool-service.js';
import { GatewayError, isGatewayError } from '../../errors/gateway-error.js';
import { mcpUnauthorized } from '../../http/mcp-authorization.js';
import { serverSdk, type ServerSdk } from '../../mcp/sdk.js';
import { InFlightCalls } from './in-flight-calls.js';
import { gatewayServer, type McpScope, type RequestOutcome } from './gateway-server.js';
import { NotificationStreams } from './notification-streams.js';

export interface McpRoutesDeps {
  auth: Authenticator;
  tools: McpToolService;
  content: McpServerContent;
  /** Tells a listener that a server's tools may have changed; returns an unsubscribe. */
  onToolsChanged(listener: (server: string) => void): () => void;
  hasServer(server: string): boolean;
  environment: string;
  version: string;
}

/** The route right `/mcp` needs, and what its requests are recorded as. */
const ROUTE = 'mcp';

/**
 * The gateway as one MCP server (Streamable HTTP, the current MCP specification) at `/mcp` — the tools of every
 * server the caller may use, named `<server>__<tool>` — and as each server at `/mcp/<server>`, under the tools' own
 * names (docs/mcp.md). Stateless: each POST gets a fresh SDK server and transport, so any instance answers any
 * request and a restarted gateway strands no client (no `Mcp-Session-Id` is issued). A POST is answered with JSON,
 * or with an event stream when one of its requests asks for progress; a GET opens the stream that carries
 * `notifications/tools/list_changed`. Authentication as for every route (`mcp` right); the caller's tool rights
 * decide what it sees.
 */
export function mountMcpRoutes(app: FastifyInstance, deps: McpRoutesDeps): void {
  const inFlight = new InFlightCalls();
  const streams = new NotificationStreams();
  const serverDeps = { tools: deps.tools, content: deps.content, inFlight, version: deps.version };

  const guard = async (request: FastifyRequest, _reply: FastifyReply): Promise<void> => {
    request.routeName = ROUTE;
    try {
      const principal = await deps.auth.authenticate(
        request.headers.authorization,
        ROUTE,
        request.protocol === 'https',
      );
      request.caller = principal.caller;
      request.principal = principal;
    } catch (error) {
      // A 401 points MCP clients at the protected-resource metadata (OAuth configured); a 403 says which scope would do.
      throw isGatewayError(error) ? mcpUnauthorized(request, error, deps.auth.oauth) : error;
    }
    const server = (request.params as { server?: string }).server;
    if (server !== undefined && (!deps.hasServer(server) || !toolRightsOf(request.principal).allowsServer(server)))
      throw new GatewayError('mcp_server_not_found', {
        server,
        servers: deps.tools.servers(toolRightsOf(request.principal)),
      });
  };

  const handler = async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const principal = request.principal;
    if (!principal) throw new GatewayError('internal_error');
    const server = (request.params as { server?: string }).server;
    const scope: McpScope = server === undefined ? { kind: 'all' } : { kind: 'server', server };
    const caller: ToolCaller = {
      caller: principal.caller,
      environment: deps.environment,
      rights: toolRightsOf(principal),
      limits: principal.kind === 'admin' ? null : principal.mcpLimits,
      requestId: request.id,
      via: 'mcp',
      // The caller's own trace, when it sent one: each tool call's span joins it.
      traceparent: typeof request.headers.traceparent === 'string' ? request.headers.traceparent : undefined,
    };
    const sdk = await serverSdk();
    if (request.method === 'GET') return openNotificationStream(sdk, request, reply, caller, scope);
    const requestGone = new AbortController();
    const outcome: RequestOutcome = { rate: undefined };
    const mcp = gatewayServer(sdk, serverDeps, caller, scope, outcome, requestGone.signal);
    const transport = new sdk.StreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: !asksForProgress(request.body),
    });
    const res = reply.raw;
    res.on('close', () => {
      if (!res.writableFinished) requestGone.abort(new GatewayError('client_closed_request'));
      void transport.close().catch(() => undefined);
      void mcp.close().catch(() => undefined);
    });
    withRateHeaders(res, outcome, request.id);
    await mcp.connect(transport);
    reply.hijack();
    await transport.handleRequest(request.raw, res, request.body);
  };

  const openNotificationStream = async (
    sdk: ServerSdk,
    request: FastifyRequest,
    reply: FastifyReply,
    caller: ToolCaller,
    scope: McpScope,
  ): Promise<void> => {
    const release = streams.admit();
    const mcp = gatewayServer(sdk, serverDeps, caller, scope, { rate: undefined }, new AbortController().signal);
    const transport = new sdk.StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    const unsubscribe = deps.onToolsChanged((changed) => {
      if (scope.kind === 'server' ? changed === scope.server : caller.rights.allowsServer(changed))
        void mcp.sendToolListChanged().catch(() => undefined);
    });
    const res = reply.raw;
    // A stream is re-opened by the client now and then, which checks its credential again (a revoked key's ends).
    const lifetime = setTimeout(() => res.end(), streams.lifetimeMs);
    res.on('close', () => {
      clearTimeout(lifetime);
      unsubscribe();
      release();
      void transport.close().catch(() => undefined);
      void mcp.close().catch(() => undefined);
    });
    res.setHeader('x-request-id', request.id);
    await mcp.connect(transport);
    reply.hijack();
    await transport.handleRequest(request.raw, res);
  };

  for (const path of ['/mcp', '/mcp/:server']) {
    app.route({ method: ['POST', 'GET', 'DELETE'], url: path, onRequest: guard, handler });
  }
}

/** Whether a JSON-RPC message (or batch) asks for progress: its answer is then an event stream that carries it. */
function asksForProgress(body: unknown): boolean {
  const messages = Array.isArray(body) ? body : [body];
  return messages.some((message) => {
    const meta = (message as { params?: { _meta?: { progressToken?: unknown } } } | null)?.params?._meta;
    return meta?.progressToken !== undefined;
  });
}

/**
 * Adds the request id and, when a tool call was admitted by a windowed limit, `RateLimit-*` (refused by one:
 * `Retry-After` and `RateLimit-*`) to the answer's head as the SDK's transport writes it (a JSON answer is written
 * once its calls are done; a stream's head goes first and carries only the id). The refusal itself is the
 * JSON-RPC error in the body (`data.details.retry_after_ms`), which is what MCP clients read.
 */
function withRateHeaders(res: ServerResponse, outcome: RequestOutcome, requestId: string): void {
  const writeHead = res.writeHead.bind(res) as (...args: unknown[]) => ServerResponse;
  res.writeHead = ((...args: unknown[]) => {
    res.setHeader('x-request-id', requestId);
    for (const [name, value] of Object.entries(outcome.refusal ?? {})) res.setHeader(name, value);
    const rate = outcome.rate;
    if (rate && !outcome.refusal) {
      res.setHeader('ratelimit-limit', String(rate.limit));
      res.setHeader('ratelimit-remaining', String(rate.remaining));
      res.setHeader('ratelimit-reset', String(Math.ceil(rate.resetMs / 1000)));
    }
    return writeHead(...args);
  }) as ServerResponse['writeHead'];
}
