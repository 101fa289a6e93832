import { request } from 'undici';
import type { IncomingHttpHeaders } from 'node:http';
import { captureSecrets, captureText, credentialOf } from './capture.js';

export interface StreamAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  /** Every byte of the body, as text. */
  text: string;
  /** When the first body byte arrived, in ms since the request was sent. */
  firstByteMs: number | undefined;
}

/** Reads a whole streamed answer (or stops after `stopAfterBytes`, closing the connection). */
export async function readStream(
  url: string,
  body: string,
  headers: Record<string, string>,
  options: { stopAfterBytes?: number; signal?: AbortSignal } = {},
): Promise<StreamAnswer> {
  const started = performance.now();
  const response = await request(url, { method: 'POST', headers, body, signal: options.signal });
  let text = '';
  let firstByteMs: number | undefined;
  const decoder = new TextDecoder(); // streaming decode: a character split across chunks stays whole
  for await (const chunk of response.body) {
    firstByteMs ??= performance.now() - started;
    text += decoder.decode(chunk as Buffer, { stream: true });
    if (options.stopAfterBytes !== undefined && text.length >= options.stopAfterBytes) {
      response.body.destroy();
      break;
    }
  }
  text += decoder.decode();
  captureText('bodies', text);
  captureSecrets([credentialOf(headers.authorization ?? headers.Authorization), headers['x-upstream-key']]);
  return { status: response.statusCode, headers: response.headers as IncomingHttpHeaders, text, firstByteMs };
}

/** The `data:` payloads of a complete SSE text (frames separated by a blank line). */
export function dataFrames(text: string): string[] {
  return text
    .split('\n\n')
    .filter((frame) => frame.length > 0)
    .map((frame) =>
      frame
        .split('\n')
        .filter((line) => line.startsWith('data: '))
        .map((line) => line.slice(6))
        .join('\n'),
    );
}

/** Concatenated `choices[0].delta.content` of every chunk, as a client would assemble the answer. */
export function assembleContent(text: string): string {
  return dataFrames(text)
    .filter((d) => d !== '[DONE]' && d.startsWith('{') && !d.includes('"code"'))
    .map((d) => (JSON.parse(d) as { choices: Array<{ delta: { content?: string } }> }).choices[0]?.delta.content ?? '')
    .join('');
}

export interface NamedEvent {
  event: string | undefined;
  data: Record<string, unknown>;
}

/** Every event of a stream with named events (Responses, Messages): its `event:` line and its JSON data, in order. */
export function namedEvents(text: string): NamedEvent[] {
  return text
    .split('\n\n')
    .filter((frame) => frame.trim() !== '')
    .map((frame) => {
      const lines = frame.split('\n');
      const data = lines
        .filter((l) => l.startsWith('data: '))
        .map((l) => l.slice(6))
        .join('\n');
      return {
        event: lines.find((l) => l.startsWith('event: '))?.slice(7),
        data: JSON.parse(data) as Record<string, unknown>,
      };
    });
}
