/**
 * MCP tool calls' limits and records through the wired service of a real gateway (buildApp, the SQLite stores),
 * against a real upstream nobody here wrote (`@modelcontextprotocol/server-everything` over stdio): the record of
 * each call in the usage store, refused ones included; the per-caller and per-server limits (429 with Retry-After,
 * the limit named); concurrency slots given back after success, failure, timeout and cancellation; the metrics;
 * the webhook events; the span; `gateway usage tools`.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { runCli } from '../../../src/cli/run-cli.js';
import type { ToolCaller } from '../../../src/core/mcp/tool-service.js';
import { compileToolRights } from '../../../src/core/mcp/tool-rights.js';
import type { McpLimits } from '../../../src/config/mcp-schema.js';
import { isGatewayError, type GatewayError } from '../../../src/errors/gateway-error.js';
import { SqliteToolCallStore } from '../../../src/store/sqlite/sqlite-tool-calls.js';
import type { StoredToolCall } from '../../../src/store/tool-call-contract.js';
import { verifyWebhook } from '../../../src/webhooks/verify.js';
import { ADMIN_TOKEN, startGateway, type TestGateway } from '../../helpers/gateway.js';
import { startOtlpCollector, type OtlpCollector } from '../../helpers/otlp-collector.js';
import { waitForValue } from '../../helpers/wait.js';
import { chromiumSkipReason, launchChromium } from '../../helpers/services.js';
import { startWebhookReceiver, type WebhookReceiver } from '../../helpers/webhook-receiver.js';
import { EVERYTHING_SERVER } from '../../helpers/mcp/everything-http.js';
import { gatewayRefusal } from '../../helpers/mcp/gateway-refusal.js';

const SECRET = 'whsec-tool-calls-0123456789abcdef';
const chromiumSkip = await chromiumSkipReason();

/** A stdio server-everything entry of `mcp_servers`. */
const everything = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  command: process.execPath,
  args: [EVERYTHING_SERVER, 'stdio'],
  call_timeout_seconds: 1.5,
  ...extra,
});

/** A caller of the service as the /mcp endpoint or a tool loop would make it (every tool allowed). */
function callerOf(caller: string, limits: McpLimits | null | undefined, requestId = `req_${caller}`): ToolCaller {
  return { caller, environment: 'dev', rights: compileToolRights(undefined), limits, requestId, via: 'mcp' };
}

/** The GatewayError a call ends with, or undefined when it was answered. */
async function outcomeOf(promise: Promise<unknown>): Promise<GatewayError | undefined> {
  try {
    await promise;
    return undefined;
  } catch (error) {
    assert.ok(isGatewayError(error), `not a GatewayError: ${String(error)}`);
    return error;
  }
}

