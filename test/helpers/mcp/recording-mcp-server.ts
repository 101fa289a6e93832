/**
 * A small MCP server of our own over Streamable HTTP (the official SDK's server and transport, stateful: it issues
 * session ids) on a real socket, recording what it was sent: each request's headers, the tool calls it ran, the
 * cancellations it saw. `forgetSessions()` drops every session, as a restarted server would (the next request with
 * an old id gets the spec's 404). Its tools: `echo {message}`, `hang` (runs until cancelled), `repeat-header`
 * (answers with the Authorization header it received: a server that repeats a secret back), `big {bytes}`.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server as HttpServer } from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

export interface RecordingMcpServer {
  url: string;
  /** The headers of every HTTP request it received, in order. */
  requests: Array<{ method: string; headers: IncomingMessage['headers'] }>;
  /** Tool calls it started, by tool name. */
  calls: string[];
  /** Tool calls whose cancellation it saw (the SDK aborted the handler's signal on notifications/cancelled). */
  cancelled: string[];
  /** Sessions initialised so far. */
  sessions(): number;
  forgetSessions(): void;
  close(): Promise<void>;
}

export async function startRecordingMcpServer(): Promise<RecordingMcpServer> {
  const transports = new Map<string, StreamableHTTPServerTransport>();
  const requests: RecordingMcpServer['requests'] = [];
  const calls: string[] = [];
  const cancelled: string[] = [];
  let initialised = 0;

  const newServer = (headersOf: () => IncomingMessage['headers']): McpServer => {
    const server = new McpServer({ name: 'recording', version: '1' });
    server.registerTool('echo', { inputSchema: { message: z.string() } }, async ({ message }) => {
      calls.push('echo');
      return { content: [{ type: 'text', text: `Echo: ${message}` }] };
    });
    server.registerTool('hang', { inputSchema: {} }, async (_args, extra) => {
      calls.push('hang');
      await new Promise<void>((resolve) => {
        if (extra.signal.aborted) resolve();
        extra.signal.addEventListener('abort', () => resolve(), { once: true });
      });
      cancelled.push('hang');
      return { content: [{ type: 'text', text: 'cancelled' }] };
    });
    server.registerTool('repeat-header', { inputSchema: {} }, async () => {
      calls.push('repeat-header');
      return { content: [{ type: 'text', text: `you sent ${String(headersOf().authorization)}` }] };
    });
    server.registerTool('big', { inputSchema: { bytes: z.number() } }, async ({ bytes }) => {
      calls.push('big');
      return { content: [{ type: 'text', text: 'x'.repeat(bytes) }] };
    });
    return server;
  };

  let lastHeaders: IncomingMessage['headers'] = {};
  const http: HttpServer = createServer((req, res) => {
    requests.push({ method: req.method ?? '', headers: req.headers });
    lastHeaders = req.headers;
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      void (async () => {
        const text = Buffer.concat(chunks).toString('utf8');
        const body: unknown = text === '' ? undefined : JSON.parse(text);
        const id = req.headers['mcp-session-id'];
        let transport = typeof id === 'string' ? transports.get(id) : undefined;
        if (!transport) {
          if (typeof id === 'string') {
            res.writeHead(404, { 'content-type': 'application/json' });
            res.end(
              JSON.stringify({ jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null }),
            );
            return;
          }
          const created: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
            sessionIdGenerator: () => randomUUID(),
            onsessioninitialized: (sessionId) => {
              initialised++;
              transports.set(sessionId, created);
            },
          });
          transport = created;
          await newServer(() => lastHeaders).connect(created);
        }
        await transport.handleRequest(req, res, body);
      })().catch(() => {
        if (!res.headersSent) res.writeHead(500);
        res.end();
      });
    });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const address = http.address() as { port: number };
  return {
    url: `http://127.0.0.1:${address.port}/mcp`,
    requests,
    calls,
    cancelled,
    sessions: () => initialised,
    forgetSessions: () => {
      for (const transport of transports.values()) void transport.close();
      transports.clear();
    },
    close: async () => {
      for (const transport of transports.values()) await transport.close().catch(() => undefined);
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
