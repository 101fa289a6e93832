/**
 * kill -9 in the middle of a burst of idempotent calls, then a restart on the same data directory: the SQLite
 * file is intact, every key that had completed replays its answer byte for byte, and every key whose call was
 * cut by the crash runs exactly once when retried (after its claim lapsed: nobody can tell a crashed holder from
 * a slow one before that). A long call keeps its claim alive by renewing it.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { startOpenAiUpstream, type OpenAiUpstream } from '../../helpers/upstreams/openai.js';
import {
  CHAT_PATH,
  bearer,
  httpCall,
  killAllGateways,
  makeTempDir,
  removeTempDirs,
  startGatewayProcess,
  type GatewayProcess,
  type HttpAnswer,
} from '../../helpers/spawn-gateway.js';

const TOKEN = 'crash-admin-token-0123456789';
// Long enough that a kill, an integrity check and a restart (a few seconds on a loaded CI machine) fit inside one lease.
const LEASE_SECONDS = 6;

describe('kill -9 during a burst of idempotent calls, restart on the same data directory', () => {
  let mock: OpenAiUpstream;
  let configFile: string;
  const env = () => ({
    GATEWAY_ENV: 'prod',
    ADMIN_TOKEN: TOKEN,
    UPSTREAM_BASE_URL: mock.baseUrl,
    GATEWAY_CONFIG: configFile,
    LOG_LEVEL: 'warn',
  });
  before(async () => {
    mock = await startOpenAiUpstream();
    configFile = join(makeTempDir('gw-crash-'), 'gateway.yaml');
    writeFileSync(configFile, `idempotency:\n  lease_seconds: ${LEASE_SECONDS}\n`);
  });
  after(async () => {
    await killAllGateways();
    removeTempDirs();
    await mock.close();
  });

  const streamed = (i: number) => i % 4 < 2;
  /** Answers "question i" as a stream or JSON (as asked) after `delayMs(i)`; arrival order does not matter. */
  const answerByQuestion = (delayMs: (i: number) => number): OpenAiUpstream['defaultBehavior'] => ({
    kind: 'raw',
    handler: (_req, res, text) => {
      const i = Number(/question (\d+)/.exec(text)?.[1]);
      const reply = () => {
        if (res.destroyed) return;
        if (streamed(i)) {
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          res.write(
            `data: {"id":"c${i}","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"role":"assistant","content":"answer ${i}"},"finish_reason":null}]}\n\n`,
          );
          res.end('data: [DONE]\n\n');
        } else {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(
            JSON.stringify({
              id: `c${i}`,
              object: 'chat.completion',
              created: 1,
              model: 'gpt-4o-mini',
              choices: [{ index: 0, message: { role: 'assistant', content: `answer ${i}` }, finish_reason: 'stop' }],
              usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
            }),
          );
        }
      };
      const wait = delayMs(i);
      if (wait > 0) setTimeout(reply, wait).unref();
      else reply();
    },
  });
  const body = (i: number) =>
    JSON.stringify({ model: 'gpt-4o-mini', stream: i % 4 < 2, messages: [{ role: 'user', content: `question ${i}` }] });
  const send = (gw: GatewayProcess, i: number): Promise<HttpAnswer> =>
    httpCall(`${gw.url}${CHAT_PATH}`, {
      method: 'POST',
      headers: bearer(TOKEN, { 'content-type': 'application/json', 'idempotency-key': `burst-${i}` }),
      body: body(i),
      timeoutMs: 15_000,
    });

  test(
    'completed keys replay byte for byte; cut keys run exactly once; the file is intact',
    { timeout: 60_000 },
    async () => {
      const gw = await startGatewayProcess({ env: env() });
      // Even keys answer at once, odd keys take 20 s: at the kill, 10 are stored and 10 are in flight.
      const keys = Array.from({ length: 20 }, (_, i) => i);
      const slow = (i: number) => i % 2 === 1;
      const first = new Map<number, HttpAnswer>();
      const burst = keys.map(async (i) => {
        const answer = await send(gw, i).catch(() => undefined);
        if (answer) first.set(i, answer);
      });
      mock.defaultBehavior = answerByQuestion((i) => (slow(i) ? 20_000 : 0));
      const deadline = Date.now() + 10_000;
      while ((first.size < 10 || mock.chatRequests().length < 20) && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 20));
      assert.equal(mock.chatRequests().length, 20, 'every call reached the upstream before the kill');
      assert.deepEqual(
        [...first.keys()].sort((a, b) => a - b),
        keys.filter((i) => !slow(i)),
        'the fast half answered',
      );

      gw.signal('SIGKILL');
      await gw.waitForExit(5_000);
      await Promise.all(burst);
      assert.equal(first.size, 10, 'the slow half was cut by the crash');

      const db = new DatabaseSync(join(gw.dataDir, 'gateway.db'));
      assert.deepEqual({ ...db.prepare('PRAGMA integrity_check').get() }, { integrity_check: 'ok' });
      const rows = db
        .prepare('SELECT state, COUNT(*) AS n FROM idempotency_keys GROUP BY state ORDER BY state')
        .all()
        .map((row) => ({ ...row }));
      assert.deepEqual(rows, [
        { state: 'completed', n: 10 },
        { state: 'in_progress', n: 10 },
      ]);
      db.close();

      const restarted = await startGatewayProcess({ env: env(), dataDir: gw.dataDir });
      mock.reset();
      mock.defaultBehavior = answerByQuestion(() => 0);

      // Right after the restart: completed keys replay; cut keys are still claimed by the dead process.
      for (const i of keys) {
        const answer = await send(restarted, i);
        if (!slow(i)) {
          assert.equal(answer.status, 200, `key ${i}`);
          assert.equal(answer.headers['idempotent-replayed'], 'true');
          assert.equal(answer.text, first.get(i)?.text, `key ${i}: the stored answer, byte for byte`);
          assert.match(
            String(answer.headers['content-type']),
            streamed(i) ? /^text\/event-stream/ : /^application\/json/,
          );
        } else {
          assert.equal(answer.status, 409, `key ${i}: ${answer.text}`);
          assert.equal((JSON.parse(answer.text) as { code: string }).code, 'idempotency_in_progress');
          assert.ok(Number(answer.headers['retry-after']) <= LEASE_SECONDS);
        }
      }
      assert.equal(mock.chatRequests().length, 0, 'nothing ran again yet');

      // The dead holder renewed nothing: its claims lapse within one lease. Then each cut key runs exactly once.
      await new Promise((r) => setTimeout(r, LEASE_SECONDS * 1000 + 200));
      const rerun = await Promise.all(keys.filter(slow).map((i) => send(restarted, i)));
      for (const answer of rerun) {
        assert.equal(answer.status, 200, answer.text);
        assert.equal(answer.headers['idempotent-replayed'], undefined, 'a fresh run, not a replay');
      }
      assert.equal(mock.chatRequests().length, 10, 'one upstream call per cut key');
      const again = await Promise.all(keys.map((i) => send(restarted, i)));
      assert.ok(again.every((a) => a.status === 200 && a.headers['idempotent-replayed'] === 'true'));
      assert.equal(mock.chatRequests().length, 10, 'and never again');
    },
  );

  test('a call longer than the lease keeps its key: the heartbeat renews the claim', { timeout: 30_000 }, async () => {
    const gw = await startGatewayProcess({ env: env() });
    mock.reset();
    mock.enqueue({ kind: 'json', delayMs: (LEASE_SECONDS + 2) * 1000 });
    const long = send(gw, 102); // 102: a JSON call
    await new Promise((r) => setTimeout(r, (LEASE_SECONDS + 1) * 1000)); // past the first lease
    const duplicate = await send(gw, 102);
    assert.equal(duplicate.status, 409, 'still claimed by the running call');
    assert.equal((await long).status, 200);
    assert.equal(mock.chatRequests().length, 1);
  });
});
