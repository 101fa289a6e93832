/**
 * The gateway's files named in model requests (docs/files.md, "Files in requests: forwarded to the upstream"): an
 * OpenAI upstream gets the file uploaded once to its own Files API and the id rewritten; a translated upstream
 * (Anthropic) gets the bytes inline; another caller's id is a 404 and nothing goes upstream. Through the openai SDK.
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

/** A small PDF's bytes, with binary bytes after the header (a base64 round trip must keep every one). */
function pdfBytes(): Buffer {
  return Buffer.concat([
    Buffer.from('%PDF-1.4\n%\xe2\xe3\xcf\xd3\n', 'latin1'),
    randomBytes(3000),
    Buffer.from('\n%%EOF\n'),
  ]);
}

type Part = OpenAI.Chat.Completions.ChatCompletionContentPart;
const fileMessage = (fileId: string): OpenAI.Chat.Completions.ChatCompletionMessageParam => ({
  role: 'user',
  content: [{ type: 'text', text: 'Summarise this file.' }, { type: 'file', file: { file_id: fileId } } as Part],
});

describe('gateway files named in chat requests', () => {
  let openaiMock: OpenAiUpstream;
  let anthropicMock: AnthropicUpstream;
  let gw: TestGateway;
  let admin: OpenAI;
  let other: OpenAI;

  before(async () => {
    openaiMock = await startOpenAiUpstream({ requiredKey: OPENAI_KEY });
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
          '  - { id: sonnet, upstream: claude, upstream_model: claude-sonnet-4-5 }',
        ].join('\n'),
      },
    });
    admin = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: ADMIN_TOKEN, maxRetries: 0 });
    const created = await call(`${gw.url}/v1/?route=keys`, {
      method: 'POST',
      headers: authHeaders(),
      disclosesKey: true,
      body: JSON.stringify({ name: 'other', models: ['*'], routes: ['files', 'chat'] }),
    });
    other = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: (created.json as { key: string }).key, maxRetries: 0 });
  });
  after(async () => {
    await gw.close();
    await openaiMock.close();
    await anthropicMock.close();
  });

  test('an OpenAI upstream gets the file uploaded once (its key, its bytes) and the rewritten id on every request', async () => {
    const bytes = pdfBytes();
    const file = await admin.files.create({ file: await toFile(bytes, 'report.pdf'), purpose: 'user_data' });
    openaiMock.reset();

    const first = await admin.chat.completions.create({ model: 'mini', messages: [fileMessage(file.id)] });
    assert.equal(first.choices[0]?.message.content, 'Hello from mock');
    assert.equal(openaiMock.uploadedFiles.length, 1);
    const uploaded = openaiMock.uploadedFiles[0]!;
    assert.ok(uploaded.bytes.equals(bytes), 'the upstream received the exact bytes');
    assert.equal(uploaded.fields.purpose, 'user_data');
    assert.equal(uploaded.filename, 'report.pdf');
    assert.equal(uploaded.authorization, `Bearer ${OPENAI_KEY}`);
    const upload = openaiMock.requests.find((r) => r.path === '/v1/files')!;
    assert.ok(!JSON.stringify(upload.headers).includes(ADMIN_TOKEN), 'the admin token never goes upstream');

    const sentParts = (chat: number) =>
      (openaiMock.chatRequests()[chat]?.json as { messages: Array<{ content: unknown[] }> }).messages[0]?.content ?? [];
    assert.deepEqual(sentParts(0)[1], { type: 'file', file: { file_id: uploaded.id } });
    assert.equal(openaiMock.chatRequests()[0]?.headers.authorization, `Bearer ${OPENAI_KEY}`);

    // The second request (streamed, this time) reuses the mapping: no second upload.
    openaiMock.enqueue({ kind: 'stream' });
    const stream = await admin.chat.completions.create({
      model: 'mini',
      stream: true,
      messages: [fileMessage(file.id)],
    });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    assert.equal(text, 'Hello from mock');
    assert.equal(openaiMock.uploadedFiles.length, 1);
    assert.deepEqual(sentParts(1)[1], { type: 'file', file: { file_id: uploaded.id } });
  });

  test("another caller's file id, or an unknown one, is 404 file_not_found naming where, and nothing goes upstream", async () => {
    const file = await admin.files.create({ file: await toFile(pdfBytes(), 'mine.pdf'), purpose: 'user_data' });
    openaiMock.reset();
    for (const [client, id] of [
      [other, file.id],
      [admin, 'file-AAAAAAAAAAAAAAAAAAAAAAAA'],
    ] as const) {
      const answer = await call(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { ...authHeaders(), authorization: `Bearer ${client.apiKey}` },
        body: JSON.stringify({ model: 'mini', messages: [fileMessage(id)] }),
      });
      assert.equal(answer.status, 404);
      const body = answer.json as { error: { code: string }; details: Record<string, unknown> };
      assert.equal(body.error.code, 'file_not_found');
      assert.equal(body.details.id, id);
      assert.equal(body.details.field, 'messages[0].content[1].file.file_id');
    }
    assert.equal(openaiMock.requests.length, 0);
  });

  test("an id that is not the gateway's passes through unchanged", async () => {
    openaiMock.reset();
    await admin.chat.completions.create({ model: 'mini', messages: [fileMessage('file-abc123')] });
    assert.equal(openaiMock.uploadedFiles.length, 0);
    const sent = openaiMock.chatRequests()[0]?.json as { messages: Array<{ content: unknown[] }> };
    assert.deepEqual(sent.messages[0]?.content[1], { type: 'file', file: { file_id: 'file-abc123' } });
  });

  test('an Anthropic upstream gets a base64 document block with the exact bytes, and text as a text document', async () => {
    const bytes = pdfBytes();
    const pdf = await admin.files.create({ file: await toFile(bytes, 'report.pdf'), purpose: 'user_data' });
    const notes = await admin.files.create({
      file: await toFile(Buffer.from('Ünïcode notes\n'), 'notes.txt'),
      purpose: 'user_data',
    });
    anthropicMock.reset();
    const answer = await admin.chat.completions.create({
      model: 'sonnet',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Compare.' },
            // The caller's cache breakpoint on the part stays on its block.
            { type: 'file', file: { file_id: pdf.id }, cache_control: { type: 'ephemeral' } } as Part,
            { type: 'file', file: { file_id: notes.id } } as Part,
          ],
        },
      ],
    });
    assert.equal(answer.object, 'chat.completion');
    const sent = anthropicMock.messageRequests()[0]?.body as {
      messages: Array<{
        content: Array<{ type: string; title?: string; source: Record<string, string>; cache_control?: unknown }>;
      }>;
    };
    const [text, document, textDocument] = sent.messages[0]!.content;
    assert.deepEqual(text, { type: 'text', text: 'Compare.' });
    assert.equal(document?.type, 'document');
    assert.equal(document?.title, 'report.pdf');
    assert.equal(document?.source.type, 'base64');
    assert.equal(document?.source.media_type, 'application/pdf');
    assert.deepEqual(document?.cache_control, { type: 'ephemeral' });
    assert.ok(Buffer.from(document?.source.data as string, 'base64').equals(bytes), 'the exact bytes, base64');
    const { cache_control: _mark, ...textBlock } = textDocument ?? {};
    assert.deepEqual(textBlock, {
      type: 'document',
      source: { type: 'text', media_type: 'text/plain', data: 'Ünïcode notes\n' },
      title: 'notes.txt',
    });
    assert.equal(anthropicMock.messageRequests()[0]?.headers['x-api-key'], ANTHROPIC_KEY);
  });
});
