/**
 * Counting tokens costs time in proportion to the text and never holds the gateway's event loop (issue 29): the
 * gateway as a real process, large prompts of one letter (gpt-tokenizer's BPE was quadratic in such a run: 7 s for
 * 100,000 letters, 483 s for a million, with every other caller waiting) on `POST /v1/messages/count_tokens` and on
 * the chat route's context-window check, while health is asked again and again on new connections.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as o200k from 'gpt-tokenizer/encoding/o200k_base';
import { startOpenAiUpstream, type OpenAiUpstream } from '../../helpers/upstreams/openai.js';
import {
  CHAT_PATH,
  HEALTH_PATH,
  httpCall,
  killAllGateways,
  makeTempDir,
  removeTempDirs,
  startGatewayProcess,
  type GatewayProcess,
  type HttpAnswer,
} from '../../helpers/spawn-gateway.js';

const TOKEN = 'count-bounds-admin-token-0123456789abcdef';
/** The slowest a health answer may be while a count runs (old code: the whole count, seconds to minutes). */
const HEALTH_BOUND_MS = 250;
/** Generous for a loaded 2-core machine: these counts take well under a second now. */
const COUNT_BOUND_MS = 15_000;

let mock: OpenAiUpstream;
let gw: GatewayProcess;

before(async () => {
  mock = await startOpenAiUpstream();
  const dataDir = makeTempDir();
  const configPath = join(dataDir, 'models.yaml');
  writeFileSync(
    configPath,
    'models:\n  - { id: small, upstream: default, upstream_model: gpt-4o, context_window: 1000 }\n',
  );
  gw = await startGatewayProcess({
    dataDir,
    env: {
      GATEWAY_ENV: 'dev',
      ADMIN_TOKEN: TOKEN,
      UPSTREAM_BASE_URL: mock.baseUrl,
      GATEWAY_CONFIG: configPath,
      BODY_LIMIT_BYTES: String(4 * 1024 * 1024),
      LOG_LEVEL: 'warn',
    },
  });
});

after(async () => {
  await killAllGateways();
  await mock.close();
  removeTempDirs();
});

const headers = {
  authorization: `Bearer ${TOKEN}`,
  'content-type': 'application/json',
  'anthropic-version': '2023-06-01',
};
const post = (path: string, body: unknown, extra: Record<string, string> = {}) =>
  httpCall(`${gw.url}${path}`, {
    method: 'POST',
    headers: { ...headers, ...extra },
    body: JSON.stringify(body),
    timeoutMs: COUNT_BOUND_MS,
  });
const countTokens = (content: string) =>
  post('/v1/messages/count_tokens', { model: 'gpt-4o-mini', messages: [{ role: 'user', content }] });