describe('MCP tool calls: limits and records through the wired service', () => {
  let gw: TestGateway;
  let store: SqliteToolCallStore;
  let receiver: WebhookReceiver;
  let collector: OtlpCollector;

  before(async () => {
    [receiver, collector] = await Promise.all([startWebhookReceiver(), startOtlpCollector()]);
    gw = await startGateway({
      env: { WH_SECRET: SECRET },
      configFile: {
        name: 'mcp.json',
        text: JSON.stringify({
          mcp_servers: [
            everything('everything'),
            everything('limited', { limits: { calls_per_minute: 2 } }),
            everything('narrow', { limits: { concurrent: 1 } }),
            // A server whose child exits at once: every call fails (502 mcp_server_unavailable).
            { name: 'broken', command: process.execPath, args: ['-e', 'process.exit(3)'], connect_timeout_seconds: 2 },
          ],
          tracing: { enabled: true, endpoint: collector.url, export_delay_ms: 20 },
          webhooks: {
            allow_private_addresses: true,
            poll_interval_ms: 50,
            subscriptions: [
              {
                id: 'tools',
                url: receiver.url,
                canary: true,
                secrets: [{ env: 'WH_SECRET' }],
                events: ['mcp.tool_called', 'mcp.tool_failed'],
              },
            ],
          },
        }),
      },
    });
    store = new SqliteToolCallStore(gw.store.db);
  });
  after(async () => {
    await gw?.close();
    await Promise.all([receiver?.close(), collector?.close()]);
  });

  const tools = () => gw.gateway.mcp.tools;
  /** The stored record of a call, once the recorder has written it. */
  const recordOf = (callId: string): Promise<StoredToolCall | undefined> =>
    waitForValue(
      `the record of ${callId}`,
      async () => (await store.recentToolCalls(1000)).find((r) => r.callId === callId),
      (r) => r !== undefined,
    );
  /** The stored records of a request id, once there are `count`. */
  const recordsOfRequest = (requestId: string, count: number): Promise<StoredToolCall[]> =>
    waitForValue(
      `${count} records of ${requestId}`,
      async () => (await store.recentToolCalls(1000)).filter((r) => r.requestId === requestId),
      (rows) => rows.length >= count,
    );

  test('a call is recorded with its caller, server, tool, outcome and sizes (never its arguments)', async () => {
    const args = { message: 'secret-argument-text-1234' };
    const answer = await tools().callTool(callerOf('key:k1', undefined, 'req_ok'), 'everything', 'echo', args);
    assert.deepEqual(answer.result.content, [{ type: 'text', text: 'Echo: secret-argument-text-1234' }]);
    // The caller's limits applied (the config's default caller_limits: 600 a minute): their state for RateLimit-*.
    assert.equal(answer.rate?.limit, 600);
    assert.ok(answer.rate.remaining < 600);
    const record = await recordOf(answer.callId);
    assert.deepEqual(
      { ...record, timeMs: 0, durationMs: 0 },
      {
        timeMs: 0,
        callId: answer.callId,
        requestId: 'req_ok',
        caller: 'key:k1',
        environment: 'dev',
        server: 'everything',
        tool: 'echo',
        via: 'mcp',
        outcome: 'ok',
        code: null,
        durationMs: 0,
        bytesIn: Buffer.byteLength(JSON.stringify(args)),
        bytesOut: Buffer.byteLength(JSON.stringify(answer.result)),
      },
    );
    assert.ok(record && record.durationMs >= 0 && record.durationMs < 30_000);
    assert.ok(!gw.logLines.some((line) => line.includes('secret-argument-text-1234')), 'the arguments were logged');
  });

  test('a refused call is recorded `refused` with its code', async () => {
    const caller = { ...callerOf('key:none', undefined, 'req_refused'), rights: compileToolRights([]) };
    const error = await gatewayRefusal(tools().callTool(caller, 'everything', 'echo', { message: 'x' }));
    assert.equal(error.code, 'mcp_tool_not_allowed');
    const [record] = await recordsOfRequest('req_refused', 1);
    assert.equal(record?.outcome, 'refused');
    assert.equal(record?.code, 'mcp_tool_not_allowed');
    assert.equal(record?.bytesOut, 0);
  });

  test("a caller's calls a minute: the third is 429 rate_limited with Retry-After, naming the limit", async () => {
    const caller = callerOf('key:per-minute', { callsPerMinute: 2, concurrent: undefined }, 'req_per_minute');
    for (let i = 0; i < 2; i++) await tools().callTool(caller, 'everything', 'echo', { message: `m${i}` });
    const error = await gatewayRefusal(tools().callTool(caller, 'everything', 'echo', { message: 'm2' }));
    assert.equal(error.code, 'rate_limited');
    assert.equal(error.status, 429);
    assert.equal(error.details.limit, 'mcp.caller.calls_per_minute');
    assert.equal(error.details.scope_id, 'key:per-minute');
    assert.equal(error.details.max, 2);
    const retryAfter = Number(error.headers?.['retry-after']);
    assert.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After ${retryAfter}`);
    assert.equal(error.headers?.['ratelimit-limit'], '2');
    assert.equal(error.headers?.['ratelimit-remaining'], '0');
    // Another caller is not limited by it.
    await tools().callTool(callerOf('key:other', undefined), 'everything', 'echo', { message: 'free' });
    const records = await recordsOfRequest('req_per_minute', 3);
    assert.deepEqual(records.map((r) => r.outcome).sort(), ['ok', 'ok', 'refused']);
    assert.equal(records.find((r) => r.outcome === 'refused')?.code, 'rate_limited');
  });

  test("a server's calls a minute apply to every caller, the admin token's too", async () => {
    const admin = callerOf('admin', null);
    await tools().callTool(admin, 'limited', 'echo', { message: 'a' });
    await tools().callTool(callerOf('key:x', undefined), 'limited', 'echo', { message: 'b' });
    const error = await gatewayRefusal(tools().callTool(admin, 'limited', 'echo', { message: 'c' }));
    assert.equal(error.code, 'rate_limited');
    assert.equal(error.details.limit, 'mcp.server.calls_per_minute');
    assert.equal(error.details.scope_id, 'limited');
    assert.ok(Number(error.headers?.['retry-after']) >= 1);
  });

  test('concurrent calls: refused while one is in flight; the slot comes back after success, failure, timeout and cancellation', async () => {
    const caller = callerOf('key:narrow', { callsPerMinute: undefined, concurrent: 1 }, 'req_narrow');
    const call = (tool: string, args: Record<string, unknown>, signal?: AbortSignal) =>
      tools().callTool(caller, 'everything', tool, args, signal ? { signal } : {});

    // Success, then the next call is admitted.
    await call('echo', { message: 'one' });
    // A tool's own error (server-everything answers an unknown tool with `isError: true`), then the next call.
    const unknown = await call('no-such-tool', {});
    assert.equal(unknown.result.isError, true);
    await call('echo', { message: 'two' });
    // A failure (the server cannot be started: 502), then the next call is admitted.
    const broken = await gatewayRefusal(tools().callTool(caller, 'broken', 'echo', { message: 'x' }));
    assert.equal(broken.code, 'mcp_server_unavailable');
    await call('echo', { message: 'three' });

    // While one is in flight, a second is refused (the caller's concurrency), then admitted after the timeout.
    const slow = call('trigger-long-running-operation', { duration: 5, steps: 5 });
    const busy = await waitForValue(
      'the slow call to hold the slot',
      () => outcomeOf(call('echo', { message: 'busy' })),
      (error) => error?.code === 'rate_limited',
    );
    assert.equal(busy?.details.limit, 'mcp.caller.concurrent');
    assert.equal(busy?.headers?.['retry-after'], '1');
    const timedOut = await gatewayRefusal(slow);
    assert.equal(timedOut.code, 'mcp_tool_timeout');
    await call('echo', { message: 'after timeout' });

    // Cancellation: the caller aborts; the slot is free at once.
    const abort = new AbortController();
    const cancelled = call('trigger-long-running-operation', { duration: 5, steps: 5 }, abort.signal);
    await waitForValue(
      'the cancellable call to hold the slot',
      () => outcomeOf(call('echo', { message: 'busy' })),
      (error) => error?.code === 'rate_limited',
    );
    abort.abort();
    await assert.rejects(cancelled);
    await call('echo', { message: 'after cancel' });

    // Each step above, the refusals while a call was in flight included (sorted: a refusal and the call it met
    // may arrive in the same millisecond).
    const records = await recordsOfRequest('req_narrow', 11);
    assert.deepEqual(records.map((r) => `${r.server} ${r.tool} ${r.outcome} ${r.code}`).sort(), [
      'broken echo upstream_error mcp_server_unavailable',
      'everything echo ok null',
      'everything echo ok null',
      'everything echo ok null',
      'everything echo ok null',
      'everything echo ok null',
      'everything echo refused rate_limited',
      'everything echo refused rate_limited',
      'everything no-such-tool tool_error null',
      'everything trigger-long-running-operation cancelled client_closed_request',
      'everything trigger-long-running-operation timeout mcp_tool_timeout',
    ]);
  });

  test("a server's concurrency: one call in flight, the next refused, then admitted once it ended", async () => {
    const admin = callerOf('admin', null);
    const slow = tools().callTool(admin, 'narrow', 'trigger-long-running-operation', { duration: 0.6, steps: 2 });
    const busy = await waitForValue(
      'the slow call to hold the server slot',
      () => outcomeOf(tools().callTool(admin, 'narrow', 'echo', { message: 'x' })),
      (error) => error?.code === 'rate_limited',
    );
    assert.equal(busy?.details.limit, 'mcp.server.concurrent');
    await slow;
    await tools().callTool(admin, 'narrow', 'echo', { message: 'y' });
  });

  test('/metrics counts the calls by server, tool and outcome, with their durations', async () => {
    const response = await fetch(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    assert.equal(response.status, 200);
    const text = await response.text();
    assert.match(text, /llmgw_mcp_tool_calls_total\{server="everything",tool="echo",outcome="ok"\} \d+/);
    assert.match(text, /llmgw_mcp_tool_calls_total\{server="everything",tool="echo",outcome="refused"\} \d+/);
    assert.match(
      text,
      /llmgw_mcp_tool_calls_total\{server="everything",tool="trigger-long-running-operation",outcome="timeout"\} 1/,
    );
    assert.match(text, /llmgw_mcp_tool_call_duration_seconds_count\{server="everything",tool="echo"\} \d+/);
  });

  test('a subscription receives mcp.tool_called and mcp.tool_failed, signed, with sizes and no arguments', async () => {
    const deliveries = await waitForValue(
      'a tool_called and a tool_failed event',
      () => receiver.deliveries.map((d) => verifyWebhook({ body: d.body, headers: d.headers, secret: SECRET })),
      (events) =>
        events.some((e) => e.event === 'mcp.tool_called') &&
        events.some((e) => e.event === 'mcp.tool_failed' && e.data.outcome === 'timeout'),
    );
    const called = deliveries.find((e) => e.event === 'mcp.tool_called' && e.data.request_id === 'req_ok');
    assert.ok(called, 'the first call has its event');
    assert.deepEqual(Object.keys(called.data).sort(), [
      'bytes_in',
      'bytes_out',
      'call_id',
      'caller',
      'code',
      'duration_ms',
      'outcome',
      'request_id',
      'server',
      'tool',
      'via',
    ]);
    assert.equal(called.data.caller, 'key:k1');
    assert.equal(called.data.outcome, 'ok');
    const failed = deliveries.find((e) => e.event === 'mcp.tool_failed' && e.data.outcome === 'timeout');
    assert.equal(failed?.data.code, 'mcp_tool_timeout');
    assert.ok(!receiver.deliveries.some((d) => d.body.includes('secret-argument-text-1234')));
  });

  test('each call has an `mcp.tools/call` span with its server, tool and outcome', async () => {
    const span = await waitForValue(
      'the timed-out call span',
      () => collector.spans.find((s) => s.name === 'mcp.tools/call' && s.attributes['llmgw.mcp.outcome'] === 'timeout'),
      (s) => s !== undefined,
    );
    assert.equal(span?.kind, 3); // CLIENT
    assert.equal(span?.attributes['llmgw.mcp.server'], 'everything');
    assert.equal(span?.attributes['gen_ai.tool.name'], 'trigger-long-running-operation');
    assert.equal(span?.attributes['error.type'], 'mcp_tool_timeout');
    assert.equal(span?.statusCode, 2);
    const ok = collector.spans.find(
      (s) => s.name === 'mcp.tools/call' && s.attributes['llmgw.request_id'] === 'req_ok',
    );
    assert.equal(ok?.attributes['llmgw.mcp.outcome'], 'ok');
    assert.equal(ok?.statusCode, 0);
  });

  test('`gateway usage tools` prints the calls per caller, server and tool', async () => {
    await gw.gateway.app.inject({ method: 'GET', url: '/health' }); // nothing: the recorder flushes by itself
    await recordsOfRequest('req_narrow', 11);
    const out: string[] = [];
    const err: string[] = [];
    const code = await runCli(
      ['usage', 'tools', '--since', '1h', '--format', 'json'],
      { GATEWAY_ENV: 'dev', ADMIN_TOKEN, DATA_DIR: gw.dataDir },
      { out: (l) => out.push(l), err: (l) => err.push(l) },
      async () => '',
    );
    assert.equal(code, 0, err.join('\n'));
    const rows = JSON.parse(out.join('\n')) as Array<Record<string, unknown>>;
    const echo = rows.find((r) => r.caller === 'key:k1' && r.server === 'everything' && r.tool === 'echo');
    assert.deepEqual(
      { ...echo, p50_ms: 0, p99_ms: 0 },
      {
        caller: 'key:k1',
        server: 'everything',
        tool: 'echo',
        calls: 1,
        errors: 0,
        refused: 0,
        p50_ms: 0,
        p99_ms: 0,
        bytes_in: Buffer.byteLength(JSON.stringify({ message: 'secret-argument-text-1234' })),
        bytes_out: echo?.bytes_out,
      },
    );
    const narrow = rows.find((r) => r.caller === 'key:narrow' && r.tool === 'trigger-long-running-operation');
    assert.equal(narrow?.calls, 2);
    assert.equal(narrow?.errors, 2);
    assert.ok(Number(narrow?.p50_ms) > 0);

    const table: string[] = [];
    assert.equal(
      await runCli(
        ['usage', 'tools', '--since', '1h'],
        { GATEWAY_ENV: 'dev', ADMIN_TOKEN, DATA_DIR: gw.dataDir },
        { out: (l) => table.push(l), err: () => undefined },
        async () => '',
      ),
      0,
    );
    assert.match(table[0] ?? '', /^caller\s+server\s+tool\s+calls\s+errors\s+refused\s+p50_ms\s+p99_ms/);
    assert.ok(
      table.some((line) => /^key:k1\s+everything\s+echo\s+1\s+0\s+0\s/.test(line)),
      table.join('\n'),
    );
  });

  test('the dashboard overview has the tool calls per caller, server and tool', async () => {
    const response = await fetch(`${gw.url}/dashboard/api/overview?window=1h`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    assert.equal(response.status, 200);
    const overview = (await response.json()) as {
      toolCalls: { rows: Array<Record<string, unknown>>; total: { calls: number; errors: number; refused: number } };
    };
    const row = overview.toolCalls.rows.find((r) => r.caller === 'key:k1' && r.tool === 'echo');
    assert.equal(row?.calls, 1);
    assert.equal(typeof row?.p50Ms, 'number');
    assert.ok(overview.toolCalls.total.refused >= 3);
    assert.ok(overview.toolCalls.total.calls > overview.toolCalls.total.refused);
  });
  test('the dashboard page shows the Tool calls panel (headless Chromium)', { skip: chromiumSkip }, async () => {
    const browser = await launchChromium();
    try {
      const page = await browser.newPage({ viewport: { width: 1400, height: 1100 } });
      await page.goto(`${gw.url}/dashboard`);
      await page.locator('#login').waitFor({ state: 'visible' });
      await page.fill('#token', ADMIN_TOKEN);
      await page.click('#login-form button[type=submit]');
      await page.waitForSelector('body[data-loaded="true"]');
      await page.locator('[data-testid=tool-calls-card]').waitFor({ state: 'visible' });
      const rows = await page.$$eval('[data-testid=tool-calls] tbody tr', (trs) =>
        trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)),
      );
      const echo = rows.find((r) => r[0] === 'key:k1' && r[1] === 'everything' && r[2] === 'echo');
      assert.deepEqual(echo?.slice(0, 6), ['key:k1', 'everything', 'echo', '1', '0', '0']);
      assert.match(echo?.[6] ?? '', /^\d+\.\d+ m?s$/); // `fmtMs`: 12.0 ms, 1.12 s (its first call starts the server)
      assert.match(
        (await page.textContent('[data-testid=tool-calls-total]')) ?? '',
        /^\d+ calls, \d+ errors \(\d+ refused\)$/,
      );
    } finally {
      await browser.close();
    }
  });
});
