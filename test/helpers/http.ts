import { request, type Dispatcher } from 'undici';
import type { IncomingHttpHeaders } from 'node:http';
import { captureSecrets, captureText, credentialOf } from './capture.js';

export interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  /** Parsed JSON body (undefined when the body is not JSON). */
  json: Record<string, unknown> & { code?: string; message?: string; details?: Record<string, unknown> };
}

/** One HTTP call with the body read fully; a real socket every time. */
export async function call(
  url: string,
  options: {
    method?: string;
    headers?: Record<string, string>;
    body?: string | Buffer;
    dispatcher?: Dispatcher;
    /**
     * The answer shows a new key's secret by design (the admin keys API's create and rotate, once): its `key` field
     * is left out of the secrets-hygiene capture, and the rest of the body is still checked.
     */
    disclosesKey?: boolean;
  } = {},
): Promise<Answer> {
  const response = await request(url, {
    method: (options.method ?? 'GET') as 'GET',
    headers: options.headers,
    body: options.body,
    ...(options.dispatcher ? { dispatcher: options.dispatcher } : {}),
  });
  const text = await response.body.text();
  const headers = Object.fromEntries(Object.entries(options.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v]));
  captureSecrets([credentialOf(headers.authorization), headers['x-upstream-key'], headers['x-goog-api-key']]);
  captureText(
    'bodies',
    options.disclosesKey ? text.replace(/"key":"gwk_[^"]*"/g, '"key":"<shown once, by design>"') : text,
  );
  let json: Answer['json'];
  try {
    json = JSON.parse(text) as Answer['json'];
  } catch {
    json = undefined as unknown as Answer['json'];
  }
  return { status: response.statusCode, headers: response.headers as IncomingHttpHeaders, text, json };
}

/** The `details.errors[].field` names of a validation error. */
export function fieldsOf(answer: Answer): string[] {
  const errors = (answer.json.details?.errors ?? []) as Array<{ field: string }>;
  return errors.map((e) => e.field);
}
