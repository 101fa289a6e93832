/**
 * What the README ("Pointing a client at the gateway") and docs/gemini.md tell a user to set is what the conformance
 * run sets to make the agent CLIs pass (scripts/conformance/clients.ts): Gemini CLI's settings file, without which
 * `gemini -p` exits 41 ("Invalid auth method selected."), and each CLI's variable and URL form.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { prepareClient } from '../../scripts/conformance/clients.js';
import { PROJECT_ROOT } from '../helpers/paths.js';

const ROOT = PROJECT_ROOT;
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');
const GEMINI_DOC = readFileSync(join(ROOT, 'docs/gemini.md'), 'utf8');
const ORIGIN = 'http://127.0.0.1:8080';

/** The JSON code blocks of a Markdown text that mention `word`, parsed. */
function jsonBlocks(markdown: string, word: string): unknown[] {
  return [...markdown.matchAll(/```json\n([\s\S]*?)\n```/g)]
    .map((match) => match[1] ?? '')
    .filter((block) => block.includes(word))
    .map((block) => JSON.parse(block) as unknown);
}

/** The README's row of the client table for `client`. */
function row(client: string): string {
  const line = README.split('\n').find((l) => l.startsWith(`| ${client} |`));
  assert.ok(line, `the README's client table has a row for ${client}`);
  return line;
}

describe('how to point each client at the gateway, as the conformance run does it', () => {
  const home = mkdtempSync(join(tmpdir(), 'client-setup-'));
  after(() => rmSync(home, { recursive: true, force: true }));

  test("Gemini CLI's settings file: the README and docs/gemini.md give the one the conformance run writes", () => {
    const run = prepareClient('gemini-cli', join(home, 'gemini'), { origin: ORIGIN, key: 'k' });
    const written = JSON.parse(readFileSync(join(home, 'gemini', '.gemini', 'settings.json'), 'utf8')) as unknown;
    assert.deepEqual(jsonBlocks(README, 'selectedType'), [written], 'the README');
    assert.deepEqual(jsonBlocks(GEMINI_DOC, 'selectedType'), [written], 'docs/gemini.md');
    assert.equal(run.env.GOOGLE_GEMINI_BASE_URL, ORIGIN);
    const gemini = row('Gemini CLI');
    for (const part of ['`GOOGLE_GEMINI_BASE_URL`', '`GEMINI_API_KEY`', 'settings.json', '(origin)'])
      assert.ok(gemini.includes(part), `${part} in ${gemini}`);
    assert.ok(README.includes('Invalid auth method selected.') && GEMINI_DOC.includes('exit code 41'));
  });

  test('Claude Code and Codex: the variable and the URL form the conformance run uses', () => {
    const claude = prepareClient('claude-code', join(home, 'claude'), { origin: ORIGIN, key: 'k' });
    assert.equal(claude.env.ANTHROPIC_BASE_URL, ORIGIN);
    for (const part of ['`ANTHROPIC_BASE_URL`', '(origin)']) assert.ok(row('Claude Code').includes(part), part);

    prepareClient('codex', join(home, 'codex'), { origin: ORIGIN, key: 'k' });
    const config = readFileSync(join(home, 'codex', '.codex', 'config.toml'), 'utf8');
    assert.ok(config.includes(`base_url = "${ORIGIN}/v1"`) && config.includes('wire_api = "responses"'), config);
    for (const part of ['`base_url`', '`wire_api = "responses"`', '`<gateway>/v1`'])
      assert.ok(row('Codex CLI').includes(part), part);
  });

  test('the table has a row for every client the issue names, each with its form', () => {
    for (const client of [
      '`openai` (the OpenAI SDK)',
      '`@anthropic-ai/sdk`',
      '`@google/genai`',
      'AI SDK, `@ai-sdk/openai`',
      'AI SDK, `@ai-sdk/anthropic`',
      'AI SDK, `@ai-sdk/google`',
      'LangChain, `@langchain/openai`',
      'LangChain, `@langchain/anthropic`',
      'LlamaIndex, `@llamaindex/openai`',
      '`@openai/agents`',
    ]) {
      assert.match(row(client), /`<gateway>(\/v1|\/v1beta)?`/, client);
    }
  });
});
