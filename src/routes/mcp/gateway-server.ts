import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import type { ServerSdk } from '../../mcp/sdk.js';
import type { McpServerContent } from '../../core/mcp/server-content.js';
import type { McpToolService, ToolCaller } from '../../core/mcp/tool-service.js';
import type { RateState } from '../../core/limits/rate-limit-headers.js';
import { GatewayError, isGatewayError } from '../../errors/gateway-error.js';
import { joinedToolName, splitToolName } from '../../mcp/tool-names.js';
import type { InFlightCalls } from './in-flight-calls.js';
import { rpcError } from './rpc-error.js';

/** What one `/mcp` request's server serves: every server the caller may use (joined names), or one by name. */
export type McpScope = { kind: 'all' } | { kind: 'server'; server: string };

export interface GatewayServerDeps {
  tools: McpToolService;
  content: McpServerContent;
  inFlight: InFlightCalls;
  version: string;
}

/** What the request's handlers learned that its HTTP answer carries (RateLimit-* of the last admitted call). */
export interface RequestOutcome {
  rate: RateState | undefined;
  /** A limit's refusal's headers (Retry-After, RateLimit-*): the HTTP answer carries them where it can. */
  refusal?: Record<string, string> | undefined;
}

/**
 * The gateway as an MCP server (the official SDK's `Server`) for one HTTP request of one caller: the endpoint is
 * stateless (routes/mcp/mcp-routes.ts), so each request gets a fresh server whose handlers see only what the caller
 * may use. Tools are listed and called through the tool service (rights, limits, records, timeouts), prompts and
 * resources carried from the servers the caller may use; progress from the upstream goes to the client on this
 * request's stream; a client's `notifications/cancelled` aborts the call it names (InFlightCalls).
 */
export function gatewayServer(
  sdk: ServerSdk,
  deps: GatewayServerDeps,
  caller: ToolCaller,
  scope: McpScope,
  outcome: RequestOutcome,
  requestSignal: AbortSignal,
): Server {
  const { CallToolRequestSchema, CancelledNotificationSchema, ListToolsRequestSchema } = sdk.types;
  const server = new sdk.Server({ name: 'llm-gateway', version: deps.version }, serverOptions(sdk, scope));
  const servers = (): string[] =>
    scope.kind === 'server' ? [allowedServer(scope.server)] : deps.tools.servers(caller.rights);
  const allowedServer = (name: string): string => {
    if (!caller.rights.allowsServer(name))
      throw new GatewayError('mcp_server_not_found', { server: name, servers: [] });
    return name;
  };
  const named = (server: string, name: string): string => (scope.kind === 'all' ? joinedToolName(server, name) : name);
  const resolve = (name: string, field: string): { server: string; name: string } => {
    if (scope.kind === 'server') return { server: scope.server, name };
    const split = splitToolName(name);
    if (!split)
      throw new GatewayError('validation_failed', {
        errors: [{ field, problem: 'must be <server>__<name>, as tools/list and prompts/list name them' }],
      });
    return { server: split.server, name: split.tool };
  };
  const handle = rpcHandled(sdk);

  server.setRequestHandler(
    ListToolsRequestSchema,
    handle(async () => {
      const listing = await deps.tools.listTools(caller.rights, scope.kind === 'server' ? scope.server : undefined);
      if (scope.kind === 'server' && listing.unavailable.length > 0)
        throw new GatewayError('mcp_server_unavailable', {
          server: scope.server,
          reason: listing.unavailable[0]?.message,
        });
      const tools: Tool[] = listing.tools.map(({ server: name, tool }) => ({ ...tool, name: named(name, tool.name) }));
      return {
        tools,
        // Servers the caller may use that could not be reached are said, not hidden behind an empty list.
        ...(listing.unavailable.length > 0
          ? { _meta: { 'llm-gateway/unavailable_servers': listing.unavailable } }
          : {}),
      };
    }),
  );

  server.setRequestHandler(
    CallToolRequestSchema,
    handle(async (request, extra) => {
      const target = resolve(request.params.name, 'params.name');
      const running = deps.inFlight.start(
        caller.caller,
        extra.requestId,
        AbortSignal.any([extra.signal, requestSignal]),
      );
      const progressToken = request.params._meta?.progressToken;
      // Progress is written before the result (the client stops listening once it has it); the stream's writes keep
      // their order, so waiting for the last one is waiting for all (and nothing grows with an endless progress).
      let lastSent: Promise<void> | undefined;
      try {
        const answer = await deps.tools.callTool(caller, target.server, target.name, request.params.arguments ?? {}, {
          signal: running.signal,
          ...(progressToken === undefined
            ? {}
            : {
                onProgress: (progress) => {
                  lastSent = extra
                    .sendNotification({ method: 'notifications/progress', params: { progressToken, ...progress } })
                    .catch(() => undefined);
                },
              }),
        });
        if (lastSent) {
          await lastSent;
          // The SDK's client runs notification handlers a tick after it reads them but settles the request at once:
          // a progress event read in the same chunk as the result would find its handler gone. A turn of the event
          // loop between them sends the result in a write of its own.
          await new Promise((resolve) => setImmediate(resolve));
        }
        outcome.rate = answer.rate ?? outcome.rate;
        return answer.result;
      } catch (error) {
        if (isGatewayError(error) && error.code === 'rate_limited') outcome.refusal = error.headers;
        throw error;
      } finally {
        running.end();
      }
    }),
  );

  server.setNotificationHandler(CancelledNotificationSchema, (notification) => {
    const id = notification.params.requestId;
    if (id !== undefined) deps.inFlight.cancel(caller.caller, id, notification.params.reason);
  });

  carryContent(sdk, server, deps.content, servers, resolve, named, allowedServer);
  return server;
}

