import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { REDIS_URL, redisSkipReason } from '../helpers/services.js';
import { PROJECT_ROOT } from '../helpers/paths.js';
import { waitFor } from '../helpers/wait.js';
import {
  killAllGateways,
  makeTempDir,
  removeTempDirs,
  startGatewayProcess,
  type GatewayProcess,
} from '../helpers/spawn-gateway.js';

const TOKEN = 'mcp-two-instances-admin-token-0123456789';
const EVERYTHING = join(PROJECT_ROOT, 'node_modules', '@modelcontextprotocol', 'server-everything', 'dist', 'index.js');
const skip = await redisSkipReason();

/** One HTTP exchange the client made: where its fetch sent it, and what came back. */
interface Sent {
  /** The gateway it was sent to first (before a refused connection moved it to the other). */
  tried: GatewayProcess;
  answeredBy: GatewayProcess;
  rpcMethod: string | undefined;
  status: number;
  requestId: string | null;
}

function rpcMethodOf(body: unknown): string | undefined {
  if (typeof body !== 'string') return undefined;
  try {
    return (JSON.parse(body) as { method?: string }).method;
  } catch {
    return undefined;
  }
}

/** A refused connection (the gateway is gone): the request never left, so another address may take it. */
function refused(error: unknown): boolean {
  return (error as { cause?: { code?: string } } | undefined)?.cause?.code === 'ECONNREFUSED';
}

/**
 * Issue 45, "several instances": the endpoint is stateless Streamable HTTP (no Mcp-Session-Id), so two gateway
 * processes on one Redis, one data directory and one config answer one client's session between them — each its
 * own upstream connection to the MCP server — and a gateway killed mid-session strands nothing: the client's next
 * call lands on the other. Which process answered is read from the answer's `x-request-id`, found in that process's
 * own access log (and not in the other's).
 */
describe('MCP: one client session across two gateway processes', { skip }, () => {
  let gateways: GatewayProcess[] = [];
  const sent: Sent[] = [];
  let client: Client;

  before(async () => {
    const dataDir = makeTempDir('gw-mcp-two-');
    const configFile = join(dataDir, 'gateway.yaml');
    writeFileSync(
      configFile,
      [
        'mcp_servers:',
        '  - name: everything',
        `    command: ${process.execPath}`,
        `    args: [${EVERYTHING}, stdio]`,
        '',
      ].join('\n'),
    );
    const env = {
      GATEWAY_ENV: 'dev',
      ADMIN_TOKEN: TOKEN,
      REDIS_URL,
      GATEWAY_CONFIG: configFile,
      LOG_LEVEL: 'info',
    };
    gateways = await Promise.all([
      startGatewayProcess({ env, dataDir }, 30_000),
      startGatewayProcess({ env, dataDir }, 30_000),
    ]);
    let next = 0;
    // A balancer in front of the two: every request to the next address in turn; one whose connection is refused
    // goes to the other.
    const alternating = async (url: string | URL, init?: RequestInit): Promise<Response> => {
      const first = gateways[next++ % 2] as GatewayProcess;
      const order = [first, ...gateways.filter((gateway) => gateway !== first)];
      for (const gateway of order) {
        const target = new URL(String(url));
        target.host = new URL(gateway.url).host;
        try {
          const answer = await fetch(target, init);
          sent.push({
            tried: first,
            answeredBy: gateway,
            rpcMethod: rpcMethodOf(init?.body),
            status: answer.status,
            requestId: answer.headers.get('x-request-id'),
          });
          return answer;
        } catch (error) {
          if (!refused(error) || gateway === order.at(-1)) throw error;
        }
      }
      throw new Error('unreachable');
    };
    client = new Client({ name: 'two-instances-test', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${gateways[0]?.url ?? ''}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${TOKEN}` } },
        fetch: alternating,
      }),
    );
  });
  after(async () => {
    await client?.close().catch(() => undefined);
    await killAllGateways();
    removeTempDirs();
  });

  const echo = async (message: string): Promise<{ text: string; exchange: Sent }> => {
    const result = await client.callTool({ name: 'everything__echo', arguments: { message } });
    const exchange = sent.filter((item) => item.rpcMethod === 'tools/call').at(-1) as Sent;
    const content = result.content as Array<{ type: string; text?: string }>;
    return { text: content.map((part) => part.text ?? '').join(''), exchange };
  };

  /**
   * Waits until each answer's request id is in the access log of the process that answered it (the log is written
   * asynchronously), and checks it is in no other's.
   */
  const answeredIn = async (exchanges: Sent[]): Promise<void> => {
    const ids = exchanges.map((exchange) => exchange.requestId);
    assert.ok(
      ids.every((id) => id !== null),
      'every answer carries x-request-id',
    );
    const needle = (exchange: Sent): string => `"request_id":"${exchange.requestId ?? ''}"`;
    await waitFor(`${exchanges.length} request ids in the access logs of the processes that answered`, () =>
      exchanges.every((exchange) => exchange.answeredBy.stdout().includes(needle(exchange))),
    );
    for (const exchange of exchanges)
      for (const other of gateways.filter((gateway) => gateway !== exchange.answeredBy))
        assert.ok(!other.stdout().includes(needle(exchange)), `${needle(exchange)} is not in ${other.url}'s log`);
  };

  test('a 100-call session completes, its calls answered by both processes in turn', { timeout: 120_000 }, async () => {
    const answered = new Map<GatewayProcess, number>();
    const calls: Sent[] = [];
    for (let i = 0; i < 100; i++) {
      const message = `call-${i}-${randomBytes(6).toString('hex')}`;
      const { text, exchange } = await echo(message);
      assert.equal(text, `Echo: ${message}`, `call ${i}`);
      assert.equal(exchange.status, 200);
      assert.equal(exchange.answeredBy, exchange.tried, `call ${i} answered where it was sent`);
      calls.push(exchange);
      answered.set(exchange.answeredBy, (answered.get(exchange.answeredBy) ?? 0) + 1);
    }
    await answeredIn(calls);
    // Strict alternation of every request (the GET stream's included): each process takes a large share.
    for (const gateway of gateways)
      assert.ok((answered.get(gateway) ?? 0) >= 30, `${gateway.url} answered ${answered.get(gateway) ?? 0} of 100`);
  });

  test('one process killed mid-session: the next call succeeds on the other', { timeout: 60_000 }, async () => {
    const [survivor, victim] = gateways as [GatewayProcess, GatewayProcess];
    victim.signal('SIGKILL');
    await victim.waitForExit(10_000);
    const calls: Sent[] = [];
    for (let i = 0; i < 4; i++) {
      const message = `after-kill-${i}-${randomBytes(6).toString('hex')}`;
      const { text, exchange } = await echo(message);
      assert.equal(text, `Echo: ${message}`);
      assert.equal(exchange.answeredBy, survivor);
      calls.push(exchange);
    }
    await answeredIn(calls);
    // At least one of those calls was first sent to the killed process and moved over.
    const moved = sent.filter((item) => item.rpcMethod === 'tools/call' && item.tried === victim).at(-1);
    assert.equal(moved?.answeredBy, survivor);
  });
});
