/**
 * Which servers and tools a model's MCP tool loop offers is the caller's tool rights (auth/principal.ts
 * toolRightsOf), the same as on `/mcp`: a principal allowed `everything/echo` is offered that tool only; one allowed
 * nothing of the server cannot name it (404, the server not named back to it). Principals are built here directly
 * (keys with `mcp_tools` come from the admin API in another change), over the real server-everything.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Principal } from '../../../src/auth/principal.js';
import { toolRightsOf } from '../../../src/auth/principal.js';
import { isGatewayError } from '../../../src/errors/gateway-error.js';
import { ProblemList } from '../../../src/http/validation-details.js';
import type { McpLoopDeps } from '../../../src/surfaces/mcp-tools/mcp-deps.js';
import { planMcp } from '../../../src/surfaces/mcp-tools/mcp-plan.js';
import { readResponsesMcpTool, type McpServerSpec } from '../../../src/surfaces/mcp-tools/tool-spec.js';
import { useMcpLoopGateway } from '../../helpers/mcp-loop-fixture.js';

function spec(tool: Record<string, unknown>): McpServerSpec {
  const problems = new ProblemList();
  const read = readResponsesMcpTool({ type: 'mcp', ...tool }, 'tools[0]', problems);
  assert.ok(read && problems.empty, JSON.stringify(problems.details()));
  return read;
}

function key(mcpTools: string[]): Principal {
  return { caller: 'key:k1', kind: 'key', routes: new Set(['responses', 'mcp']), mcpTools };
}

describe("a model's MCP tools are the caller's tool rights", () => {
  const fx = useMcpLoopGateway();
  const deps = (): McpLoopDeps => ({
    tools: fx.gw.gateway.mcp.tools,
    config: () => fx.gw.gateway.mcp.settings(),
    environment: 'dev',
  });
  const caller = (principal: Principal) => ({
    caller: principal.caller,
    environment: 'dev',
    rights: toolRightsOf(principal),
    limits: undefined,
    requestId: 'req-1',
    via: 'responses' as const,
  });

  test('a key allowed everything/echo is offered echo only', async () => {
    const offer = await planMcp([spec({ server_label: 'everything' })], deps(), caller(key(['everything/echo'])));
    assert.deepEqual(
      offer.functions.map((fn) => fn.function.name),
      ['everything__echo'],
    );
    assert.deepEqual(
      offer.listings[0]?.tools.map((tool) => tool.tool.name),
      ['echo'],
    );
  });

  test('a glob (everything/get-*) offers the matching tools, in name order', async () => {
    const offer = await planMcp([spec({ server_label: 'everything' })], deps(), caller(key(['everything/get-*'])));
    const names = offer.functions.map((fn) => fn.function.name);
    assert.ok(names.length > 1 && names.every((name) => name.startsWith('everything__get-')), names.join());
    assert.deepEqual(names, [...names].sort());
  });

  test('a key allowed only another server’s tools: 404, and the server is not named back', async () => {
    await assert.rejects(
      planMcp([spec({ server_label: 'everything' })], deps(), caller(key(['github/*']))),
      (error: unknown) =>
        isGatewayError(error) &&
        error.code === 'mcp_server_not_found' &&
        error.details.field === 'tools[0].server_label' &&
        JSON.stringify(error.details.servers) === '[]',
    );
  });

  test('the admin token: every tool; allowed_tools narrows it', async () => {
    const admin: Principal = { caller: 'admin', kind: 'admin' };
    const all = await planMcp([spec({ server_label: 'everything' })], deps(), caller(admin));
    assert.ok(all.functions.length > 3);
    const some = await planMcp(
      [spec({ server_label: 'everything', allowed_tools: ['echo', 'nope'] })],
      deps(),
      caller(admin),
    );
    assert.deepEqual(
      some.functions.map((fn) => fn.function.name),
      ['everything__echo'],
    );
  });
});
