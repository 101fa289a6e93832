// How each CLI is run on its default settings: only its base URL, its key and the switches that keep it offline
// (no update check, no telemetry, no plugin sync) are set, each run with its own empty HOME. The model is the
// client's own default. What each one needs is in the research notes (issue 30, sections 1.1, 2.1, 4 and 6).
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ClientId } from './pins.js';
import { TASK_PROMPT } from './task.js';

export interface ClientRun {
  /** The CLI's own arguments (after the install's command). */
  args: string[];
  env: Record<string, string>;
  /** Commands of the same CLI run first, in the same directory and environment (`claude mcp add ...`). */
  setup?: string[][];
}

export interface ClientOutput {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** What the user sets: where the gateway (or the mock) is, and the key. */
export interface Endpoint {
  /** `http://127.0.0.1:PORT`, without a path. */
  origin: string;
  key: string;
}

function baseEnv(home: string): Record<string, string> {
  return { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, LANG: 'C.UTF-8', TERM: 'dumb' };
}

/**
 * Claude Code: `claude -p` with an API key needs no login. CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 stops its
 * side calls (no update check, no telemetry, no model list or quota call); they do not change the task's request.
 */
function claudeCode(home: string, endpoint: Endpoint, prompt: string): ClientRun {
  return {
    args: ['-p', prompt, '--output-format', 'json'],
    env: {
      ...baseEnv(home),
      ANTHROPIC_BASE_URL: endpoint.origin,
      ANTHROPIC_API_KEY: endpoint.key,
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      DISABLE_AUTOUPDATER: '1',
    },
  };
}

/**
 * Codex: a custom model provider in `$CODEX_HOME/config.toml` (Codex appends /responses to base_url; the key comes
 * from env_key as a Bearer token). No model is set: Codex asks for its own default. Analytics, feedback and the
 * plugin sync are off so that it makes no lookup beyond loopback.
 */
function codex(home: string, endpoint: Endpoint, prompt: string): ClientRun {
  const codexHome = join(home, '.codex');
  mkdirSync(codexHome, { recursive: true });
  const config = [
    'model_provider = "gateway"',
    'check_for_update_on_startup = false',
    '',
    '[analytics]',
    'enabled = false',
    '',
    '[feedback]',
    'enabled = false',
    '',
    '[features]',
    'plugins = false',
    '',
    '[model_providers.gateway]',
    'name = "Gateway"',
    `base_url = "${endpoint.origin}/v1"`,
    'env_key = "GATEWAY_API_KEY"',
    'wire_api = "responses"',
    '',
  ].join('\n');
  writeFileSync(join(codexHome, 'config.toml'), config);
  return {
    args: ['exec', '--skip-git-repo-check', prompt],
    env: { ...baseEnv(home), CODEX_HOME: codexHome, GATEWAY_API_KEY: endpoint.key },
  };
}

/**
 * Gemini CLI: GOOGLE_GEMINI_BASE_URL alone selects the "gateway" auth type, which non-interactive mode refuses;
 * the settings file selects the API-key auth instead and turns statistics, telemetry and updates off.
 */
function geminiCli(home: string, endpoint: Endpoint, prompt: string): ClientRun {
  const settingsDir = join(home, '.gemini');
  mkdirSync(settingsDir, { recursive: true });
  const settings = {
    security: { auth: { selectedType: 'gemini-api-key' } },
    privacy: { usageStatisticsEnabled: false },
    telemetry: { enabled: false },
    general: { enableAutoUpdate: false, enableAutoUpdateNotification: false },
  };
  writeFileSync(join(settingsDir, 'settings.json'), JSON.stringify(settings, null, 2));
  return {
    args: ['-p', prompt],
    env: {
      ...baseEnv(home),
      GEMINI_API_KEY: endpoint.key,
      GOOGLE_GEMINI_BASE_URL: endpoint.origin,
      GEMINI_CLI_TRUST_WORKSPACE: 'true',
    },
  };
}

/** An agent CLI set up for the task (`prompt`: the MCP task's instead of the file task's). */
export function prepareClient(client: ClientId, home: string, endpoint: Endpoint, prompt = TASK_PROMPT): ClientRun {
  mkdirSync(home, { recursive: true });
  if (client === 'claude-code') return claudeCode(home, endpoint, prompt);
  if (client === 'codex') return codex(home, endpoint, prompt);
  if (client === 'gemini-cli') return geminiCli(home, endpoint, prompt);
  throw new Error(`${client} is not an agent CLI: it runs only on MCP paths (mcp-clients.ts)`);
}

/** Claude Code's `--output-format json` result: `{type: "result", is_error, result, ...}`. */
function claudeResult(stdout: string): { text: string; error: boolean } | undefined {
  const line = stdout
    .trim()
    .split('\n')
    .reverse()
    .find((candidate) => candidate.startsWith('{'));
  if (line === undefined) return undefined;
  try {
    const parsed = JSON.parse(line) as { result?: unknown; is_error?: unknown };
    return { text: typeof parsed.result === 'string' ? parsed.result : '', error: parsed.is_error === true };
  } catch {
    return undefined;
  }
}

/** The client's final answer: what the user would read. */
export function finalText(client: ClientId, output: ClientOutput): string {
  if (client === 'claude-code') return claudeResult(output.stdout)?.text ?? output.stdout;
  return output.stdout;
}

/**
 * A gateway error quoted in a client's message, shortened to what matters: `code: field problem; field problem`.
 * The clients print the body they got (`API Error: 400 {...}`, `ERROR: {...}`); anything else is kept as it is.
 */
export function shortenError(line: string): string {
  const start = line.indexOf('{');
  if (start === -1) return line;
  try {
    const body = JSON.parse(line.slice(start)) as {
      code?: unknown;
      message?: unknown;
      details?: { errors?: Array<{ field?: unknown; problem?: unknown }> };
      error?: { message?: unknown };
    };
    const errors = body.details?.errors ?? [];
    const what =
      errors.length > 0
        ? errors.map((error) => `${String(error.field)} ${String(error.problem)}`).join('; ')
        : String(body.message ?? body.error?.message ?? '');
    return `${line.slice(0, start).trim()} ${typeof body.code === 'string' ? `${body.code}: ` : ''}${what}`.trim();
  } catch {
    return line;
  }
}

/** One line saying what the client reported when it failed (its error message, not its whole log). */
export function clientError(client: ClientId, output: ClientOutput): string {
  if (client === 'claude-code') {
    const result = claudeResult(output.stdout);
    if (result?.error === true) return shortenError(result.text);
  }
  const lines = `${output.stderr}\n${output.stdout}`
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '');
  const marked = lines.filter((line) => /error|unexpected status|failed/i.test(line));
  return shortenError(marked.at(-1) ?? lines.at(-1) ?? '');
}
