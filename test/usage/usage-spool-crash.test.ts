/**
 * The real gateway process under load (many calls at once over real sockets to a mock upstream, JSON and streams),
 * killed with SIGKILL in the middle of it, then started again on the same data folder: every call the client saw
 * answered (a 200 with its whole body: the JSON answer, or a stream up to its `[DONE]`) has exactly one usage
 * record, matched by the request id the client sent, and no record is there twice. The kill must have caught
 * answered calls whose records were not yet in the store (the batch waiting in memory): those are the ones the
 * spool brings back. For the embedded store (SQLite) and for PostgreSQL (skipped, visibly, without one).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { Agent, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { startOpenAiUpstream, type OpenAiUpstream } from '../helpers/upstreams/openai.js';
import { postgresSkipReason } from '../helpers/services.js';
import { scratchPostgresSchema } from '../helpers/scratch-postgres-schema.js';
import {
  CHAT_PATH,
  killAllGateways,
  makeTempDir,
  removeTempDirs,
  startGatewayProcess,
  type GatewayProcess,
} from '../helpers/spawn-gateway.js';
import { waitFor } from '../helpers/wait.js';

const TOKEN = 'spool-crash-admin-token-0123456789';
/** Calls in flight at once. */
const CONCURRENCY = 24;
/**
 * The kill comes once this many calls were answered (and more are in flight): past the recorder's batch of 500, so
 * some records are in the store already (the replay must not write those twice) and the last ones are not.
 */
const ANSWERED_BEFORE_KILL = 1_000;

const pgSkip = await postgresSkipReason();

interface Outcome {
  id: string;
  answered: boolean;
}

/** One chat call on a kept-alive connection; answered = a 200 with its whole body (a stream: up to `[DONE]`). */
function call(url: string, agent: Agent, id: string, stream: boolean): Promise<Outcome> {
  const body = JSON.stringify({ model: 'gpt-4o-mini', stream, messages: [{ role: 'user', content: `call ${id}` }] });
  return new Promise((resolve) => {
    const req = httpRequest(`${url}${CHAT_PATH}`, {
      method: 'POST',
      agent,
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', 'x-request-id': id },
    });
    req.setTimeout(10_000, () => req.destroy(new Error('timeout')));
    req.once('error', () => resolve({ id, answered: false }));
    req.once('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (part: string) => (text += part));
      res.once('error', () => resolve({ id, answered: false }));
      res.once('aborted', () => resolve({ id, answered: false }));
      res.once('end', () => {
        if (res.statusCode !== 200 || !res.complete) return resolve({ id, answered: false });
        if (stream) return resolve({ id, answered: text.includes('data: [DONE]') });
        try {
          const answer = JSON.parse(text) as { choices?: unknown[] };
          resolve({ id, answered: Array.isArray(answer.choices) && answer.choices.length > 0 });
        } catch {
          resolve({ id, answered: false });
        }
      });
    });
    req.end(body);
  });
}

/**
 * Keeps CONCURRENCY calls in flight until the gateway is gone; kills it (SIGKILL) once ANSWERED_BEFORE_KILL calls were
 * answered and the store lacks some answered call's record (the batch waiting in memory, which a kill loses without
 * the spool). Returns every call's outcome.
 */
async function loadAndKill(
  gw: GatewayProcess,
  run: string,
  counts: () => Promise<Map<string, number>>,
): Promise<Outcome[]> {
  const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  const outcomes: Outcome[] = [];
  let next = 0;
  let killed = false;
  const worker = async () => {
    while (!killed) {
      const n = next++;
      outcomes.push(await call(gw.url, agent, `${run}-${n}`, n % 3 === 0));
    }
  };
  const answered = () => outcomes.filter((o) => o.answered);
  const killer = async () => {
    await waitFor('calls to be answered', () => answered().length >= ANSWERED_BEFORE_KILL, 60_000);
    await waitFor(
      'an answered call not yet in the store',
      async () => {
        const seen = answered();
        const stored = await counts();
        return seen.some((o) => !stored.has(o.id));
      },
      30_000,
    );
    killed = true;
    gw.child.kill('SIGKILL');
  };
  await Promise.all([killer(), ...Array.from({ length: CONCURRENCY }, worker)]);
  await gw.exited;
  agent.destroy();
  return outcomes;
}

/** The mock upstream's answer: a stream when the request asked for one, else JSON; usage in both. */
function answerAsAsked(_req: IncomingMessage, res: ServerResponse, body: string): void {
  const usage = { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 };
  const base = { id: 'c1', created: 1, model: 'gpt-4o-mini' };
  if ((JSON.parse(body) as { stream?: boolean }).stream === true) {
    const chunk = (delta: object, extra: object = {}) =>
      `data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: null }], ...extra })}\n\n`;
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(chunk({ role: 'assistant', content: 'an answer' }));
    res.end(`${chunk({}, { choices: [], usage })}data: [DONE]\n\n`);
    return;
  }
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(
    JSON.stringify({
      ...base,
      object: 'chat.completion',
      choices: [{ index: 0, message: { role: 'assistant', content: 'an answer' }, finish_reason: 'stop' }],
      usage,
    }),
  );
}

