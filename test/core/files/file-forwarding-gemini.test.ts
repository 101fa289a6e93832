/** A gateway file named in a chat request to a Gemini upstream goes inline (docs/files.md, "Files in requests"). */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import OpenAI, { toFile } from 'openai';
import { ADMIN_TOKEN, useGateway } from '../../helpers/gateway.js';

describe('gateway files named in chat requests to Gemini', () => {
  const fx = useGateway({ upstream: 'gemini', key: 'gemini-upstream-key-42' });

  test('the file goes as inlineData with its type and exact bytes; nothing else is uploaded', async () => {
    const admin = new OpenAI({ baseURL: `${fx.gw.url}/v1`, apiKey: ADMIN_TOKEN, maxRetries: 0 });
    const bytes = Buffer.concat([Buffer.from('%PDF-1.5\n'), randomBytes(2048)]);
    const file = await admin.files.create({ file: await toFile(bytes, 'scan.pdf'), purpose: 'user_data' });
    fx.mock.reset();
    await admin.chat.completions.create({
      model: 'flash',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is in it?' },
            { type: 'file', file: { file_id: file.id } },
          ],
        },
      ],
    });
    assert.equal(fx.mock.requests.length, 1);
    const sent = fx.mock.requests[0]?.body as {
      contents: Array<{ parts: Array<{ text?: string; inlineData?: { mimeType: string; data: string } }> }>;
    };
    const parts = sent.contents[0]!.parts;
    assert.deepEqual(parts[0], { text: 'What is in it?' });
    assert.equal(parts[1]?.inlineData?.mimeType, 'application/pdf');
    assert.ok(Buffer.from(parts[1]!.inlineData!.data, 'base64').equals(bytes));
  });
});
