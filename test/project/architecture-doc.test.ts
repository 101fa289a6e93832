import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { PROJECT_ROOT } from '../helpers/paths.js';

/*
 * Every source path the architecture doc and its guides name exists in the tree. The rule (docs/architecture.md,
 * "Where to find it", says it too):
 * - what is a path: a backticked span in prose, or any word of a fenced block (brackets, parentheses and trailing
 *   `,;:.` taken off), whose whole text is a relative file name ending in .ts, .mjs, .js, .json or .md, or a folder
 *   ending in `/` (letters, digits, `_.-` and `/`; not starting with `/`, so URL paths such as `/v1/` are not);
 * - `*`, `<name>` and `…` stand for any characters within one segment: such a pattern names at least one entry;
 * - where it is looked up: from the repository's root, from `src/`, then from the folders of the paths named before
 *   it in the same block (a table row, a list item with its indented lines, a paragraph, a fenced block), nearest
 *   first: `config/load.ts` with `env-values.ts` is `src/config/env-values.ts`.
 */
const root = PROJECT_ROOT;
const DOCS = ['docs/architecture.md', 'docs/adding-a-provider.md', 'docs/adding-a-store-backend.md'];
const PATH = /^(?!\/)[\w.*<>…-]+(?:\/[\w.*<>…-]+)*(?:\.(?:ts|mjs|js|json|md)|\/)$/;

/** The blocks of a Markdown text, each the candidate paths it names in order. */
export function blocksOf(text: string): string[][] {
  const blocks: string[][] = [];
  let current: string[] = [];
  let fenced = false;
  const close = (): void => {
    if (current.length > 0) blocks.push(current);
    current = [];
  };
  for (const line of text.split('\n')) {
    if (line.startsWith('```')) {
      close();
      fenced = !fenced;
      continue;
    }
    if (fenced) {
      for (const word of line.split(/\s+/)) current.push(word.replace(/^[[(`'"]+|[\]),;:.`'"]+$/g, ''));
      continue;
    }
    if (line.trim() === '' || /^(\||- |\d+\. |#)/.test(line)) close();
    for (const match of line.matchAll(/`([^`\n]+)`/g)) current.push(match[1] as string);
  }
  close();
  return blocks.map((b) => b.filter((word) => PATH.test(word) && !/^\.+\/?$/.test(word)));
}

/** The entries a path (or pattern) names under `base`. */
function entries(base: string, path: string): string[] {
  let found = [base];
  for (const segment of path.split('/').filter((s) => s !== '')) {
    if (!/[*<…]/.test(segment)) {
      found = found.map((dir) => join(dir, segment)).filter((p) => existsSync(p));
      continue;
    }
    const pattern = new RegExp(`^${segment.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*|<[^>]*>|…/g, '.*')}$`);
    found = found.flatMap((dir) =>
      statSync(dir).isDirectory()
        ? readdirSync(dir)
            .filter((name) => pattern.test(name))
            .map((name) => join(dir, name))
        : [],
    );
  }
  return path.endsWith('/') ? found.filter((p) => statSync(p).isDirectory()) : found;
}

/** The paths of a Markdown text that name nothing in the tree under `repo`. */
export function missingPaths(text: string, repo: string): string[] {
  const missing: string[] = [];
  for (const block of blocksOf(text)) {
    const context: string[] = [];
    for (const path of block) {
      const bases = [repo, join(repo, 'src'), ...context];
      const hit = bases.map((base) => entries(base, path)).find((found) => found.length > 0);
      if (!hit) {
        missing.push(path);
        continue;
      }
      const first = hit[0] as string;
      context.unshift(statSync(first).isDirectory() ? first : dirname(first));
    }
  }
  return missing;
}

test('every source path the architecture doc and the guides name exists', () => {
  for (const doc of DOCS) {
    const text = readFileSync(join(root, doc), 'utf8');
    assert.deepEqual(missingPaths(text, root), [], `${doc} names paths that do not exist`);
  }
});

test('the architecture doc names the code it describes (the check has something to check)', () => {
  const named = blocksOf(readFileSync(join(root, 'docs/architecture.md'), 'utf8')).flat();
  assert.ok(named.length > 150, `only ${named.length} paths found`);
  for (const path of [
    'src/app.ts',
    'routes/surface-call.ts',
    'core/pipeline/call-pipeline.ts',
    'providers/provider-contract.ts',
  ])
    assert.ok(named.includes(path), path);
});

test('the rule: a renamed file, a bare name in its folder, a pattern, URL paths and code', () => {
  const diagram =
    '```\nroutes/ (thin)   health-route.ts  chat.ts\n  http/error-shape.ts [src/http/v1-dispatch.ts]\n```';
  assert.deepEqual(missingPaths(diagram, root), ['chat.ts']);
  assert.deepEqual(missingPaths('`config/load.ts` with `env-values.ts`; `sections.ts`', root), []);
  assert.deepEqual(missingPaths('`env-values.ts` before its folder', root), ['env-values.ts']);
  assert.deepEqual(missingPaths('`store/*/…rate-limiter.ts`, `providers/<kind>/`, `src/*.ts`', root), []);
  assert.deepEqual(missingPaths('`store/*/…rate-limiting.ts`', root), ['store/*/…rate-limiting.ts']);
  assert.deepEqual(missingPaths('`/v1/`, `?route=keys`, `gemini:write`, `x.y`, `routes/chat.ts`', root), [
    'routes/chat.ts',
  ]);
  assert.deepEqual(missingPaths('- `config/load.ts`\n- `sections.ts` in another item', root), ['sections.ts']);
});
