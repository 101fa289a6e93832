// Every way each client is run: straight to the mock (the control: it proves the client, its settings and the
// mock's task work without the gateway, so a red cell is the gateway's), and through the gateway to each upstream
// kind the client's API can reach, natively or translated.
import type { UpstreamName } from './gateway.js';
import type { Api } from './mock-upstream.js';
import type { ClientId } from './pins.js';

export interface PathSpec {
  client: ClientId;
  /** Short id: `native-anthropic`, `to-chat`... (with the client, names the run's log directory). */
  id: string;
  /** As the matrix shows it. */
  label: string;
  /** `direct`: the client talks to the mock itself; `gateway`: through a gateway whose default upstream is `upstream`. */
  via: 'direct' | 'gateway';
  upstream: UpstreamName;
  /**
   * The API the upstream must be called in. A native path must reach it in the caller's own API (a Responses call
   * translated to chat on an OpenAI upstream is not native: it loses what chat cannot carry); a translated one in
   * the upstream's.
   */
  api: Api;
  /** Set when the gateway cannot serve this client yet: the matrix says why, nothing is run. */
  notYet?: string;
  /**
   * A path of the gateway's MCP endpoint (mcp-clients.ts): `agent`, the CLI is given `/mcp` as its MCP server `gw`
   * and its model (through the gateway, natively) calls the tool; `list`, `call`, `list-and-call`: a client that
   * speaks MCP only (no model: `upstream` and `api` are then not used).
   */
  mcp?: McpStep;
}

export type McpStep = 'agent' | 'list' | 'call' | 'list-and-call';

export const PATHS: readonly PathSpec[] = [
  {
    client: 'claude-code',
    id: 'control',
    label: 'control: straight to the Anthropic mock (no gateway)',
    via: 'direct',
    upstream: 'anthropic',
    api: 'messages',
  },
  {
    client: 'claude-code',
    id: 'native-anthropic',
    label: '/v1/messages → Anthropic (native)',
    via: 'gateway',
    upstream: 'anthropic',
    api: 'messages',
  },
  {
    client: 'claude-code',
    id: 'to-chat',
    label: '/v1/messages → chat completions (translated)',
    via: 'gateway',
    upstream: 'chat',
    api: 'chat',
  },
  {
    client: 'claude-code',
    id: 'to-gemini',
    label: '/v1/messages → Gemini (translated)',
    via: 'gateway',
    upstream: 'gemini',
    api: 'gemini',
  },
  {
    client: 'codex',
    id: 'control',
    label: 'control: straight to the Responses mock (no gateway)',
    via: 'direct',
    upstream: 'responses',
    api: 'responses',
  },
  {
    client: 'codex',
    id: 'native-responses',
    label: '/v1/responses → OpenAI Responses (native)',
    via: 'gateway',
    upstream: 'responses',
    api: 'responses',
  },
  {
    client: 'codex',
    id: 'to-chat',
    label: '/v1/responses → chat completions (translated)',
    via: 'gateway',
    upstream: 'chat',
    api: 'chat',
  },
  {
    client: 'codex',
    id: 'to-anthropic',
    label: '/v1/responses → Anthropic (translated)',
    via: 'gateway',
    upstream: 'anthropic',
    api: 'messages',
  },
  {
    client: 'codex',
    id: 'to-gemini',
    label: '/v1/responses → Gemini (translated)',
    via: 'gateway',
    upstream: 'gemini',
    api: 'gemini',
  },
  {
    client: 'gemini-cli',
    id: 'control',
    label: 'control: straight to the Gemini mock (no gateway)',
    via: 'direct',
    upstream: 'gemini',
    api: 'gemini',
  },
  {
    client: 'gemini-cli',
    id: 'native-gemini',
    label: 'Gemini API → Gemini (native)',
    via: 'gateway',
    upstream: 'gemini',
    api: 'gemini',
  },
  {
    client: 'gemini-cli',
    id: 'to-chat',
    label: 'Gemini API → chat completions (translated)',
    via: 'gateway',
    upstream: 'chat',
    api: 'chat',
  },
  {
    client: 'gemini-cli',
    id: 'to-anthropic',
    label: 'Gemini API → Anthropic (translated)',
    via: 'gateway',
    upstream: 'anthropic',
    api: 'messages',
  },
  {
    client: 'claude-code',
    id: 'mcp-native-anthropic',
    label: '/mcp as MCP server `gw` (tool mcp__gw__everything__echo); model on /v1/messages → Anthropic (native)',
    via: 'gateway',
    upstream: 'anthropic',
    api: 'messages',
    mcp: 'agent',
  },
  {
    client: 'codex',
    id: 'mcp-native-responses',
    label: '/mcp as `[mcp_servers.gw]` (bearer_token_env_var); model on /v1/responses → OpenAI Responses (native)',
    via: 'gateway',
    upstream: 'responses',
    api: 'responses',
    mcp: 'agent',
  },
  {
    client: 'gemini-cli',
    id: 'mcp-native-gemini',
    label: '/mcp as `mcpServers.gw` (httpUrl, headers); model on Gemini API → Gemini (native)',
    via: 'gateway',
    upstream: 'gemini',
    api: 'gemini',
    mcp: 'agent',
  },
  {
    client: 'mcp-sdk',
    id: 'mcp',
    label: '/mcp: tools/list, tools/call everything__echo (Streamable HTTP)',
    via: 'gateway',
    upstream: 'anthropic',
    api: 'messages',
    mcp: 'list-and-call',
  },
  {
    client: 'mcp-inspector',
    id: 'mcp-list',
    label: '/mcp: --cli --method tools/list (--transport http)',
    via: 'gateway',
    upstream: 'anthropic',
    api: 'messages',
    mcp: 'list',
  },
  {
    client: 'mcp-inspector',
    id: 'mcp-call',
    label: '/mcp: --cli --method tools/call --tool-name everything__echo (--transport http)',
    via: 'gateway',
    upstream: 'anthropic',
    api: 'messages',
    mcp: 'call',
  },
];