/** What the gateway says of itself at `initialize`. */
function serverOptions(sdk: ServerSdk, scope: McpScope): ConstructorParameters<ServerSdk['Server']>[1] {
  return {
    capabilities: { tools: { listChanged: true }, prompts: {}, resources: {} },
    jsonSchemaValidator: sdk.validator,
    instructions:
      scope.kind === 'all'
        ? 'Tools of several MCP servers, each named <server>__<tool>.'
        : `The tools of the MCP server "${scope.server}".`,
  };
}

/**
 * Prompts and resources of the servers the request may use (`servers`), as `gatewayServer` names them: a prompt
 * `<server>__<name>` on the aggregated endpoint, a resource by its own URI.
 */
function carryContent(
  sdk: ServerSdk,
  server: Server,
  content: McpServerContent,
  servers: () => string[],
  resolve: (name: string, field: string) => { server: string; name: string },
  named: (server: string, name: string) => string,
  allowedServer: (name: string) => string,
): void {
  const {
    GetPromptRequestSchema,
    ListPromptsRequestSchema,
    ListResourcesRequestSchema,
    ListResourceTemplatesRequestSchema,
    ReadResourceRequestSchema,
  } = sdk.types;
  const rpcHandledBy = rpcHandled(sdk);
  server.setRequestHandler(
    ListPromptsRequestSchema,
    rpcHandledBy(async (_request, extra) => {
      const prompts = await content.gather(servers(), async (name) =>
        (await content.listPrompts(name, extra.signal)).map((prompt) => ({
          ...prompt,
          name: named(name, prompt.name),
        })),
      );
      return { prompts };
    }),
  );

  server.setRequestHandler(
    GetPromptRequestSchema,
    rpcHandledBy(async (request, extra) => {
      const target = resolve(request.params.name, 'params.name');
      allowedServer(target.server);
      return content.getPrompt(target.server, target.name, request.params.arguments, extra.signal);
    }),
  );

  server.setRequestHandler(
    ListResourcesRequestSchema,
    rpcHandledBy(async (_request, extra) => {
      const resources = await content.gather(servers(), (name) => content.listResources(name, extra.signal));
      return { resources };
    }),
  );

  server.setRequestHandler(
    ListResourceTemplatesRequestSchema,
    rpcHandledBy(async (_request, extra) => {
      const resourceTemplates = await content.gather(servers(), (name) =>
        content.listResourceTemplates(name, extra.signal),
      );
      return { resourceTemplates };
    }),
  );

  server.setRequestHandler(
    ReadResourceRequestSchema,
    rpcHandledBy(async (request, extra) => content.readResource(servers(), request.params.uri, extra.signal)),
  );
}

/** A handler whose failures reach the client as JSON-RPC errors carrying our registry's code (rpc-error.ts). */
function rpcHandled(
  sdk: ServerSdk,
): <R, A extends unknown[]>(run: (...args: A) => Promise<R>) => (...args: A) => Promise<R> {
  return (run) =>
    async (...args) => {
      try {
        return await run(...args);
      } catch (error) {
        throw rpcError(sdk, error);
      }
    };
}
