/** The contract every usage-record backend passes. */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { UsageRecord, UsageStore } from '../../src/store/store-contract.js';
import { LATENCY_BIN_EDGES_MS, UsageRowsRefused, recordRows } from '../../src/store/usage-sql.js';
import { UsageColumns } from '../../src/usage/usage-columns.js';
import { UsageRecorder } from '../../src/usage/usage-recorder.js';

const binOf = (latencyMs: number) => LATENCY_BIN_EDGES_MS.findIndex((edge) => latencyMs < edge);

const base: UsageRecord = {
  timeMs: Date.parse('2026-11-20T10:00:00.000Z'),
  requestId: 'r0',
  caller: 'admin',
  environment: 'dev',
  route: 'chat',
  model: 'fast',
  upstream: 'default',
  status: 200,
  code: null,
  latencyMs: 12.5,
  ttfbMs: null,
  stream: false,
  promptTokens: 10,
  completionTokens: 5,
  costUsd: 0.0001,
  attempts: 1,
  replay: false,
  cacheHit: false,
  usageAnomaly: false,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
  reasoningTokens: 0,
  cacheSavingsUsd: 0,
};

export function usageContract(name: string, make: () => Promise<{ usage: UsageStore; close(): Promise<void> }>): void {
  describe(`usage store contract: ${name}`, () => {
    let harness: { usage: UsageStore; close(): Promise<void> } | undefined;
    const store = (): UsageStore => {
      assert.ok(harness);
      return harness.usage;
    };
    before(async () => {
      harness = await make();
      await store().append([
        base,
        {
          ...base,
          requestId: 'r1',
          timeMs: Date.parse('2026-11-20T11:00:00.000Z'),
          model: 'smart',
          caller: 'key:abc',
          latencyMs: 20,
          promptTokens: 100,
          completionTokens: 50,
          costUsd: 0.002,
        },
        {
          ...base,
          requestId: 'r2',
          timeMs: Date.parse('2026-11-21T09:00:00.000Z'),
          status: 502,
          code: 'upstream_error',
          promptTokens: null,
          completionTokens: null,
          costUsd: null,
          latencyMs: 30,
          attempts: 3,
        },
        {
          ...base,
          requestId: 'r3',
          timeMs: Date.parse('2026-11-21T09:30:00.000Z'),
          stream: true,
          ttfbMs: 4.25,
          replay: true,
          attempts: 0,
          model: null,
          route: 'models',
        },
      ]);
    });
    after(async () => {
      await harness?.close();
    });

    test('records read back field for field (nulls and booleans included), newest first', async () => {
      const recent = await store().recent(10, false);
      assert.deepEqual(
        recent.map((r) => r.requestId),
        ['r3', 'r2', 'r1', 'r0'],
      );
      assert.deepEqual(recent[0], {
        ...base,
        requestId: 'r3',
        timeMs: Date.parse('2026-11-21T09:30:00.000Z'),
        stream: true,
        ttfbMs: 4.25,
        replay: true,
        attempts: 0,
        model: null,
        route: 'models',
      });
      assert.deepEqual(recent[1]?.code, 'upstream_error');
      assert.deepEqual(
        (await store().recent(10, true)).map((r) => r.requestId),
        ['r2'],
      );
      assert.equal((await store().recent(1, false)).length, 1);
    });

    test('summaries by model, caller, route and day: requests, errors, tokens, cost, mean latency', async () => {
      const from = Date.parse('2026-11-20T00:00:00.000Z');
      const to = Date.parse('2026-11-22T00:00:00.000Z');
      assert.deepEqual(await store().summarize('day', from, to), [
        {
          group: '2026-11-20',
          requests: 2,
          errors: 0,
          promptTokens: 110,
          completionTokens: 55,
          cacheReadTokens: 0,
          cacheWriteTokens: 0,
          reasoningTokens: 0,
          cacheReadShare: 0,
          costUsd: 0.0021,
          cacheSavingsUsd: 0,
          avgLatencyMs: 16.25,
        },
        {
          group: '2026-11-21',
          requests: 2,
          errors: 1,
          promptTokens: 10,
          completionTokens: 5,
          cacheReadTokens: 0,
          cacheWriteTokens: 0,
          reasoningTokens: 0,
          cacheReadShare: 0,
          costUsd: 0.0001,
          cacheSavingsUsd: 0,
          avgLatencyMs: 21.25,
        },
      ]);
      const byModel = await store().summarize('model', from, to);
      assert.deepEqual(
        byModel.map((r) => [r.group, r.requests]),
        [
          ['(none)', 1],
          ['fast', 2],
          ['smart', 1],
        ],
      );
      const byCaller = await store().summarize('caller', from, to);
      assert.deepEqual(
        byCaller.map((r) => [r.group, r.requests, r.costUsd]),
        [
          ['admin', 3, 0.0002],
          ['key:abc', 1, 0.002],
        ],
      );
      const byRoute = await store().summarize('route', from, to);
      assert.deepEqual(
        byRoute.map((r) => [r.group, r.requests]),
        [
          ['chat', 3],
          ['models', 1],
        ],
      );
      assert.deepEqual(
        await store()
          .summarize('day', Date.parse('2026-11-21T00:00:00.000Z'), to)
          .then((rows) => rows.map((r) => r.group)),
        ['2026-11-21'],
        'the window is [from, to)',
      );
    });

    test('summaries of named callers only (a key’s usage): the same figures as the caller grouping, nobody else', async () => {
      const from = Date.parse('2026-11-20T00:00:00.000Z');
      const to = Date.parse('2026-11-22T00:00:00.000Z');
      const all = await store().summarize('caller', from, to);
      assert.deepEqual(
        await store().summarizeCallers(['key:abc', 'key:nobody'], from, to),
        all.filter((r) => r.group === 'key:abc'),
      );
      assert.deepEqual(await store().summarizeCallers(['admin', 'key:abc'], from, to), all);
      assert.deepEqual(await store().summarizeCallers([], from, to), []);
      assert.deepEqual(
        await store().summarizeCallers(['key:abc'], to, to + 86_400_000),
        [],
        'the window is [from, to)',
      );
    });

    test('timeline: counts per time bucket and latency bin, errors split 5xx / 4xx, tokens and cost', async () => {
      const day = 86_400_000;
      const d20 = Date.parse('2026-11-20T00:00:00.000Z');
      const d21 = Date.parse('2026-11-21T00:00:00.000Z');
      const rows = await store().timeline(d20, d21 + day, day);
      const row = (bucketMs: number, latencyMs: number, extra: Record<string, number>) => ({
        bucketMs,
        bin: binOf(latencyMs),
        requests: 1,
        serverErrors: 0,
        clientErrors: 0,
        promptTokens: 0,
        completionTokens: 0,
        cacheReadTokens: 0,
        costUsd: 0,
        cacheSavingsUsd: 0,
        ...extra,
      });
      assert.deepEqual(
        rows.map((r) => ({ ...r, costUsd: Math.round(r.costUsd * 1e8) / 1e8 })),
        [
          row(d20, 12.5, { promptTokens: 10, completionTokens: 5, costUsd: 0.0001 }),
          row(d20, 20, { promptTokens: 100, completionTokens: 50, costUsd: 0.002 }),
          row(d21, 12.5, { promptTokens: 10, completionTokens: 5, costUsd: 0.0001 }),
          row(d21, 30, { serverErrors: 1 }),
        ].sort((a, b) => a.bucketMs - b.bucketMs || a.bin - b.bin),
      );
      assert.ok(binOf(12.5) < binOf(20) && binOf(20) < binOf(30), 'the bins tell these latencies apart');
      const hourly = await store().timeline(d21, d21 + day, 3_600_000);
      assert.deepEqual(
        hourly.map((r) => r.bucketMs),
        [Date.parse('2026-11-21T09:00:00.000Z'), Date.parse('2026-11-21T09:00:00.000Z')],
      );
      assert.deepEqual(await store().timeline(d21 + day, d21 + 2 * day, day), []);
    });

    test('timeline: a 4xx counts as a client error, a stream that failed after its 200 as a server error', async () => {
      const t = Date.parse('2026-11-22T05:00:00.000Z');
      await store().append([
        { ...base, requestId: 'e4', timeMs: t, status: 429, code: 'rate_limited' },
        { ...base, requestId: 'e5', timeMs: t + 1, status: 200, code: 'upstream_connection_reset', stream: true },
      ]);
      const rows = await store().timeline(t, t + 60_000, 60_000);
      assert.equal(
        rows.reduce((n, r) => n + r.requests, 0),
        2,
      );
      assert.equal(
        rows.reduce((n, r) => n + r.clientErrors, 0),
        1,
      );
      assert.equal(
        rows.reduce((n, r) => n + r.serverErrors, 0),
        1,
      );
    });

    test('stored: records in storage order with increasing positions; a late record (earlier time) comes after', async () => {
      const last = await store().stored(undefined, 3);
      assert.equal(last.length, 3);
      assert.ok(last[0] && last[1] && last[2] && last[0].seq < last[1].seq && last[1].seq < last[2].seq);
      assert.deepEqual(
        last.map((r) => r.record.requestId),
        ['r3', 'e4', 'e5'],
        'the last three stored, oldest first',
      );
      const cursor = last[2]?.seq ?? 0;
      assert.deepEqual(await store().stored(cursor, 10), []);
      await store().append([
        { ...base, requestId: 'late', timeMs: Date.parse('2026-11-19T00:00:00.000Z') },
        { ...base, requestId: 'after-late' },
      ]);
      const next = await store().stored(cursor, 10);
      assert.deepEqual(
        next.map((r) => r.record.requestId),
        ['late', 'after-late'],
      );
      assert.deepEqual(next[0]?.record, { ...base, requestId: 'late', timeMs: Date.parse('2026-11-19T00:00:00.000Z') });
      assert.deepEqual(
        (await store().stored(cursor, 1)).map((r) => r.record.requestId),
        ['late'],
        'limit',
      );
      assert.deepEqual(
        (await store().stored(last[0]?.seq, 2)).map((r) => r.record.requestId),
        ['e4', 'e5'],
      );
      assert.equal(await store().purge(Date.parse('2026-11-20T00:00:00.000Z')), 1, 'the late record is old: purged');
    });

    test('purge removes records older than the cut-off', async () => {
      assert.equal(
        await store().purge(Date.parse('2026-11-21T00:00:00.000Z')),
        3,
        'r0, r1 and after-late (base time, 2026-11-20)',
      );
      assert.deepEqual((await store().recent(10, false)).map((r) => r.requestId).sort(), ['e4', 'e5', 'r2', 'r3']);
      const rest = await store().stored(undefined, 100);
      assert.ok(rest.every((r) => r.record.timeMs >= Date.parse('2026-11-21T00:00:00.000Z')));
      await store().purge(Date.parse('2100-01-01T00:00:00.000Z'));
      assert.deepEqual(await store().stored(undefined, 10), []);
      await store().append([{ ...base, requestId: 'after-empty' }]);
      const gone = rest.at(-1)?.seq ?? 0;
      assert.deepEqual(
        (await store().stored(gone, 10)).map((r) => r.record.requestId),
        ['after-empty'],
        'a position from before the table was emptied still finds what came after',
      );
    });

    test('appendRows: a columnar buffer and an array of records in one write, in order; 5,000 rows at once', async () => {
      await store().purge(Date.parse('2100-01-01T00:00:00.000Z'));
      const columns = new UsageColumns(3);
      const sparse = {
        ...base,
        requestId: 'c1',
        model: null,
        upstream: null,
        ttfbMs: null,
        promptTokens: null,
        completionTokens: null,
        costUsd: null,
        status: 401,
        code: 'unauthorized',
        attempts: 0,
      };
      const full = {
        ...base,
        requestId: 'c2',
        stream: true,
        ttfbMs: 3.5,
        replay: true,
        attempts: 3,
        status: 502,
        code: 'upstream_unavailable',
        caller: 'key:\u00e9\u2603',
        model: "o'quote",
      };
      columns.pushRecord(sparse);
      columns.pushRecord(full);
      await store().appendRows([recordRows([{ ...base, requestId: 'a0' }]), columns, recordRows([])]);
      const stored = (await store().stored(0, 10)).map((r) => r.record);
      assert.deepEqual(
        stored,
        [{ ...base, requestId: 'a0' }, sparse, full],
        'field for field, nulls, booleans and non-ASCII text included',
      );

      await store().appendRows([]);
      const many = Array.from({ length: 5_000 }, (_, i) => ({ ...base, requestId: `m${i}`, timeMs: base.timeMs + i }));
      await store().appendRows([recordRows(many)]);
      const all = await store().stored(0, 10_000);
      assert.equal(all.length, 5_003);
      assert.deepEqual(all.at(-1)?.record, many.at(-1));
    });

    test('a flagged record (usage_anomaly) reads back flagged', async () => {
      await store().purge(Date.parse('2100-01-01T00:00:00.000Z'));
      const flagged = { ...base, requestId: 'flagged', promptTokens: 100_000_000, usageAnomaly: true };
      const columns = new UsageColumns(1);
      columns.pushRecord(flagged);
      await store().appendRows([columns, recordRows([{ ...base, requestId: 'plain' }])]);
      assert.deepEqual(
        (await store().stored(0, 10)).map((r) => r.record),
        [flagged, { ...base, requestId: 'plain' }],
      );
    });

    test('token parts (cache reads and writes, reasoning) and cache savings read back, and add up in the summary; none without usage', async () => {
      await store().purge(Date.parse('2100-01-01T00:00:00.000Z'));
      const cached = {
        ...base,
        requestId: 'cached',
        caller: 'key:parts',
        promptTokens: 9_012,
        completionTokens: 30,
        cacheReadTokens: 9_000,
        cacheWriteTokens: 7,
        reasoningTokens: 20,
        cacheSavingsUsd: 0.0243,
      };
      // A cache written and not read: caching cost more than it saved (kept negative, not clamped).
      const written = {
        ...base,
        requestId: 'written',
        caller: 'key:parts',
        promptTokens: 3_010,
        completionTokens: 5,
        cacheReadTokens: 0,
        cacheWriteTokens: 3_000,
        reasoningTokens: 0,
        cacheSavingsUsd: -0.00225,
      };
      const failed = {
        ...base,
        requestId: 'failed',
        caller: 'key:parts',
        status: 502,
        code: 'upstream_error',
        promptTokens: null,
        completionTokens: null,
        costUsd: null,
        cacheReadTokens: null,
        cacheWriteTokens: null,
        reasoningTokens: null,
        cacheSavingsUsd: null,
      };
      const columns = new UsageColumns(3);
      columns.pushRecord(cached);
      columns.pushRecord(written);
      columns.pushRecord(failed);
      await store().appendRows([columns, recordRows([{ ...cached, requestId: 'cached-2' }])]);
      assert.deepEqual(
        (await store().stored(0, 10)).map((r) => r.record),
        [cached, written, failed, { ...cached, requestId: 'cached-2' }],
      );
      const [row] = await store().summarizeCallers(['key:parts'], 0, Date.parse('2100-01-01T00:00:00.000Z'));
      assert.deepEqual(
        [row?.promptTokens, row?.cacheReadTokens, row?.cacheWriteTokens, row?.reasoningTokens],
        [21_034, 18_000, 3_014, 40],
      );
      // 18,000 of 21,034 input tokens read from the cache; 2 × $0.0243 − $0.00225 saved.
      assert.deepEqual([row?.cacheReadShare, row?.cacheSavingsUsd], [0.8558, 0.04635]);
      const [bucket] = await store().timeline(0, Date.parse('2100-01-01T00:00:00.000Z'), 86_400_000 * 365 * 200);
      assert.deepEqual(
        [bucket?.cacheReadTokens, Math.round((bucket?.cacheSavingsUsd ?? 0) * 1e8) / 1e8],
        [18_000, 0.04635],
      );
    });

    test('a record the database refuses: the write is refused whole (UsageRowsRefused); the recorder writes the rest and sets it aside', async () => {
      await store().purge(Date.parse('2100-01-01T00:00:00.000Z'));
      // What unchecked upstream figures made of a record: the database's own types refuse them.
      const huge = { ...base, requestId: 'huge', promptTokens: 1e300 };
      const fraction = { ...base, requestId: 'fraction', completionTokens: 12.5 };
      await assert.rejects(
        store().append([{ ...base, requestId: 'x' }, huge]),
        (error: unknown) => error instanceof UsageRowsRefused,
      );
      assert.deepEqual(await store().stored(0, 10), [], 'all or none');

      const lines: Array<{ level: string; fields: Record<string, unknown>; msg: string }> = [];
      const log = {
        warn: (fields: Record<string, unknown>, msg: string) => lines.push({ level: 'warn', fields, msg }),
        error: (fields: Record<string, unknown>, msg: string) => lines.push({ level: 'error', fields, msg }),
      };
      const recorder = new UsageRecorder({ store: store(), log, flushMs: 60_000, maxBatch: 500 });
      const good = Array.from({ length: 40 }, (_, i) => ({ ...base, requestId: `g${i}` }));
      for (const [i, record] of good.entries()) {
        recorder.add(record);
        if (i === 5) recorder.add(huge);
        if (i === 30) recorder.add(fraction);
      }
      await recorder.flush();
      assert.deepEqual(
        (await store().stored(0, 100)).map((r) => r.record.requestId).sort(),
        good.map((r) => r.requestId).sort(),
        'every other record is written',
      );
      const setAside = lines.filter((l) => l.level === 'error');
      assert.deepEqual(setAside.map((l) => (l.fields.usage_record as UsageRecord).requestId).sort(), [
        'fraction',
        'huge',
      ]);
      assert.ok(setAside.every((l) => l.msg.includes('dead-lettered')));
      assert.deepEqual(
        setAside.find((l) => (l.fields.usage_record as UsageRecord).requestId === 'huge')?.fields.usage_record,
        huge,
        'the line holds the record whole',
      );
      assert.equal(recorder.deadLettered, 2);
      assert.ok(!lines.some((l) => l.msg.includes('kept for the next batch')), 'nothing waits behind them');

      recorder.add({ ...base, requestId: 'later' });
      await recorder.flush();
      assert.ok(
        (await store().stored(0, 100)).some((r) => r.record.requestId === 'later'),
        'the next batch is written',
      );
      assert.equal(recorder.deadLettered, 2, 'a record set aside is not tried again');
      await recorder.close();
    });
  });
}
