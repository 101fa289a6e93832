/**
 * The garbage collector finalising SQLite statements must never take the process down (ADR 0005: better-sqlite3 12
 * aborted Node 24 from its statement destructor, in the middle of normal load). A child process on this very Node
 * (process.execPath, --expose-gc) runs test/helpers/sqlite-gc-stress.ts: many statements prepared and dropped with
 * forced collections, statements outliving a closed database, the stores under mixed load rebuilt round after
 * round, and an exit with thousands of statements never finalised. CI runs it on every supported Node line.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PROJECT_ROOT } from '../../helpers/spawn-gateway.js';

test(
  'statements finalised by the garbage collector, under load, at close and at exit: no abort, no warning',
  { timeout: 180_000 },
  async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gw-gc-stress-'));
    try {
      const child = spawn(
        process.execPath,
        ['--expose-gc', '--import', 'tsx', 'test/helpers/sqlite-gc-stress.ts', dir],
        { cwd: PROJECT_ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const [code, signal] = (await once(child, 'exit')) as [number | null, NodeJS.Signals | null];
      assert.equal(signal, null, `killed by ${String(signal)}:\n${stderr.slice(0, 4_000)}`);
      assert.equal(code, 0, `exit code ${String(code)}:\n${stderr.slice(0, 4_000)}`);
      assert.equal(stderr, '', 'nothing on stderr: no assertion, no ExperimentalWarning');
      const report = JSON.parse(stdout.trim()) as {
        node: string;
        operations: number;
        opens: number;
        collections: number;
        ok: boolean;
      };
      assert.equal(report.node, process.version);
      assert.equal(report.ok, true);
      assert.equal(report.opens, 5, 'the database was closed under live statements four times');
      assert.ok(report.operations > 5_000 && report.collections >= 20, stdout);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
);
