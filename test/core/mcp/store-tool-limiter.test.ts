/**
 * The MCP tool-call limits in the gateway's limit stores: a slot whose holder died lapses by itself (SQLite), and
 * two gateways on one Redis enforce one limit between them (each with its own stdio server-everything).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { StoreToolLimiter } from '../../../src/core/mcp/store-tool-limiter.js';
import type { ToolCaller } from '../../../src/core/mcp/tool-service.js';
import { compileToolRights } from '../../../src/core/mcp/tool-rights.js';
import { isGatewayError } from '../../../src/errors/gateway-error.js';
import { openSqliteStore, type SqliteStore } from '../../../src/store/sqlite/sqlite-store.js';
import { SqliteRateLimiter } from '../../../src/store/sqlite/sqlite-rate-limiter.js';
import { startGateway, type TestGateway } from '../../helpers/gateway.js';
import { REDIS_URL, redisSkipReason } from '../../helpers/services.js';
import { waitFor } from '../../helpers/wait.js';
import { EVERYTHING_SERVER } from '../../helpers/mcp/everything-http.js';
import { gatewayRefusal } from '../../helpers/mcp/gateway-refusal.js';

describe('StoreToolLimiter on SQLite', () => {
  let sqlite: SqliteStore;
  before(async () => {
    sqlite = await openSqliteStore(':memory:');
  });
  after(async () => {
    await sqlite?.close();
  });

  test('a slot never released (its process died) lapses with its lease; a released one frees at once', async () => {
    const limits = new SqliteRateLimiter(sqlite.db);
    // Releases are store steps the limiter does not wait for: the test waits for each before the store closes.
    const settling: Array<Promise<void>> = [];
    const store = {
      admit: limits.admit.bind(limits),
      settle: (...args: Parameters<SqliteRateLimiter['settle']>) => {
        const step = limits.settle(...args);
        settling.push(step);
        return step;
      },
    };
    const limiter = new StoreToolLimiter({
      store,
      onStoreFailure: () => 'open',
      onStoreHealth: () => undefined,
      onReleaseError: (error) => assert.fail(String(error)),
      slotLeaseMarginMs: 300,
    });
    const call = {
      caller: 'key:crashy',
      callerLimits: { callsPerMinute: undefined, concurrent: 1 },
      server: 'everything',
      serverLimits: { callsPerMinute: undefined, concurrent: undefined },
      holdMs: 0,
    };
    const held = await limiter.admit(call);
    assert.equal(held.rate, undefined); // no windowed limit: no RateLimit-* state
    const busy = await gatewayRefusal(limiter.admit(call));
    assert.equal(busy.details.limit, 'mcp.caller.concurrent');
    assert.equal(busy.details.in_flight, 1);
    // Never released: after its lease (hold + margin) another call is admitted.
    const startedMs = Date.now();
    await waitFor('the lapsed slot', async () => {
      try {
        (await limiter.admit(call)).release();
        return true;
      } catch (error) {
        if (isGatewayError(error) && error.code === 'rate_limited') return false;
        throw error;
      }
    });
    assert.ok(Date.now() - startedMs >= 200, 'the slot lapsed before its lease ended');
    // A released slot is free at once (release is a store step of its own: wait for it).
    const next = await limiter.admit(call);
    next.release();
    await waitFor('the released slot', async () => {
      try {
        (await limiter.admit(call)).release();
        return true;
      } catch {
        return false;
      }
    });
    await Promise.all(settling);
  });
});

describe('two gateways on one Redis', { skip: await redisSkipReason() }, () => {
  let a: TestGateway;
  let b: TestGateway;
  const config = {
    name: 'mcp.json',
    text: JSON.stringify({
      mcp_servers: [{ name: 'everything', command: process.execPath, args: [EVERYTHING_SERVER, 'stdio'] }],
    }),
  };
  before(async () => {
    [a, b] = await Promise.all([
      startGateway({ env: { REDIS_URL }, configFile: config }),
      startGateway({ env: { REDIS_URL }, configFile: config }),
    ]);
  });
  after(async () => {
    await Promise.all([a?.close(), b?.close()]);
  });

  // A caller of its own per run: Redis keeps the windows between runs.
  const callerOf = (limits: ToolCaller['limits']): ToolCaller => ({
    caller: `key:${randomUUID()}`,
    environment: 'dev',
    rights: compileToolRights(undefined),
    limits,
    requestId: 'req_shared',
    via: 'mcp',
  });

  test("a caller's calls a minute are counted across both", async () => {
    const caller = callerOf({ callsPerMinute: 3, concurrent: undefined });
    await a.gateway.mcp.tools.callTool(caller, 'everything', 'echo', { message: '1' });
    await b.gateway.mcp.tools.callTool(caller, 'everything', 'echo', { message: '2' });
    const third = await a.gateway.mcp.tools.callTool(caller, 'everything', 'echo', { message: '3' });
    assert.equal(third.rate?.remaining, 0);
    const error = await gatewayRefusal(b.gateway.mcp.tools.callTool(caller, 'everything', 'echo', { message: '4' }));
    assert.equal(error.details.limit, 'mcp.caller.calls_per_minute');
    assert.ok(Number(error.headers?.['retry-after']) >= 1);
  });

  test("a caller's concurrent calls are counted across both, and the slot comes back to either", async () => {
    const caller = callerOf({ callsPerMinute: undefined, concurrent: 1 });
    const abort = new AbortController();
    const slow = a.gateway.mcp.tools.callTool(
      caller,
      'everything',
      'trigger-long-running-operation',
      { duration: 10, steps: 10 },
      { signal: abort.signal },
    );
    await waitFor('the slow call on A to hold the slot', async () => {
      try {
        await b.gateway.mcp.tools.callTool(caller, 'everything', 'echo', { message: 'x' });
        return false;
      } catch (error) {
        return isGatewayError(error) && error.details.limit === 'mcp.caller.concurrent';
      }
    });
    abort.abort();
    await assert.rejects(slow);
    await waitFor('B to be admitted once A let go', async () => {
      try {
        await b.gateway.mcp.tools.callTool(caller, 'everything', 'echo', { message: 'y' });
        return true;
      } catch (error) {
        if (isGatewayError(error) && error.code === 'rate_limited') return false;
        throw error;
      }
    });
  });
});
