/**
 * Stored Responses API conversations as chained turns, and their bounds (issue 29): a chain stores each turn once
 * (linear in its length, not quadratic), a short continuation stores only itself, a continuation that would send
 * more than the caller's body limit upstream is refused before any upstream call, a conversation has a size and a
 * turn bound, and each caller a bound on what it keeps (its oldest turns evicted, another caller's untouched).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN_TOKEN, authHeaders, useGateway, type GatewayFixture } from '../../helpers/gateway.js';
import { call, type Answer } from '../../helpers/http.js';
import { MOCK_CONTENT } from '../../helpers/upstreams/openai.js';
import { newApiKey } from '../../../src/auth/api-key.js';
import { SqliteKeyStore } from '../../../src/store/sqlite/sqlite-keys.js';

const KIB = 1024;

function responses(
  fixture: GatewayFixture<'openai'>,
  body: Record<string, unknown>,
  token = ADMIN_TOKEN,
): Promise<Answer> {
  return call(fixture.url('/v1/responses'), {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'gpt-4o-mini', ...body }),
  });
}

async function created(
  fixture: GatewayFixture<'openai'>,
  body: Record<string, unknown>,
  token = ADMIN_TOKEN,
): Promise<string> {
  const answer = await responses(fixture, body, token);
  assert.equal(answer.status, 200, answer.text.slice(0, 500));
  return answer.json.id as string;
}

/** Bytes of the SQLite file's pages in use (free pages aside): what the store holds, whatever its tables. */
function usedBytes(fixture: GatewayFixture<'openai'>): number {
  const db = fixture.gw.store.db;
  const pages =
    Number(db.pragma('page_count', { simple: true })) - Number(db.pragma('freelist_count', { simple: true }));
  return pages * Number(db.pragma('page_size', { simple: true }));
}

/** A text of `bytes` ASCII characters, different for each `seed` (no two turns alike). */
const text = (bytes: number, seed: string) => `${seed}:`.padEnd(bytes, 'abcdefghij');

describe('stored conversations are chains of turns, each stored once', () => {
  const fixture = useGateway();

  test('a chain of N turns of S bytes stores about N*S bytes, and a short continuation stores only itself', async () => {
    const N = 16;
    const S = 32 * KIB;
    const before = usedBytes(fixture);
    let previous: string | undefined;
    for (let i = 0; i < N; i++)
      previous = await created(fixture, {
        input: text(S, `turn ${i}`),
        ...(previous ? { previous_response_id: previous } : {}),
      });
    const chain = usedBytes(fixture) - before;
    // Each turn keeps its input twice (its input items, its chat messages): ~2*N*S. The whole-conversation rows of
    // before kept ~(N*N/2 + N)*S (about 4.9 MB here).
    assert.ok(chain < 4 * N * S, `the chain of ${N} turns of ${S} bytes took ${chain} bytes (bound ${4 * N * S})`);

    const beforeShort = usedBytes(fixture);
    for (let i = 0; i < 5; i++) await created(fixture, { input: `short ${i}?`, previous_response_id: previous });
    const short = usedBytes(fixture) - beforeShort;
    assert.ok(short < 5 * 16 * KIB, `5 short continuations of a ${N * S}-byte conversation took ${short} bytes`);
    // The conversation still goes upstream whole: earlier turns, their answers, the new input.
    const sent = (fixture.mock.chatRequests().at(-1)?.json as { messages: Array<{ role: string; content: string }> })
      .messages;
    assert.equal(sent.length, 2 * N + 1);
    assert.ok(sent[0]?.content.startsWith('turn 0:'));
    assert.deepEqual(sent.at(-1), { role: 'user', content: 'short 4?' });
  });

  test('input_items lists the whole conversation: earlier inputs and outputs, then its own input', async () => {
    const first = await created(fixture, { input: 'one' });
    const second = await created(fixture, { input: [{ role: 'user', content: 'two' }], previous_response_id: first });
    const listed = await call(fixture.url(`/v1/responses/${second}/input_items?order=asc&limit=100`), {
      headers: authHeaders(),
    });
    assert.equal(listed.status, 200);
    const data = listed.json.data as Array<{
      type: string;
      id: string;
      role: string;
      content: Array<{ type: string; text: string }>;
    }>;
    assert.deepEqual(
      data.map((item) => [item.type, item.role, item.content[0]?.type, item.content[0]?.text]),
      [
        ['message', 'user', 'input_text', 'one'],
        ['message', 'assistant', 'output_text', MOCK_CONTENT],
        ['message', 'user', 'input_text', 'two'],
      ],
    );
    // Paged newest first, by item id.
    const page = await call(fixture.url(`/v1/responses/${second}/input_items?limit=2`), { headers: authHeaders() });
    assert.deepEqual(
      (page.json.data as Array<{ id: string }>).map((item) => item.id),
      [data[2]?.id, data[1]?.id],
    );
    assert.equal(page.json.has_more, true);
  });

  test('deleting a middle turn: the later one is still retrieved, but continuing or listing it is a 404 naming the deleted turn', async () => {
    const a = await created(fixture, { input: 'a' });
    const b = await created(fixture, { input: 'b', previous_response_id: a });
    const c = await created(fixture, { input: 'c', previous_response_id: b });
    assert.equal(
      (await call(fixture.url(`/v1/responses/${b}`), { method: 'DELETE', headers: authHeaders() })).status,
      200,
    );
    assert.equal((await call(fixture.url(`/v1/responses/${c}`), { headers: authHeaders() })).status, 200);
    const upstreamCalls = fixture.mock.chatRequests().length;
    const continued = await responses(fixture, { input: 'd', previous_response_id: c });
    assert.equal(continued.status, 404);
    assert.equal(continued.json.code, 'response_not_found');
    assert.deepEqual(
      { id: continued.json.details?.id, missing: continued.json.details?.missing_id },
      { id: c, missing: b },
    );
    assert.equal(fixture.mock.chatRequests().length, upstreamCalls, 'nothing went upstream');
    const listed = await call(fixture.url(`/v1/responses/${c}/input_items`), { headers: authHeaders() });
    assert.equal(listed.status, 404);
    assert.equal(listed.json.details?.missing_id, b);
    // The turn before the deleted one goes on as before.
    await created(fixture, { input: 'e', previous_response_id: a });
  });
});

