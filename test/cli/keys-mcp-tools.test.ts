/** `gateway keys create --mcp-tools`: the patterns a key's MCP tools are given from the command line. */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli } from '../../src/cli/run-cli.js';

describe('gateway keys create --mcp-tools', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'gw-cli-mcp-'));
  const run = async (argv: string[]) => {
    const out: string[] = [];
    const err: string[] = [];
    const code = await runCli(
      argv,
      { DATA_DIR: dataDir, GATEWAY_ENV: 'dev' },
      { out: (l) => out.push(l), err: (l) => err.push(l) },
      async () => '',
    );
    return { code, out: out.join('\n'), err: err.join('\n') };
  };
  const listed = async () =>
    JSON.parse((await run(['keys', 'list', '--json'])).out) as Array<{ name: string; mcpTools?: string[] }>;

  test('a comma list, or the flag repeated: stored on the key, shown by create and list', async (t) => {
    t.after(() => rmSync(dataDir, { recursive: true, force: true }));
    const commaList = await run([
      'keys',
      'create',
      '--name',
      'agent',
      '--models',
      '*',
      '--routes',
      'chat,mcp',
      '--mcp-tools',
      'fs/read_*, github/*',
    ]);
    assert.equal(commaList.code, 0, commaList.err);
    assert.match(commaList.out, /; mcp tools fs\/read_\*,github\/\*$/m);
    const repeated = await run([
      'keys',
      'create',
      '--name',
      'agent-2',
      '--models',
      '*',
      '--routes',
      'mcp',
      '--mcp-tools',
      'fs/read_*',
      '--mcp-tools',
      'everything/echo',
    ]);
    assert.equal(repeated.code, 0, repeated.err);
    const none = await run(['keys', 'create', '--name', 'no-tools', '--models', '*', '--routes', 'mcp']);
    assert.equal(none.code, 0, none.err);
    const keys = await listed();
    assert.deepEqual(
      ['agent', 'agent-2', 'no-tools'].map((name) => keys.find((k) => k.name === name)?.mcpTools),
      [['fs/read_*', 'github/*'], ['fs/read_*', 'everything/echo'], undefined],
    );
    assert.match((await run(['keys', 'list'])).out, /agent .* mcp_tools=fs\/read_\*,github\/\*/);

    const bad = await run(['keys', 'create', '--name', 'bad', '--models', '*', '--mcp-tools', 'fs/ok,nope,a/b/c']);
    assert.equal(bad.code, 2);
    assert.match(bad.err, /--mcp-tools\[1\]: "nope" must be <server>\/<tool glob>/);
    assert.match(bad.err, /--mcp-tools\[2\]: "a\/b\/c" holds more than one slash/);
    const bare = await run(['keys', 'create', '--name', 'bare', '--models', '*', '--mcp-tools']);
    assert.deepEqual([bare.code, /--mcp-tools takes/.test(bare.err)], [2, true]);
    assert.equal((await listed()).length, 3, 'no key created by a refused command');
  });
});
