import { scrubAnswer } from '../../secrets/key-scrubber.js';

/**
 * `value` (whose JSON is `text`) with an MCP server's connection secrets removed wherever the server repeated them:
 * the same object when none occurs (one search of the text, no copy), else the scrubbed JSON parsed back. Tool
 * results, prompts and resources all pass through it before they reach a caller.
 */
export function withoutServerSecrets<T>(value: T, text: string, secrets: readonly string[]): T {
  if (secrets.length === 0) return value;
  const bytes = Buffer.from(text);
  const clean = scrubAnswer(bytes, text, secrets);
  return clean === bytes ? value : (JSON.parse(clean.toString('utf8')) as T);
}