/** Asks for health on a new connection, one call after another, for as long as `work` runs; the slowest answer. */
async function slowestHealthWhile(
  work: Promise<HttpAnswer>,
  diagnostic?: (message: string) => void,
): Promise<{ answer: HttpAnswer; ms: number; wallMs: number; probes: number }> {
  const started = performance.now();
  let done = false;
  let slowest = 0;
  let probes = 0;
  const settled = work.finally(() => (done = true));
  const probing = (async () => {
    while (!done) {
      const asked = performance.now();
      const health = await httpCall(`${gw.url}${HEALTH_PATH}`, { timeoutMs: COUNT_BOUND_MS });
      assert.equal(health.status, 200);
      slowest = Math.max(slowest, performance.now() - asked);
      probes++;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  })();
  const answer = await settled;
  const wallMs = performance.now() - started;
  await probing;
  diagnostic?.(
    `answered in ${Math.round(wallMs)} ms; the slowest of ${probes} health answers meanwhile: ${Math.round(slowest)} ms`,
  );
  return { answer, ms: Math.round(slowest), wallMs: Math.round(wallMs), probes };
}

/** o200k's exact tokens for `n` times `letter`, from a run short enough to count whole: the run is periodic. */
function expectedRunTokens(letter: string, n: number): number {
  const sample = 4096;
  return Math.round((o200k.countTokens(letter.repeat(sample)) * n) / sample);
}

describe('token counting is bounded and off the event loop', () => {
  test('count_tokens of a million times one letter (1 MB): answered in seconds, health promptly all along', async (t) => {
    const { answer, ms, wallMs, probes } = await slowestHealthWhile(countTokens('k'.repeat(1_000_000)), (m) =>
      t.diagnostic(m),
    );
    assert.equal(answer.status, 200, answer.text);
    const tokens = (JSON.parse(answer.text) as { input_tokens: number }).input_tokens;
    const expected = expectedRunTokens('k', 1_000_000) + 6; // 3 to prime the reply, 3 for the message
    assert.ok(Math.abs(tokens - expected) <= expected * 0.005, `${tokens} tokens, about ${expected} expected`);
    assert.ok(ms < HEALTH_BOUND_MS, `the slowest of ${probes} health answers took ${ms} ms (the count ${wallMs} ms)`);
  });

  test('another letter (no cache can help), 300,000 of it: the same', async (t) => {
    const { answer, ms, probes } = await slowestHealthWhile(countTokens('q'.repeat(300_000)), (m) => t.diagnostic(m));
    assert.equal(answer.status, 200, answer.text);
    const tokens = (JSON.parse(answer.text) as { input_tokens: number }).input_tokens;
    const expected = expectedRunTokens('q', 300_000) + 6;
    assert.ok(Math.abs(tokens - expected) <= expected * 0.005, `${tokens} tokens, about ${expected} expected`);
    assert.ok(ms < HEALTH_BOUND_MS, `the slowest of ${probes} health answers took ${ms} ms`);
  });

  test("chat over a model's context window (300,000 of one letter): the 400 comes at once, health promptly, nothing sent upstream", async (t) => {
    const content = 'v'.repeat(300_000);
    const { answer, ms, probes } = await slowestHealthWhile(
      post(CHAT_PATH, { model: 'small', messages: [{ role: 'user', content }] }),
      (m) => t.diagnostic(m),
    );
    assert.equal(answer.status, 400, answer.text);
    const body = JSON.parse(answer.text) as {
      code: string;
      details: { prompt_tokens: number; context_window: number };
    };
    assert.equal(body.code, 'context_length_exceeded');
    assert.equal(body.details.context_window, 1000);
    const counted = JSON.parse((await countTokens(content)).text) as { input_tokens: number };
    assert.equal(
      body.details.prompt_tokens,
      counted.input_tokens,
      'the same count as count_tokens (the same BPE and framing)',
    );
    assert.ok(ms < HEALTH_BOUND_MS, `the slowest of ${probes} health answers took ${ms} ms`);
    assert.equal(mock.chatRequests().length, 0);
  });

  test('X-Context-Overflow: truncate over 3,000 turns counts each message once (it recounted the rest after each dropped turn)', async (t) => {
    mock.reset();
    const turns = Array.from({ length: 3000 }, (_, i) => [
      { role: 'user', content: `question ${i}: what is ${i} times ${i}?` },
      { role: 'assistant', content: `${i * i}, as it happens` },
    ]).flat();
    const messages = [
      { role: 'system', content: 'Be brief.' },
      ...turns,
      { role: 'user', content: 'and the last question?' },
    ];
    const { answer, ms, wallMs, probes } = await slowestHealthWhile(
      post(CHAT_PATH, { model: 'small', messages }, { 'x-context-overflow': 'truncate' }),
      (m) => t.diagnostic(m),
    );
    assert.equal(answer.status, 200, answer.text);
    assert.ok(wallMs < 5_000, `${wallMs} ms`);
    assert.ok(ms < HEALTH_BOUND_MS, `the slowest of ${probes} health answers took ${ms} ms`);
    const sent = mock.chatRequests()[0]?.json as { messages: Array<{ role: string; content: string }> };
    assert.equal(sent.messages[0]?.content, 'Be brief.');
    assert.equal(sent.messages.at(-1)?.content, 'and the last question?');
    assert.ok(sent.messages.length > 3 && sent.messages.length < 200, `${sent.messages.length} messages sent`);
    assert.equal(sent.messages[1]?.role, 'user', 'whole turns are dropped');
  });

  test('text that reads like a special token is counted as text (it was a 500)', async () => {
    const counted = await countTokens('say <|endoftext|> and <|im_start|> please');
    assert.equal(counted.status, 200, counted.text);
    assert.ok((JSON.parse(counted.text) as { input_tokens: number }).input_tokens > 10);
    const chat = await post(CHAT_PATH, {
      model: 'small',
      max_tokens: 999,
      messages: [{ role: 'user', content: 'a <|endoftext|> b' }],
    });
    assert.equal(chat.status, 400, chat.text);
    assert.equal((JSON.parse(chat.text) as { code: string }).code, 'context_length_exceeded');
  });
});
