// How each client is given the gateway's `/mcp`, in its users' own way, on top of its default settings (clients.ts):
// - Claude Code: `claude mcp add --transport http gw <url> --header "Authorization: Bearer <key>"` (its local scope,
//   in the run's HOME), then `-p` with `--allowedTools mcp__gw__everything__echo`: `-p` asks no questions, and an
//   MCP tool without an allow rule is denied (the model's next turn then reads "Claude requested permissions to use
//   mcp__gw__everything__echo, but you haven't granted it yet").
// - Codex: `[mcp_servers.gw]` with `url` and `bearer_token_env_var` in its config.toml, the key in that variable.
// - Gemini CLI: `mcpServers.gw` with `httpUrl` and `headers` in settings.json, `trust: true`: `-p` leaves out of the
//   model's tools every tool that would ask for a confirmation, an untrusted server's included.
// - The SDK's client (mcp-sdk-client.ts) and the MCP Inspector's CLI mode: the URL and the header on the command line.
import { appendFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { prepareClient, type ClientRun, type Endpoint } from './clients.js';
import { MCP_SERVER_NAME, MCP_TASK_PROMPT, MCP_TOOL } from './mcp-task.js';
import type { PathSpec } from './paths.js';

/** Where the MCP endpoint is and the credential the client sends to it. */
export interface McpEndpoint {
  /** `<origin>/mcp` */
  url: string;
  key: string;
}

const MCP_TOKEN_ENV = 'GW_MCP_TOKEN';

function baseEnv(home: string): Record<string, string> {
  return { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, LANG: 'C.UTF-8', TERM: 'dumb' };
}

function claudeCode(run: ClientRun, mcp: McpEndpoint): ClientRun {
  const add = ['mcp', 'add', '--transport', 'http', MCP_SERVER_NAME, mcp.url];
  return {
    ...run,
    setup: [[...add, '--header', `Authorization: Bearer ${mcp.key}`]],
    args: [...run.args, '--allowedTools', `mcp__${MCP_SERVER_NAME}__${MCP_TOOL}`],
  };
}

function codex(run: ClientRun, mcp: McpEndpoint): ClientRun {
  const codexHome = run.env.CODEX_HOME as string;
  const server = [
    '',
    `[mcp_servers.${MCP_SERVER_NAME}]`,
    `url = "${mcp.url}"`,
    `bearer_token_env_var = "${MCP_TOKEN_ENV}"`,
  ];
  appendFileSync(join(codexHome, 'config.toml'), `${server.join('\n')}\n`);
  return { ...run, env: { ...run.env, [MCP_TOKEN_ENV]: mcp.key } };
}

function geminiCli(run: ClientRun, mcp: McpEndpoint, home: string): ClientRun {
  const file = join(home, '.gemini', 'settings.json');
  const settings = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
  settings.mcpServers = {
    [MCP_SERVER_NAME]: { httpUrl: mcp.url, headers: { Authorization: `Bearer ${mcp.key}` }, trust: true },
  };
  writeFileSync(file, JSON.stringify(settings, null, 2));
  return run;
}

function inspector(path: PathSpec, home: string, mcp: McpEndpoint, message: string): ClientRun {
  const target = [
    '--cli',
    '--transport',
    'http',
    '--server-url',
    mcp.url,
    '--header',
    `Authorization: Bearer ${mcp.key}`,
  ];
  const method =
    path.mcp === 'list'
      ? ['--method', 'tools/list']
      : ['--method', 'tools/call', '--tool-name', MCP_TOOL, '--tool-arg', `message=${message}`];
  return { args: [...target, ...method], env: baseEnv(home) };
}

/** A client set up for an MCP path; `message`: what the echo tool is to be called with (the run's token). */
export function prepareMcpClient(
  path: PathSpec,
  home: string,
  model: Endpoint,
  mcp: McpEndpoint,
  message: string,
): ClientRun {
  mkdirSync(home, { recursive: true });
  if (path.client === 'mcp-sdk')
    return { args: [mcp.url, message], env: { ...baseEnv(home), MCP_BEARER_TOKEN: mcp.key } };
  if (path.client === 'mcp-inspector') return inspector(path, home, mcp, message);
  const run = prepareClient(path.client, home, model, MCP_TASK_PROMPT);
  if (path.client === 'claude-code') return claudeCode(run, mcp);
  if (path.client === 'codex') return codex(run, mcp);
  return geminiCli(run, mcp, home);
}
