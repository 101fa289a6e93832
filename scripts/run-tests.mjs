#!/usr/bin/env node
// Runs every test/**/*.test.ts file with Node's own test runner (TypeScript through tsx) and prints its summary.
// Extra arguments select files by substring; a full run adds the secrets-hygiene pass. Every test process runs on
// the Node that runs this script (process.execPath): under `npm test`, the project's own runtime (ADR 0005).
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { spawn } from 'node:child_process';
import { once } from 'node:events';

const root = new URL('..', import.meta.url).pathname;
const filters = process.argv.slice(2);

// Started by an unsupported Node (`node scripts/run-tests.mjs` on a machine whose PATH has Node 20): hand over to
// the project's own runtime, which `npm ci` installs in node_modules/.bin (ADR 0005).
const bundled = join(root, 'node_modules', '.bin', 'node');
if (Number(process.versions.node.split('.')[0]) < 24 && existsSync(bundled)) {
  console.log(`# Node ${process.version} is not supported: running the tests on ${bundled}`);
  const [code, signal] = await once(
    spawn(bundled, [new URL(import.meta.url).pathname, ...filters], { stdio: 'inherit' }),
    'exit',
  );
  process.exit(signal ? 1 : (code ?? 1));
}

function findTests(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...findTests(path));
    else if (name.endsWith('.test.ts')) out.push(relative(root, path));
  }
  return out;
}

const files = findTests(join(root, 'test'))
  .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)))
  .sort();
if (files.length === 0) {
  console.error('no test files matched');
  process.exit(1);
}

// A full run also captures every log line, response body and secret of the suite, and then checks that no
// secret appears anywhere (test/secrets-hygiene.check.ts): a second, one-test run with its own summary.
const full = filters.length === 0;
const captureDir = full ? mkdtempSync(join(tmpdir(), 'gw-capture-')) : undefined;
const env = captureDir ? { ...process.env, GW_TEST_CAPTURE_DIR: captureDir } : process.env;

function run(testFiles) {
  const args = ['--import', 'tsx', '--test', '--test-reporter=spec', '--test-concurrency=2', ...testFiles];
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, { cwd: root, stdio: 'inherit', env });
    child.on('exit', (code, signal) => resolve(signal ? 1 : (code ?? 1)));
  });
}

console.log(`# Node ${process.version} (${process.execPath}), ${files.length} test files`);
let code = await run(files);
if (full) {
  console.log("\n# secrets hygiene: searching the whole suite's logs and response bodies for every secret it used");
  const checked = await run(['test/secrets-hygiene.check.ts']);
  code = code || checked;
  rmSync(captureDir, { recursive: true, force: true });
}
process.exit(code);
