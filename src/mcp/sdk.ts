import type * as ClientIndex from '@modelcontextprotocol/sdk/client/index.js';
import type * as ClientSse from '@modelcontextprotocol/sdk/client/sse.js';
import type * as ClientStdio from '@modelcontextprotocol/sdk/client/stdio.js';
import type * as ClientHttp from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type * as ServerIndex from '@modelcontextprotocol/sdk/server/index.js';
import type * as ServerHttp from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type * as Types from '@modelcontextprotocol/sdk/types.js';
import type { jsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/types.js';

/**
 * The official MCP SDK, loaded on first use: it brings zod and its schemas (tens of modules), which a gateway with
 * no MCP server configured, and a cluster's primary, never load (test/project/idle-modules.test.ts). The client
 * side when an upstream server is first used, the server side when `/mcp` is first called.
 */
export interface ClientSdk {
  Client: typeof ClientIndex.Client;
  SSEClientTransport: typeof ClientSse.SSEClientTransport;
  StdioClientTransport: typeof ClientStdio.StdioClientTransport;
  getDefaultEnvironment: typeof ClientStdio.getDefaultEnvironment;
  StreamableHTTPClientTransport: typeof ClientHttp.StreamableHTTPClientTransport;
  StreamableHTTPError: typeof ClientHttp.StreamableHTTPError;
  types: typeof Types;
}

export interface ServerSdk {
  Server: typeof ServerIndex.Server;
  StreamableHTTPServerTransport: typeof ServerHttp.StreamableHTTPServerTransport;
  types: typeof Types;
  /**
   * One JSON Schema validator for every per-request server: a `Server` builds its own (an Ajv instance) unless it
   * is given one, which cost a stateless endpoint an Ajv per request (docs/benchmarks.md, "Issue 45").
   */
  validator: jsonSchemaValidator;
}

let client: Promise<ClientSdk> | undefined;
let server: Promise<ServerSdk> | undefined;

export function clientSdk(): Promise<ClientSdk> {
  client ??= (async () => {
    const [index, sse, stdio, http, types] = await Promise.all([
      import('@modelcontextprotocol/sdk/client/index.js'),
      import('@modelcontextprotocol/sdk/client/sse.js'),
      import('@modelcontextprotocol/sdk/client/stdio.js'),
      import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
      import('@modelcontextprotocol/sdk/types.js'),
    ]);
    return {
      Client: index.Client,
      SSEClientTransport: sse.SSEClientTransport,
      StdioClientTransport: stdio.StdioClientTransport,
      getDefaultEnvironment: stdio.getDefaultEnvironment,
      StreamableHTTPClientTransport: http.StreamableHTTPClientTransport,
      StreamableHTTPError: http.StreamableHTTPError,
      types,
    };
  })();
  return client;
}

export function serverSdk(): Promise<ServerSdk> {
  server ??= (async () => {
    const [index, http, types, ajv] = await Promise.all([
      import('@modelcontextprotocol/sdk/server/index.js'),
      import('@modelcontextprotocol/sdk/server/streamableHttp.js'),
      import('@modelcontextprotocol/sdk/types.js'),
      import('@modelcontextprotocol/sdk/validation/ajv'),
    ]);
    return {
      Server: index.Server,
      StreamableHTTPServerTransport: http.StreamableHTTPServerTransport,
      types,
      validator: new ajv.AjvJsonSchemaValidator(),
    };
  })();
  return server;
}
