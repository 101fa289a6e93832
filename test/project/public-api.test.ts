import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import ts from 'typescript';
import { PROJECT_ROOT } from '../helpers/paths.js';

// The example in src/index.ts's doc comment is the package's front door: it is compiled here as it is written
// (with `llm-gateway` pointing at src/index.ts), then run with the port set to 0.
const ROOT = PROJECT_ROOT;
const INDEX = join(ROOT, 'src', 'index.ts');

function example(): string {
  const block = /@example\n \* ```ts\n([\s\S]*?)\n \* ```/.exec(readFileSync(INDEX, 'utf8'));
  assert.ok(block?.[1], 'src/index.ts has a ```ts example');
  const code = block[1].replace(/^ \* ?/gm, '');
  assert.match(code, /from 'llm-gateway';/);
  return code.replace("from 'llm-gateway';", `from ${JSON.stringify(join(ROOT, 'src', 'index.js'))};`);
}

test("the example of the public API compiles under the project's strict settings", (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-example-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'example.mts');
  writeFileSync(file, example());
  const program = ts.createProgram([file], {
    strict: true,
    noUncheckedIndexedAccess: true,
    target: ts.ScriptTarget.ES2022,
    lib: ['lib.es2023.d.ts'], // as tsconfig.json
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    types: ['node'],
    typeRoots: [join(ROOT, 'node_modules', '@types')],
    skipLibCheck: true,
    noEmit: true,
  });
  const problems = ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
  assert.deepEqual(problems, []);
});

test('the example runs: config, stores, app, listen, close (port 0, in a scratch directory)', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-example-run-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const code = example();
  assert.match(code, /await app\.listen\(\{ port: 8080 \}\);/);
  const runnable = code.replace(
    'await app.listen({ port: 8080 });',
    [
      "await app.listen({ port: 0, host: '127.0.0.1' });",
      'const { port } = app.server.address() as { port: number };',
      // The admin view of health names the store's kind (the public view only says each check's status).
      "const health = await fetch(`http://127.0.0.1:${port}/v1/?route=health`, { headers: { authorization: 'Bearer a-long-admin-token-123' } });",
      "process.stdout.write(JSON.stringify({ status: health.status, body: await health.json() }) + '\\n');",
    ].join('\n'),
  );
  const file = join(dir, 'example.mts');
  writeFileSync(file, runnable);
  const run = spawnSync(process.execPath, ['--import', import.meta.resolve('tsx'), file], {
    cwd: dir,
    encoding: 'utf8',
    timeout: 30_000,
    env: { ...process.env, NODE_PATH: '' },
  });
  assert.equal(run.status, 0, run.stderr);
  const line = run.stdout.split('\n').find((l) => l.startsWith('{"status"'));
  assert.ok(line, `the example printed its health check: ${run.stdout.slice(0, 500)}`);
  const result = JSON.parse(line) as {
    status: number;
    body: { status?: string; checks?: { store?: { kind?: string } } };
  };
  assert.equal(result.body.checks?.store?.kind, 'sqlite');
  assert.ok(
    [200, 503].includes(result.status),
    `health answered (the example's upstream at :11434 need not exist): ${line}`,
  );
});