/** The spool folders in a data folder (each process's, and any a replay claimed). */
function spoolFolders(dataDir: string): string[] {
  const root = join(dataDir, 'usage-spool');
  return existsSync(root) ? readdirSync(root) : [];
}

/** Checks the outcomes against the records: every answered call exactly once, no record twice. */
function checkRecords(outcomes: Outcome[], counts: Map<string, number>): void {
  const answered = outcomes.filter((o) => o.answered).map((o) => o.id);
  const missing = answered.filter((id) => !counts.has(id));
  const twice = [...counts].filter(([, n]) => n > 1).map(([id]) => id);
  assert.deepEqual(missing, [], `${missing.length} of ${answered.length} answered calls have no usage record`);
  assert.deepEqual(twice, [], 'no request has two records');
}

function crashScenario(
  name: string,
  options: {
    setup: (dataDir: string) => Promise<{ env: Record<string, string>; counts: () => Promise<Map<string, number>> }>;
    teardown?: () => Promise<void>;
  },
): void {
  test(`${name}: every call answered 200 before a kill -9 under load has exactly one usage record after the restart`, async () => {
    const dataDir = makeTempDir('gw-spool-crash-');
    const { env, counts } = await options.setup(dataDir);
    try {
      const first = await startGatewayProcess({ env, dataDir });
      const run = `spool${Date.now().toString(36)}`;
      const outcomes = await loadAndKill(first, run, counts);
      const answered = outcomes.filter((o) => o.answered);
      assert.ok(answered.length >= ANSWERED_BEFORE_KILL, `${answered.length} calls answered before the kill`);
      // What the store had at the kill: the answered calls whose records were still waiting in memory are missing.
      const atKill = await counts();
      const unstored = answered.filter((o) => !atKill.has(o.id)).length;
      assert.ok(unstored > 0, 'the kill caught answered calls whose records were not yet in the store');
      assert.ok(unstored < answered.length, 'and some whose records were (a replay must not write those twice)');

      const second = await startGatewayProcess({ env, dataDir });
      await waitFor(
        'every answered call to have its record',
        async () => {
          const stored = await counts();
          return answered.every((o) => stored.has(o.id));
        },
        20_000,
      ).catch(() => undefined); // the check below says what is missing
      checkRecords(outcomes, await counts());
      // The dead process's spool was replayed and removed; only the running process's own folder is left.
      await waitFor('the replayed spool to be removed', () => spoolFolders(dataDir).length === 1, 10_000);
      assert.ok(!spoolFolders(dataDir).some((folder) => folder.includes('@')), 'no claimed spool left behind');

      // A clean stop writes what is buffered and removes its own spool.
      second.signal('SIGTERM');
      await second.waitForExit(15_000);
      assert.deepEqual(spoolFolders(dataDir), [], 'a clean stop leaves no spool');
      checkRecords(outcomes, await counts());
      console.log(
        `# ${name}: ${outcomes.length} calls, ${answered.length} answered before the kill, ${unstored} of them not yet stored at the kill; all recorded once after the restart`,
      );
    } finally {
      await killAllGateways();
      await options.teardown?.();
    }
  });
}

describe('usage records survive a kill -9 under load (the usage spool)', { timeout: 180_000 }, () => {
  let mock: OpenAiUpstream;
  before(async () => {
    mock = await startOpenAiUpstream();
    mock.defaultBehavior = { kind: 'raw', handler: answerAsAsked };
  });
  after(async () => {
    await killAllGateways();
    removeTempDirs();
    await mock.close();
  });
  const baseEnv = () => ({
    GATEWAY_ENV: 'prod',
    ADMIN_TOKEN: TOKEN,
    UPSTREAM_BASE_URL: mock.baseUrl,
    LOG_LEVEL: 'warn',
  });

  crashScenario('SQLite', {
    setup: async (dataDir) => ({
      env: baseEnv(),
      counts: async () => {
        const db = new DatabaseSync(join(dataDir, 'gateway.db'), { readOnly: true });
        try {
          const rows = db.prepare('SELECT request_id, count(*) AS n FROM usage_records GROUP BY request_id').all();
          return new Map(rows.map((row) => [String(row.request_id), Number(row.n)]));
        } finally {
          db.close();
        }
      },
    }),
  });
  describe('PostgreSQL', { skip: pgSkip }, () => {
    let schema: { url: string; drop: () => Promise<void> } | undefined;
    crashScenario('PostgreSQL', {
      setup: async () => {
        schema = await scratchPostgresSchema();
        const { default: pg } = await import('pg');
        const url = schema.url;
        return {
          env: { ...baseEnv(), DATABASE_URL: url },
          counts: async () => {
            const client = new pg.Client({ connectionString: url });
            await client.connect();
            try {
              const { rows } = await client.query<{ request_id: string; n: string }>(
                'SELECT request_id, count(*) AS n FROM usage_records GROUP BY request_id',
              );
              return new Map(rows.map((row) => [row.request_id, Number(row.n)]));
            } finally {
              await client.end();
            }
          },
        };
      },
      teardown: async () => schema?.drop(),
    });
  });
});
