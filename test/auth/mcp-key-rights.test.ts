/**
 * Per-key MCP tool rights (issue 45): `mcp_tools` through the admin keys API over HTTP (checked, shown, changed,
 * removed), and the principal each kind of caller gets from the authenticator, read by `toolRightsOf` as /mcp and
 * the model tool loop will: a key its patterns (none by default; none without the `mcp` route), a Basic user its
 * configured ones, the admin every tool; a revoked key refused at its very next lookup.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ADMIN_TOKEN, authHeaders, useGateway } from '../helpers/gateway.js';
import { call, fieldsOf } from '../helpers/http.js';
import { AdminAuthenticator } from '../../src/auth/admin-auth.js';
import { Authenticator } from '../../src/auth/authenticator.js';
import { KeyService } from '../../src/auth/key-service.js';
import { principalFromSnapshot, principalSnapshot, toolRightsOf } from '../../src/auth/principal.js';
import { ConfigError, loadConfig } from '../../src/config/load.js';
import { isGatewayError } from '../../src/errors/gateway-error.js';
import { GRANTABLE_ROUTES } from '../../src/names/api-names.js';
import { hashPassword } from '../../src/secrets/password.js';
import { SqliteKeyStore } from '../../src/store/sqlite/sqlite-keys.js';

const KEYS = '/v1/?route=keys';

interface ShownKey {
  id: string;
  key?: string;
  routes: string[];
  mcp_tools: string[];
}

/** What `authenticate` threw: its code and status (undefined: it let the caller in). */
async function refusal(attempt: Promise<unknown>): Promise<{ code: string; status: number } | undefined> {
  try {
    await attempt;
    return undefined;
  } catch (error) {
    if (!isGatewayError(error)) throw error;
    return { code: error.code, status: error.status };
  }
}

