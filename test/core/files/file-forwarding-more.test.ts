/**
 * Files in requests (docs/files.md, "Files in requests: forwarded to the upstream"), beyond chat: the Responses
 * API forwarded natively (its `input_file`), a caller's own X-Upstream-Key (another account upstream: its own
 * upload, with that key), Gemini's inline data, and the bounds (how many files, how many bytes inline).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import OpenAI, { toFile } from 'openai';
import { ADMIN_TOKEN, authHeaders, startGateway, type TestGateway } from '../../helpers/gateway.js';
import { call } from '../../helpers/http.js';
import { startOpenAiUpstream, type OpenAiUpstream } from '../../helpers/upstreams/openai.js';
import { startAnthropicUpstream, type AnthropicUpstream } from '../../helpers/upstreams/anthropic.js';

const OPENAI_KEY = 'sk-upstream-openai-key-1234';
const ANTHROPIC_KEY = 'sk-ant-upstream-key-5678';

describe('gateway files in requests: Responses, caller keys, bounds', () => {
  let openaiMock: OpenAiUpstream;
  let anthropicMock: AnthropicUpstream;
  let gw: TestGateway;
  let admin: OpenAI;

  before(async () => {
    openaiMock = await startOpenAiUpstream();
    anthropicMock = await startAnthropicUpstream({ requiredKey: ANTHROPIC_KEY });
    gw = await startGateway({
      env: { OAI_KEY: OPENAI_KEY, ANT_KEY: ANTHROPIC_KEY },
      configFile: {
        name: 'forwarding.yaml',
        text: [
          'upstreams:',
          `  - { name: oai, kind: openai, base_url: "${openaiMock.baseUrl}", api_key_env: OAI_KEY, health_check: none }`,
          `  - { name: claude, kind: anthropic, base_url: "${anthropicMock.baseUrl}", api_key_env: ANT_KEY }`,
          'models:',
          '  - { id: mini, upstream: oai, upstream_model: gpt-4o-mini }',
          '  - { id: mini-chat, upstream: oai, upstream_model: gpt-4o-mini, responses: chat }',
          '  - { id: sonnet, upstream: claude, upstream_model: claude-sonnet-4-5 }',
          'files:',
          '  forward_max_files: 3',
          '  forward_inline_max_bytes: 4096',
        ].join('\n'),
      },
    });
    admin = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: ADMIN_TOKEN, maxRetries: 0 });
  });
  after(async () => {
    await gw.close();
    await openaiMock.close();
    await anthropicMock.close();
  });

  const upload = async (bytes: Buffer, name: string) =>
    admin.files.create({ file: await toFile(bytes, name), purpose: 'user_data' });

  test('a Responses API request to an OpenAI upstream gets its input_file uploaded once and the id rewritten', async () => {
    const bytes = Buffer.from('%PDF-1.7\n' + 'x'.repeat(500));
    const file = await upload(bytes, 'doc.pdf');
    openaiMock.reset();
    const input: OpenAI.Responses.ResponseInput = [
      {
        role: 'user',
        content: [
          { type: 'input_text', text: 'Read it.' },
          { type: 'input_file', file_id: file.id },
        ],
      },
    ];
    assert.equal((await admin.responses.create({ model: 'mini-chat', input })).status, 'completed');
    assert.equal((await admin.responses.create({ model: 'mini-chat', input })).status, 'completed');
    assert.equal(openaiMock.uploadedFiles.length, 1);
    assert.ok(openaiMock.uploadedFiles[0]!.bytes.equals(bytes));
    // Served through OpenAI's chat API (`responses: chat`, and nothing only the Responses API can do): a chat file part.
    for (const request of openaiMock.chatRequests()) {
      const sent = request.json as { messages: Array<{ content: unknown[] }> };
      assert.deepEqual(sent.messages[0]?.content[1], {
        type: 'file',
        file: { file_id: openaiMock.uploadedFiles[0]!.id },
      });
    }
    assert.equal(openaiMock.chatRequests().length, 2);
  });

  test('a Responses API request forwarded natively (a built-in tool) gets its input_file id rewritten', async () => {
    const file = await upload(Buffer.from('%PDF-1.7\nnative'), 'native.pdf');
    openaiMock.reset();
    const response = await admin.responses.create({
      model: 'mini',
      tools: [{ type: 'web_search' }],
      input: [{ role: 'user', content: [{ type: 'input_file', file_id: file.id }] }],
    });
    assert.equal(response.object, 'response');
    const sent = openaiMock.requests.find((r) => r.path === '/v1/responses')?.json as {
      input: Array<{ content: unknown[] }>;
    };
    assert.deepEqual(sent.input[0]?.content[0], { type: 'input_file', file_id: openaiMock.uploadedFiles[0]!.id });
  });

  test('a Responses API request translated for Anthropic gets its input_file as a base64 document block', async () => {
    const bytes = Buffer.concat([Buffer.from('%PDF-1.7\n'), randomBytes(1000)]);
    const file = await upload(bytes, 'translated.pdf');
    anthropicMock.reset();
    const response = await admin.responses.create({
      model: 'sonnet',
      input: [
        {
          role: 'user',
          content: [
            { type: 'input_text', text: 'Read it.' },
            { type: 'input_file', file_id: file.id },
          ],
        },
      ],
    });
    assert.equal(response.status, 'completed');
    const sent = anthropicMock.messageRequests()[0]?.body as {
      messages: Array<{
        content: Array<{ type: string; source?: { type: string; media_type: string; data: string } }>;
      }>;
    };
    const document = sent.messages[0]?.content[1];
    assert.equal(document?.type, 'document');
    assert.equal(document?.source?.type, 'base64');
    assert.equal(document?.source?.media_type, 'application/pdf');
    assert.ok(Buffer.from(document!.source!.data, 'base64').equals(bytes));
  });

  test("a caller's own X-Upstream-Key is another account upstream: the file is uploaded again, with that key only", async () => {
    const file = await upload(Buffer.from('%PDF-1.7\nkeyed'), 'keyed.pdf');
    openaiMock.reset();
    const body = JSON.stringify({
      model: 'mini',
      messages: [{ role: 'user', content: [{ type: 'file', file: { file_id: file.id } }] }],
    });
    for (const key of [undefined, 'sk-callers-own-key-1', 'sk-callers-own-key-1', undefined]) {
      const headers = authHeaders(key === undefined ? {} : { 'x-upstream-key': key });
      const answer = await call(`${gw.url}/v1/chat/completions`, { method: 'POST', headers, body });
      assert.equal(answer.status, 200);
    }
    assert.deepEqual(
      openaiMock.uploadedFiles.map((f) => f.authorization),
      [`Bearer ${OPENAI_KEY}`, 'Bearer sk-callers-own-key-1'],
    );
    const sentIds = openaiMock
      .chatRequests()
      .map(
        (r) =>
          (r.json as { messages: Array<{ content: Array<{ file: { file_id: string } }> }> }).messages[0]?.content[0]
            ?.file.file_id,
      );
    const [mine, theirs] = openaiMock.uploadedFiles.map((f) => f.id);
    assert.deepEqual(sentIds, [mine, theirs, theirs, mine]);
    for (const request of openaiMock.requests)
      assert.ok(!JSON.stringify(request.headers).includes(ADMIN_TOKEN), 'the admin token never goes upstream');
  });

  test('more files than forward_max_files is 400 file_not_forwardable naming the first one too many', async () => {
    const file = await upload(Buffer.from('%PDF-1.7\nmany'), 'many.pdf');
    openaiMock.reset();
    const part = { type: 'file', file: { file_id: file.id } };
    const answer = await call(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: authHeaders(),
      body: JSON.stringify({ model: 'mini', messages: [{ role: 'user', content: [part, part, part, part] }] }),
    });
    assert.equal(answer.status, 400);
    const error = answer.json as { error: { code: string }; details: Record<string, unknown> };
    assert.equal(error.error.code, 'file_not_forwardable');
    assert.equal(error.details.field, 'messages[0].content[3].file.file_id');
    assert.equal(error.details.max_files, 3);
    assert.equal(openaiMock.requests.length, 0);
  });

  test('files inline to a translated upstream past forward_inline_max_bytes: 400 with the bound; nothing sent', async () => {
    const big = await upload(Buffer.concat([Buffer.from('%PDF-1.7\n'), randomBytes(5000)]), 'big.pdf');
    anthropicMock.reset();
    const answer = await call(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: authHeaders(),
      body: JSON.stringify({
        model: 'sonnet',
        messages: [{ role: 'user', content: [{ type: 'file', file: { file_id: big.id } }] }],
      }),
    });
    assert.equal(answer.status, 400);
    const error = answer.json as { error: { code: string }; details: Record<string, unknown> };
    assert.equal(error.error.code, 'file_not_forwardable');
    assert.equal(error.details.field, 'messages[0].content[0].file.file_id');
    assert.equal(error.details.max_bytes, 4096);
    assert.equal(anthropicMock.requests.length, 0);
  });

  test('a gateway id in a Messages API body forwarded natively to Anthropic (no Files API the gateway uses): 400', async () => {
    const file = await upload(Buffer.from('%PDF-1.7\nmessages'), 'messages.pdf');
    anthropicMock.reset();
    const answer = await call(`${gw.url}/v1/messages`, {
      method: 'POST',
      headers: authHeaders({ 'anthropic-version': '2023-06-01' }),
      body: JSON.stringify({
        model: 'sonnet',
        max_tokens: 100,
        messages: [{ role: 'user', content: [{ type: 'document', source: { type: 'file', file_id: file.id } }] }],
      }),
    });
    assert.equal(answer.status, 400);
    const error = answer.json as { error: { type?: string }; details?: Record<string, unknown> } & Record<
      string,
      unknown
    >;
    assert.match(JSON.stringify(error), /file_not_forwardable/);
    assert.match(JSON.stringify(error), /messages\[0\]\.content\[0\]\.source\.file_id/);
    assert.equal(anthropicMock.requests.length, 0);
  });

  test('a file of a type Anthropic does not take inline is 400 file_not_forwardable', async () => {
    const binary = await upload(Buffer.from([0, 1, 2, 3, 0xff, 0xfe, 0, 0]), 'blob.bin');
    anthropicMock.reset();
    const answer = await call(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: authHeaders(),
      body: JSON.stringify({
        model: 'sonnet',
        messages: [{ role: 'user', content: [{ type: 'file', file: { file_id: binary.id } }] }],
      }),
    });
    assert.equal(answer.status, 400);
    assert.equal((answer.json as { error: { code: string } }).error.code, 'file_not_forwardable');
    assert.equal(anthropicMock.requests.length, 0);
  });
});
