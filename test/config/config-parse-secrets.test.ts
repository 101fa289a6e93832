/**
 * A file the config names that holds a secret by mistake (a key file given as `price_catalog`, or as the config
 * file itself) is refused without its text: JSON's and YAML's own messages quote the text around the failure,
 * and a refusal reaches the log and the admin health view (issue 41).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PriceCatalogError, loadPriceCatalog } from '../../src/config/price-catalog.js';
import { ConfigError, loadConfig } from '../../src/config/load.js';

const SECRET = 'sk-live-SECRET0123456789abcdef';
const dir = mkdtempSync(join(tmpdir(), 'gw-parse-secrets-'));

function problemsOf(fn: () => unknown): string[] {
  try {
    fn();
  } catch (error) {
    assert.ok(error instanceof PriceCatalogError || error instanceof ConfigError, String(error));
    return error.problems;
  }
  assert.fail('the file was accepted');
}

test('a key file given as the price catalog is refused with where, never its text', () => {
  const path = join(dir, 'key.json');
  writeFileSync(path, `${SECRET}\n`);
  const text = problemsOf(() => loadPriceCatalog(path)).join('\n');
  assert.match(text, /key\.json: not valid JSON \(/);
  assert.ok(!text.includes('sk-live'), text);
});

test('a key file given as a JSON or YAML config is refused with where, never its text', () => {
  for (const [name, content] of [
    ['config.json', `{"server": ${SECRET}}`],
    ['config.yaml', `server:\n  host: "${SECRET}\n  port: [${SECRET}`],
  ] as const) {
    const path = join(dir, name);
    writeFileSync(path, content);
    const text = problemsOf(() => loadConfig({ GATEWAY_CONFIG: path })).join('\n');
    assert.match(text, /not valid (JSON|YAML) \(/);
    assert.ok(!text.includes('sk-live'), text);
  }
});
