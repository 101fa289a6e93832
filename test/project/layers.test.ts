import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { PROJECT_ROOT } from '../helpers/paths.js';

// The layer rules of docs/architecture.md are checked by scripts/check-layers.mjs (run by `npm run lint`). These
// tests run it as lint does: on src/ as it is, and on small trees that break each rule.
const SCRIPT = join(PROJECT_ROOT, 'scripts', 'check-layers.mjs');

function check(root?: string): { status: number | null; stdout: string; stderr: string } {
  const result = spawnSync(process.execPath, root === undefined ? [SCRIPT] : [SCRIPT, root], { encoding: 'utf8' });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

function tree(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'layers-'));
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return root;
}

test('src/ holds the layers: no upward import, no cycle between folders or files', () => {
  const { status, stdout, stderr } = check();
  assert.equal(stderr, '');
  assert.equal(status, 0);
  assert.match(stdout, /^layers: \d+ files, no upward import, no cycle\n$/);
});

test('an import from a lower layer to a higher one is refused, with the file, the target and both folders', (t) => {
  const root = tree({
    'core/pricing.ts': "import type { Handler } from '../routes/surface-call.js';\nexport type H = Handler;\n",
    'routes/surface-call.ts': 'export type Handler = () => void;\n',
  });
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const { status, stderr } = check(root);
  assert.equal(status, 1);
  assert.match(
    stderr,
    /layers: core\/pricing\.ts imports routes\/surface-call\.ts: "core" sits below "routes" and may not import it\n/,
  );
  assert.match(stderr, /layers: 1 problem\(s\)/);
});

test('two folders of one layer importing each other are a folder cycle; the downward import alone is fine', (t) => {
  const root = tree({
    'providers/a.ts': "import { b } from '../store/b.js';\nexport const a = b;\n",
    'store/b.ts': 'export const b = 1;\n',
  });
  t.after(() => rmSync(root, { recursive: true, force: true }));
  assert.equal(check(root).status, 0, 'providers -> store alone is allowed');
  writeFileSync(join(root, 'store/c.ts'), "export type { A } from '../providers/d.js';\n");
  writeFileSync(join(root, 'providers/d.ts'), 'export type A = number;\n');
  const { status, stderr } = check(root);
  assert.equal(status, 1);
  assert.match(stderr, /folders import each other: (providers -> store -> providers|store -> providers -> store)\n/);
  assert.doesNotMatch(stderr, /files import each other/, 'no file cycle: a -> b and c -> d');
});

test('files importing each other, type-only or dynamic, are a file cycle even within one folder', (t) => {
  const root = tree({
    'auth/oauth.ts': "import type { Principal } from './authenticator.js';\nexport type P = Principal;\n",
    'auth/authenticator.ts':
      "export interface Principal { caller: string }\nexport const load = () => import('./oauth.js');\n",
  });
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const { status, stderr } = check(root);
  assert.equal(status, 1);
  assert.match(
    stderr,
    /files import each other: auth\/(oauth|authenticator)\.ts -> auth\/(authenticator|oauth)\.ts -> auth\/\1\.ts\n/,
  );
});

test('two domain folders of core/ importing each other are a domain cycle; one way is fine', (t) => {
  const root = tree({
    'core/limits/budget.ts': "import type { Price } from '../models/price.js';\nexport type B = Price;\n",
    'core/models/price.ts': 'export type Price = number;\n',
    'core/models/health.ts': "import type { B } from '../limits/budget.js';\nexport type H = B;\n",
  });
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const { status, stderr } = check(root);
  assert.equal(status, 1);
  assert.match(
    stderr,
    /domain folders import each other: (core\/limits -> core\/models|core\/models -> core\/limits) -> core\/(limits|models)\n/,
  );
  assert.doesNotMatch(stderr, /files import each other/, 'no file cycle: health -> budget -> price');
  rmSync(join(root, 'core/models/health.ts'));
  assert.equal(check(root).status, 0, 'limits -> models alone is a domain using another');
});

test('a folder with no layer is reported, so a new folder gets a place in the table', (t) => {
  const root = tree({ 'gadgets/x.ts': 'export const x = 1;\n' });
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const { status, stderr } = check(root);
  assert.equal(status, 1);
  assert.match(stderr, /gadgets\/x\.ts: its folder "gadgets" has no layer/);
});