describe("a continuation counts its conversation against the caller's body limit", () => {
  const fixture = useGateway({ env: { BODY_LIMIT_BYTES: String(64 * KIB) } });

  test('a continuation whose conversation and body exceed the body limit is a 413 with details; nothing goes upstream', async () => {
    const first = await created(fixture, { input: text(40 * KIB, 'big') });
    assert.equal(fixture.mock.chatRequests().length, 1);
    const refused = await responses(fixture, { input: text(30 * KIB, 'more'), previous_response_id: first });
    assert.equal(refused.status, 413, refused.text.slice(0, 300));
    assert.equal(refused.json.code, 'payload_too_large');
    const details = refused.json.details as Record<string, number | string>;
    assert.equal(details.previous_response_id, first);
    assert.equal(details.limit_bytes, 64 * KIB);
    assert.ok(
      Number(details.conversation_bytes) > 40 * KIB && Number(details.body_bytes) > 30 * KIB,
      JSON.stringify(details),
    );
    assert.equal(fixture.mock.chatRequests().length, 1, 'the upstream received no body past the limit');
    // A short continuation fits: the upstream gets the conversation, within the limit.
    await created(fixture, { input: 'and now?', previous_response_id: first });
    const sent = fixture.mock.chatRequests().at(-1);
    assert.ok(sent && Buffer.byteLength(sent.body) < 64 * KIB, `sent ${sent?.body.length} bytes`);
  });
});

describe('the bounds of a conversation: its size and its turns', () => {
  const fixture = useGateway({
    env: { BODY_LIMIT_BYTES: String(64 * KIB) },
    configFile: {
      name: 'bounds.yaml',
      text: 'responses:\n  max_conversation_bytes: 49152\n  max_conversation_turns: 4\n',
    },
  });

  test('a conversation past responses.max_conversation_bytes is a 400 conversation_too_large naming the limit, its size and the id', async () => {
    let previous = await created(fixture, { input: text(30 * KIB, 'one') });
    previous = await created(fixture, { input: text(10 * KIB, 'two'), previous_response_id: previous });
    previous = await created(fixture, { input: text(10 * KIB, 'three'), previous_response_id: previous });
    const upstreamCalls = fixture.mock.chatRequests().length;
    const refused = await responses(fixture, { input: 'four?', previous_response_id: previous });
    assert.equal(refused.status, 400, refused.text.slice(0, 300));
    assert.equal(refused.json.code, 'conversation_too_large');
    const details = refused.json.details as Record<string, number | string>;
    assert.equal(details.previous_response_id, previous);
    assert.equal(details.limit, 'responses.max_conversation_bytes');
    assert.equal(details.max_conversation_bytes, 49152);
    assert.ok(Number(details.conversation_bytes) > 49152);
    assert.equal(fixture.mock.chatRequests().length, upstreamCalls);
  });

  test('a conversation of responses.max_conversation_turns turns is a 400 conversation_too_large naming the turns', async () => {
    let previous = await created(fixture, { input: 't1' });
    for (let i = 2; i <= 4; i++) previous = await created(fixture, { input: `t${i}`, previous_response_id: previous });
    const refused = await responses(fixture, { input: 't5', previous_response_id: previous });
    assert.equal(refused.status, 400);
    assert.equal(refused.json.code, 'conversation_too_large');
    assert.deepEqual(refused.json.details, {
      previous_response_id: previous,
      limit: 'responses.max_conversation_turns',
      turns: 4,
      max_turns: 4,
    });
  });
});

describe('what one caller keeps stored is bounded (responses.max_caller_bytes): its oldest turns are evicted', () => {
  const fixture = useGateway({
    configFile: { name: 'caller.yaml', text: 'responses:\n  max_caller_bytes: 65536\n' },
  });

  test('a caller over its bound loses its least recently continued responses; another caller keeps its own', async () => {
    const issued = newApiKey('dev');
    await new SqliteKeyStore(fixture.gw.store.db).create({
      keyId: issued.keyId,
      environment: 'dev',
      hash: issued.hash,
      name: 'other',
      routes: ['responses'],
      models: ['*'],
      createdMs: Date.now(),
    });
    const theirs = await created(fixture, { input: text(12 * KIB, 'theirs') }, issued.key);
    const mine: string[] = [];
    for (let i = 0; i < 8; i++) mine.push(await created(fixture, { input: text(12 * KIB, `mine ${i}`) }));
    const status = async (id: string, token = ADMIN_TOKEN) =>
      (await call(fixture.url(`/v1/responses/${id}`), { headers: { authorization: `Bearer ${token}` } })).status;
    // Each turn is ~25 KiB (its input twice, the response, the per-turn overhead): 64 KiB holds the latest two.
    assert.deepEqual(await Promise.all(mine.map((id) => status(id))), [404, 404, 404, 404, 404, 404, 200, 200]);
    assert.equal(await status(theirs, issued.key), 200, "another caller's responses do not pay for this one's");
    assert.ok(
      fixture.gw.logLines.some((line) => line.includes('over responses.max_caller_bytes')),
      'evictions are logged',
    );
  });
});
