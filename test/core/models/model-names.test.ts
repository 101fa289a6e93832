/**
 * What the models APIs say of a configured model (docs/messages.md, "Anthropic's models API"): its name and release
 * from the config's `display_name` / `created_at`, else from the price catalog (a dated snapshot's own day), else
 * the id and Anthropic's documented "unknown" (the epoch) — through the real gateway and @anthropic-ai/sdk, and the
 * same name in Gemini's `displayName` and the same date in OpenAI's `created`. Upstreams of each kind are declared
 * (the catalog's family is the kind's); listing models calls none of them.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { ADMIN_TOKEN, startGateway, type TestGateway } from '../../helpers/gateway.js';
import { call } from '../../helpers/http.js';

const CONFIG = [
  'upstreams:',
  '  - { name: claude, kind: anthropic, base_url: "http://127.0.0.1:9/v1", api_key_env: NAMES_KEY, health_check: none }',
  '  - { name: oai, kind: openai, base_url: "http://127.0.0.1:9/v1", api_key_env: NAMES_KEY, health_check: none }',
  '  - { name: local, kind: ollama, base_url: "http://127.0.0.1:9/v1", health_check: none }',
  'models:',
  // A dated snapshot matched by the catalog's undated entry: the entry's name, the snapshot's own day.
  '  - { id: sonnet, upstream: claude, upstream_model: claude-sonnet-4-5-20250929 }',
  // The catalog's own entry: its name and release day, even with the config's own prices and window.
  '  - { id: opus, upstream: claude, upstream_model: claude-opus-4-1, context_window: 100000, pricing: { input_per_million: 1 } }',
  '  - { id: gpt, upstream: oai, upstream_model: gpt-4o-2024-08-06 }',
  // The config's own name and date win over the catalog's.
  '  - { id: house, upstream: claude, upstream_model: claude-haiku-4-5, display_name: House Haiku, created_at: "2025-12-01T08:00:00Z" }',
  // Nothing known: a local model the catalog does not price, with no date in its name.
  '  - { id: llama, upstream: local, upstream_model: "llama3.1:8b" }',
].join('\n');

const EXPECTED = {
  gpt: { display_name: 'GPT-4o', created_at: '2024-08-06T00:00:00Z' },
  house: { display_name: 'House Haiku', created_at: '2025-12-01T08:00:00Z' },
  llama: { display_name: 'llama', created_at: '1970-01-01T00:00:00Z' },
  opus: { display_name: 'Claude Opus 4.1', created_at: '2025-08-05T00:00:00Z' },
  sonnet: { display_name: 'Claude Sonnet 4.5', created_at: '2025-09-29T00:00:00Z' },
};

describe('the models APIs name and date configured models from the config, else the price catalog', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway({
      env: { GATEWAY_ENV: 'prod', NAMES_KEY: 'sk-names-0123456789' },
      configFile: { name: 'names.yaml', text: CONFIG },
    });
  });
  after(() => gw?.close());

  test("Anthropic's models API, through @anthropic-ai/sdk: display_name and created_at", async () => {
    const sdk = new Anthropic({ baseURL: gw.url, apiKey: ADMIN_TOKEN, maxRetries: 0 });
    const listed: Record<string, { display_name: string; created_at: string }> = {};
    for await (const model of sdk.models.list()) {
      listed[model.id] = { display_name: model.display_name, created_at: model.created_at };
    }
    assert.deepEqual(listed, EXPECTED);
    const one = await sdk.models.retrieve('sonnet');
    assert.deepEqual([one.display_name, one.created_at], [EXPECTED.sonnet.display_name, EXPECTED.sonnet.created_at]);
  });

  test("Gemini's displayName and OpenAI's created say the same", async () => {
    const gemini = await call(`${gw.url}/v1beta/models`, { headers: { 'x-goog-api-key': ADMIN_TOKEN } });
    assert.equal(gemini.status, 200, gemini.text);
    const names = Object.fromEntries(
      (gemini.json.models as Array<{ name: string; displayName: string }>).map((m) => [m.name, m.displayName]),
    );
    assert.deepEqual(
      names,
      Object.fromEntries(Object.entries(EXPECTED).map(([id, m]) => [`models/${id}`, m.display_name])),
    );

    const openai = await call(`${gw.url}/v1/models`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    const created = Object.fromEntries(
      (openai.json.data as Array<{ id: string; created: number }>).map((m) => [m.id, m.created]),
    );
    assert.deepEqual(
      created,
      Object.fromEntries(Object.entries(EXPECTED).map(([id, m]) => [id, Date.parse(m.created_at) / 1000])),
    );
  });
});
