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
}

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
];
