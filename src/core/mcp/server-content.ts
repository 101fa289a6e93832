import type {
  GetPromptResult,
  Prompt,
  ReadResourceResult,
  Resource,
  ResourceTemplate,
} from '@modelcontextprotocol/sdk/types.js';
import type { ZodType } from 'zod';
import { GatewayError, isGatewayError } from '../../errors/gateway-error.js';
import { withoutServerSecrets } from './server-secrets.js';
import { clientSdk } from '../../mcp/sdk.js';
import type { McpUpstreams } from '../../mcp/upstream-contract.js';

/** The most pages of one server's list read, and the most entries kept of it. */
const MAX_PAGES = 20;
const MAX_ENTRIES = 2_000;
/** Which server listed a resource URI last (an aggregated `resources/read` goes there first). */
const MAX_REMEMBERED_URIS = 10_000;
const METHOD_NOT_FOUND = -32601;

/**
 * A server's prompts and resources, carried as the server gives them to the callers that may use it (a caller may
 * use a server when one of its `mcp_tools` patterns names it: core/mcp/tool-rights.ts `allowsServer`). On the
 * aggregated `/mcp` a prompt is named `<server>__<prompt>` (as tools are); a resource keeps its URI (a client may
 * have it from elsewhere), and a read goes to the server that listed it, else to each server the caller may use,
 * in name order, until one has it.
 */
export class McpServerContent {
  private readonly uriServer = new Map<string, string>();

  constructor(private readonly upstreams: McpUpstreams) {}

  async listPrompts(server: string, signal?: AbortSignal): Promise<Prompt[]> {
    const { types } = await clientSdk();
    return this.pages(server, 'prompts/list', types.ListPromptsResultSchema, (page) => page.prompts, signal);
  }

  async getPrompt(
    server: string,
    name: string,
    args: Record<string, string> | undefined,
    signal?: AbortSignal,
  ): Promise<GetPromptResult> {
    const { types } = await clientSdk();
    const result = await this.upstreams.request(
      server,
      'prompts/get',
      { name, ...(args ? { arguments: args } : {}) },
      types.GetPromptResultSchema,
      signal,
    );
    return this.scrubbed(server, result);
  }

  async listResources(server: string, signal?: AbortSignal): Promise<Resource[]> {
    const { types } = await clientSdk();
    const resources = await this.pages(
      server,
      'resources/list',
      types.ListResourcesResultSchema,
      (p) => p.resources,
      signal,
    );
    for (const resource of resources) this.remember(resource.uri, server);
    return resources;
  }

  async listResourceTemplates(server: string, signal?: AbortSignal): Promise<ResourceTemplate[]> {
    const { types } = await clientSdk();
    return this.pages(
      server,
      'resources/templates/list',
      types.ListResourceTemplatesResultSchema,
      (page) => page.resourceTemplates,
      signal,
    );
  }

  /** Reads `uri` from `servers` (one, or every one the caller may use, the one that listed it first). */
  async readResource(servers: readonly string[], uri: string, signal?: AbortSignal): Promise<ReadResourceResult> {
    const { types } = await clientSdk();
    const known = this.uriServer.get(uri);
    const order =
      known !== undefined && servers.includes(known) ? [known, ...servers.filter((s) => s !== known)] : servers;
    let last: unknown = new GatewayError('validation_failed', {
      errors: [{ field: 'params.uri', problem: 'no MCP server this caller may use has this resource' }],
    });
    for (const server of order) {
      try {
        const result = await this.upstreams.request(
          server,
          'resources/read',
          { uri },
          types.ReadResourceResultSchema,
          signal,
        );
        this.remember(uri, server);
        return this.scrubbed(server, result);
      } catch (error) {
        if (signal?.aborted) throw error;
        last = error;
        if (servers.length === 1 || !isGatewayError(error) || error.code !== 'mcp_upstream_error') continue;
      }
    }
    throw last;
  }

  /**
   * Each server's list in `servers`' order, flattened; on the aggregated endpoint (several servers) one that cannot
   * answer is left out rather than failing the others' (its tools/list names it as unavailable).
   */
  async gather<T>(servers: readonly string[], list: (server: string) => Promise<T[]>): Promise<T[]> {
    if (servers.length === 1) return list(servers[0] as string);
    const lists = await Promise.allSettled(servers.map(list));
    return lists.flatMap((result) => (result.status === 'fulfilled' ? result.value : []));
  }

  private async pages<P extends { nextCursor?: string | undefined }, T>(
    server: string,
    method: string,
    schema: ZodType<P>,
    entries: (page: P) => T[],
    signal?: AbortSignal,
  ): Promise<T[]> {
    const out: T[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < MAX_PAGES && out.length < MAX_ENTRIES; page++) {
      let result: P;
      try {
        result = await this.upstreams.request(
          server,
          method,
          cursor === undefined ? undefined : { cursor },
          schema,
          signal,
        );
      } catch (error) {
        // A server without prompts or resources (JSON-RPC -32601, method not found) has none to list.
        if (isGatewayError(error) && error.details.upstream_code === METHOD_NOT_FOUND) return out;
        throw error;
      }
      out.push(...entries(result).slice(0, MAX_ENTRIES - out.length));
      cursor = result.nextCursor;
      if (cursor === undefined) break;
    }
    return this.scrubbed(server, out);
  }

  private remember(uri: string, server: string): void {
    if (this.uriServer.size >= MAX_REMEMBERED_URIS && !this.uriServer.has(uri)) {
      const oldest = this.uriServer.keys().next().value;
      if (oldest !== undefined) this.uriServer.delete(oldest);
    }
    this.uriServer.set(uri, server);
  }

  /** `value` without the server's connection secrets (server-secrets.ts). */
  private scrubbed<T>(server: string, value: T): T {
    const secrets = this.upstreams.secrets(server);
    return secrets.length === 0 ? value : withoutServerSecrets(value, JSON.stringify(value), secrets);
  }
}