describe('MCP tool rights of keys, Basic users and the admin token', () => {
  const fixture = useGateway();
  const admin = (method: string, query = '', body?: unknown) =>
    call(fixture.url(`${KEYS}${query}`), {
      method,
      headers: authHeaders(),
      disclosesKey: method === 'POST',
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  /** An authenticator over the gateway's own key store, its cache long: only a forget makes a change bite at once. */
  const authenticatorOf = () =>
    new Authenticator(new AdminAuthenticator([ADMIN_TOKEN]), {
      environment: 'dev',
      keys: new SqliteKeyStore(fixture.gw.store.db),
      cacheMs: 60_000,
    });

  test('create with mcp_tools: shown in the answer, the key view and the list; none given: an empty list', async () => {
    const created = await admin('POST', '', {
      name: 'agent',
      models: ['*'],
      routes: ['chat', 'mcp'],
      mcp_tools: ['fs/read_*', 'github/*'],
    });
    assert.equal(created.status, 201, created.text);
    const key = created.json as unknown as ShownKey;
    assert.deepEqual(key.mcp_tools, ['fs/read_*', 'github/*']);
    const got = (await admin('GET', `&id=${key.id}`)).json as unknown as ShownKey;
    assert.deepEqual(got.mcp_tools, ['fs/read_*', 'github/*']);
    const listed = (await admin('GET')).json as unknown as { data: ShownKey[] };
    assert.deepEqual(listed.data.find((k) => k.id === key.id)?.mcp_tools, ['fs/read_*', 'github/*']);

    const plain = (await admin('POST', '', { name: 'plain', models: ['*'], routes: ['mcp'] }))
      .json as unknown as ShownKey;
    assert.deepEqual(plain.mcp_tools, [], 'default none');
  });

  test('bad patterns: 400 validation_failed naming each mcp_tools[i] and what is wrong; nothing is created', async () => {
    const before = ((await admin('GET')).json as unknown as { data: unknown[] }).data.length;
    const bad = await admin('POST', '', {
      name: 'bad',
      models: ['*'],
      routes: ['mcp'],
      mcp_tools: ['fs/read_*', 'no-slash', 'a/b/c', '/tool', 'fs/has space'],
    });
    assert.deepEqual([bad.status, bad.json.code], [400, 'validation_failed']);
    assert.deepEqual(fieldsOf(bad), ['mcp_tools[1]', 'mcp_tools[2]', 'mcp_tools[3]', 'mcp_tools[4]']);
    const problems = (bad.json.details?.errors as Array<{ problem: string }>).map((e) => e.problem);
    assert.match(problems[0] ?? '', /"no-slash" must be <server>\/<tool glob>/);
    assert.match(problems[1] ?? '', /more than one slash/);
    assert.match(problems[3] ?? '', /space or a control character/);
    const long = await admin('POST', '', { name: 'long', models: ['*'], mcp_tools: [`fs/${'x'.repeat(400)}`] });
    assert.deepEqual([long.status, long.json.code], [400, 'validation_failed']);
    assert.ok(
      fieldsOf(long).some((f) => f.startsWith('mcp_tools')),
      long.text,
    );
    const notList = await admin('POST', '', { name: 'x', models: ['*'], mcp_tools: 'fs/*' });
    assert.deepEqual([notList.status, notList.json.code], [400, 'validation_failed']);
    assert.equal(((await admin('GET')).json as unknown as { data: unknown[] }).data.length, before);
  });

  test('update: mcp_tools set, checked, then removed with null (or []); the change is named in the audit line', async () => {
    const key = (await admin('POST', '', { name: 'later', models: ['*'], routes: ['mcp'] }))
      .json as unknown as ShownKey;
    const set = await admin('PATCH', `&id=${key.id}`, { mcp_tools: ['everything/echo'] });
    assert.equal(set.status, 200, set.text);
    assert.deepEqual((set.json as unknown as ShownKey).mcp_tools, ['everything/echo']);
    const line = fixture.gw.logLines
      .map((l) => JSON.parse(l) as { audit?: string; key_id?: string; changed?: string[] })
      .find((l) => l.audit === 'key.updated' && l.key_id === key.id);
    assert.deepEqual(line?.changed, ['mcp_tools']);

    const bad = await admin('PATCH', `&id=${key.id}`, { mcp_tools: ['everything/echo', 'nope'] });
    assert.deepEqual([bad.status, fieldsOf(bad)], [400, ['mcp_tools[1]']]);
    assert.deepEqual(((await admin('GET', `&id=${key.id}`)).json as unknown as ShownKey).mcp_tools, [
      'everything/echo',
    ]);

    const cleared = await admin('PATCH', `&id=${key.id}`, { mcp_tools: null });
    assert.deepEqual((cleared.json as unknown as ShownKey).mcp_tools, []);
    const again = await admin('PATCH', `&id=${key.id}`, { mcp_tools: [] });
    assert.equal(again.status, 200);
    const updates = fixture.gw.logLines.filter((l) => l.includes('"key.updated"') && l.includes(key.id));
    assert.equal(updates.length, 2, 'set and cleared; [] after null changes nothing and writes no line');
  });

  test('a key: its patterns on the principal, read by toolRightsOf; default none; no mcp route: no tool at all', async () => {
    const auth = authenticatorOf();
    const agent = (
      await admin('POST', '', { name: 'reader', models: ['*'], routes: ['chat', 'mcp'], mcp_tools: ['fs/read_*'] })
    ).json as unknown as ShownKey;
    const principal = await auth.authenticate(`Bearer ${agent.key}`, 'mcp');
    assert.deepEqual(principal.mcpTools, ['fs/read_*']);
    const rights = toolRightsOf(principal);
    assert.deepEqual(
      [rights.allows('fs', 'read_file'), rights.allows('fs', 'write_file'), rights.allows('github', 'read_x')],
      [true, false, false],
    );
    assert.deepEqual([rights.allowsServer('fs'), rights.allowsServer('github')], [true, false]);
    // A batch keeps its owner's principal as JSON: the rights survive it.
    assert.deepEqual(principalFromSnapshot(principalSnapshot(principal)).mcpTools, ['fs/read_*']);

    const bare = (await admin('POST', '', { name: 'bare', models: ['*'], routes: ['mcp'] }))
      .json as unknown as ShownKey;
    const none = toolRightsOf(await auth.authenticate(`Bearer ${bare.key}`, 'mcp'));
    assert.equal(none.allows('fs', 'read_file'), false, 'a key given no mcp_tools sees no tool');

    const chatOnly = (
      await admin('POST', '', { name: 'chat-only', models: ['*'], routes: ['chat'], mcp_tools: ['fs/*'] })
    ).json as unknown as ShownKey;
    const chatPrincipal = await auth.authenticate(`Bearer ${chatOnly.key}`, 'chat');
    assert.equal(toolRightsOf(chatPrincipal).allows('fs', 'read_file'), false, 'patterns without the mcp route: none');
    assert.deepEqual(await refusal(auth.authenticate(`Bearer ${chatOnly.key}`, 'mcp')), {
      code: 'route_not_allowed',
      status: 403,
    });
  });

  test('revocation and a change of tools bite at the next lookup on this instance (the cache forgets the key)', async () => {
    const auth = authenticatorOf();
    const elsewhere = authenticatorOf(); // another instance: not told, it trusts its cache for cacheMs
    const service = new KeyService(
      new SqliteKeyStore(fixture.gw.store.db),
      'dev',
      undefined,
      (keyId) => auth.forgetKey(keyId),
      GRANTABLE_ROUTES,
    );
    const { key, view } = await service.create({
      name: 'short-lived',
      routes: ['mcp'],
      models: ['*'],
      mcpTools: ['fs/*'],
    });
    const bearer = `Bearer ${key}`;
    assert.equal(toolRightsOf(await auth.authenticate(bearer, 'mcp')).allows('fs', 'write_file'), true);
    await elsewhere.authenticate(bearer, 'mcp');

    await service.update(view.keyId, { mcpTools: ['fs/read_*'] });
    const narrowed = toolRightsOf(await auth.authenticate(bearer, 'mcp'));
    assert.deepEqual([narrowed.allows('fs', 'read_file'), narrowed.allows('fs', 'write_file')], [true, false]);

    await service.revoke(view.keyId);
    assert.deepEqual(await refusal(auth.authenticate(bearer, 'mcp')), { code: 'key_revoked', status: 401 });
    // What makes the first refusal immediate is the forget: an instance not told still has the key cached.
    assert.equal(await refusal(elsewhere.authenticate(bearer, 'mcp')), undefined);
  });

  test('the admin token: every tool (mcpTools undefined)', async () => {
    const principal = await authenticatorOf().authenticate(`Bearer ${ADMIN_TOKEN}`, 'mcp');
    assert.equal(principal.mcpTools, undefined);
    assert.equal(toolRightsOf(principal).allows('any-server', 'any_tool'), true);
  });
});

describe('MCP tool rights of Basic users (auth.basic_users[].mcp_tools) and mcp.oauth_tools in the config', () => {
  const withConfig = <T>(file: Record<string, unknown>, run: (dir: string) => T): T => {
    const dir = mkdtempSync(join(tmpdir(), 'gw-mcp-rights-'));
    try {
      writeFileSync(join(dir, 'gateway.json'), JSON.stringify(file));
      return run(dir);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };
  const load = (file: Record<string, unknown>, env: Record<string, string> = {}) =>
    withConfig(file, (dir) =>
      loadConfig({
        GATEWAY_ENV: 'dev',
        ADMIN_TOKEN,
        DATA_DIR: dir,
        GATEWAY_CONFIG: join(dir, 'gateway.json'),
        ...env,
      }),
    );

  test('a Basic user: its configured patterns (none by default), over HTTPS; each bad pattern fails the load by name', async () => {
    const hash = await hashPassword('correct horse battery');
    const config = load(
      {
        auth: {
          basic_users: [
            { username: 'ops', password_hash_env: 'OPS_HASH', routes: ['mcp'], mcp_tools: ['everything/get_*'] },
            { username: 'plain', password_hash_env: 'OPS_HASH', routes: ['mcp'] },
          ],
        },
      },
      { OPS_HASH: hash },
    );
    assert.deepEqual(
      config.basicUsers.map((u) => u.mcpTools),
      [['everything/get_*'], []],
    );
    const auth = new Authenticator(new AdminAuthenticator([ADMIN_TOKEN]), {
      environment: 'dev',
      keys: undefined,
      cacheMs: 0,
      basicUsers: config.basicUsers,
    });
    const basic = (user: string) => `Basic ${Buffer.from(`${user}:correct horse battery`).toString('base64')}`;
    const ops = toolRightsOf(await auth.authenticate(basic('ops'), 'mcp', true));
    assert.deepEqual([ops.allows('everything', 'get_sum'), ops.allows('everything', 'echo')], [true, false]);
    const plain = toolRightsOf(await auth.authenticate(basic('plain'), 'mcp', true));
    assert.equal(plain.allows('everything', 'get_sum'), false);

    assert.throws(
      () =>
        load(
          {
            auth: {
              basic_users: [{ username: 'ops', password_hash_env: 'OPS_HASH', mcp_tools: ['ok/*', 'broken'] }],
            },
          },
          { OPS_HASH: hash },
        ),
      (error: unknown) =>
        error instanceof ConfigError &&
        error.problems.some((p) => p.startsWith('auth.basic_users[0].mcp_tools[1]: "broken" must be <server>/')),
    );
  });

  test('mcp.oauth_tools: checked when loaded, each bad pattern named', () => {
    assert.deepEqual(load({ mcp: { oauth_tools: ['github/*'] } }).mcp.oauthTools, ['github/*']);
    assert.throws(
      () => load({ mcp: { oauth_tools: ['github/*', 'x/y/z'] } }),
      (error: unknown) =>
        error instanceof ConfigError && error.problems.some((p) => p.startsWith('mcp.oauth_tools[1]: "x/y/z"')),
    );
  });
});
