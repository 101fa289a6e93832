import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { authHeaders, chatBody, useGateway } from '../helpers/gateway.js';
import { call } from '../helpers/http.js';

const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

describe('routes, pages and versioning', () => {
  const fixture = useGateway({
    env: { UPSTREAM_API_KEY: 'sk-routes-test-upstream-key' },
    configFile: {
      name: 'gateway.yaml',
      text: [
        'models:',
        '  - id: house-model',
        '    upstream: default',
        '    upstream_model: gpt-4o',
        '    context_window: 128000',
        '    created_at: "2024-05-13T00:00:00Z"',
      ].join('\n'),
    },
  });

  test('GET / redirects a browser to /v1/ with a small HTML page (link and meta refresh)', async () => {
    const answer = await call(`${fixture.gw.url}/`);
    assert.equal(answer.status, 302);
    assert.equal(answer.headers.location, '/v1/');
    assert.match(String(answer.headers['content-type']), /^text\/html/);
    assert.match(answer.text, /<meta http-equiv="refresh" content="0; url=\/v1\/">/);
    assert.match(answer.text, /<a href="\/v1\/">/);
  });

  test('a POST to / is redirected with 308 so the method and body are kept', async () => {
    const answer = await call(`${fixture.gw.url}/?route=chat`, {
      method: 'POST',
      headers: authHeaders(),
      body: chatBody(),
    });
    assert.equal(answer.status, 308);
    assert.equal(answer.headers.location, '/v1/?route=chat');
  });

  test('GET /v1/ without a route is an index: JSON for programs, HTML for browsers', async () => {
    const json = await call(`${fixture.gw.url}/v1/`);
    assert.equal(json.status, 200);
    assert.equal(json.json.api_version, 'v1');
    const routes = json.json.routes as Array<{ route: string; methods: string[] }>;
    assert.deepEqual(
      routes.map((r) => r.route),
      ['health', 'models', 'chat', 'responses', 'messages', 'keys', 'embeddings'],
    );
    assert.deepEqual(routes.find((r) => r.route === 'chat')?.methods, ['POST']);
    const html = await call(`${fixture.gw.url}/v1/`, {
      headers: { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' },
    });
    assert.match(String(html.headers['content-type']), /^text\/html/);
    assert.match(html.text, /\/v1\/\?route=chat/);
    const bare = await call(`${fixture.gw.url}/v1`);
    assert.equal(bare.status, 200, '/v1 without the trailing slash works too');
  });

  test('an unknown route is a 404 listing the routes; an unknown path is a 404 too', async () => {
    const answer = await call(`${fixture.gw.url}/v1/?route=nope`, { headers: authHeaders() });
    assert.equal(answer.status, 404);
    assert.equal(answer.json.code, 'route_not_found');
    assert.deepEqual(answer.json.details?.routes, [
      'health',
      'models',
      'chat',
      'responses',
      'messages',
      'keys',
      'embeddings',
    ]);
    for (const path of ['/v2/?route=health', '/nothing', '/v1/chat']) {
      const other = await call(`${fixture.gw.url}${path}`);
      assert.equal(other.status, 404, path);
      assert.equal(other.json.code, 'not_found');
    }
    const proto = await call(`${fixture.gw.url}/v1/?route=constructor`);
    assert.equal(proto.status, 404);
  });

  test('a route given twice is a 400', async () => {
    const answer = await call(`${fixture.gw.url}/v1/?route=health&route=chat`);
    assert.equal(answer.status, 400);
    assert.equal(answer.json.code, 'invalid_query_parameter');
    assert.equal(answer.json.details?.parameter, 'route');
  });

  test('a wrong method is a 405 with Allow, decided before auth and before the body is read', async () => {
    const cases: Array<[string, string, string]> = [
      ['POST', 'health', 'GET, HEAD, OPTIONS'],
      ['GET', 'chat', 'POST, OPTIONS'],
      ['DELETE', 'models', 'GET, HEAD, OPTIONS'],
      ['PUT', 'chat', 'POST, OPTIONS'],
    ];
    for (const [method, route, allow] of cases) {
      const answer = await call(`${fixture.gw.url}/v1/?route=${route}`, {
        method,
        headers: { 'content-type': 'text/plain' },
        body: method === 'GET' ? undefined : 'not json at all',
      });
      assert.equal(answer.status, 405, `${method} ${route}`);
      assert.equal(answer.headers.allow, allow);
      assert.equal(answer.json.code, 'method_not_allowed');
    }
  });

  test('OPTIONS answers 204 with Allow', async () => {
    const answer = await call(`${fixture.gw.url}/v1/?route=chat`, { method: 'OPTIONS' });
    assert.equal(answer.status, 204);
    assert.equal(answer.headers.allow, 'POST, OPTIONS');
  });

  test('HEAD on health answers the headers of GET without a body', async () => {
    const get = await call(`${fixture.gw.url}/v1/?route=health`);
    const head = await call(`${fixture.gw.url}/v1/?route=health`, { method: 'HEAD' });
    assert.equal(head.status, 200);
    assert.equal(head.headers['content-type'], get.headers['content-type']);
    assert.ok(Number(head.headers['content-length']) > 50, 'HEAD announces the length of the GET body');
  });

  test('a method Fastify has no route for at all is still a 405 with Allow on a real path', async () => {
    const { request: httpRequest } = await import('node:http');
    const status = await new Promise<{ status: number; allow: string | undefined; body: string }>((resolve, reject) => {
      const req = httpRequest(`${fixture.gw.url}/v1/?route=health`, { method: 'PROPFIND' }, (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, allow: res.headers.allow, body }));
      });
      req.on('error', reject);
      req.end();
    });
    assert.equal(status.status, 405);
    assert.equal(status.allow, 'GET, HEAD, OPTIONS');
    assert.equal((JSON.parse(status.body) as { code: string }).code, 'method_not_allowed');
  });

  describe('versioning by media type', () => {
    test('Accept: application/vnd.llmgw.v1+json is served as v1 and answered in that media type', async () => {
      const answer = await call(`${fixture.gw.url}/v1/?route=health`, {
        headers: { accept: 'application/vnd.llmgw.v1+json' },
      });
      assert.equal(answer.status, 200);
      assert.equal(answer.headers['content-type'], 'application/vnd.llmgw.v1+json; charset=utf-8');
    });

    test('the media type selects v1 without the path prefix', async () => {
      const health = await call(`${fixture.gw.url}/?route=health`, {
        headers: { accept: 'application/vnd.llmgw.v1+json' },
      });
      assert.equal(health.status, 200);
      assert.ok(['ok', 'degraded'].includes(String(health.json.status)));
      const chat = await call(`${fixture.gw.url}/?route=chat`, {
        method: 'POST',
        headers: authHeaders({ accept: 'application/vnd.llmgw.v1+json' }),
        body: chatBody(),
      });
      assert.equal(chat.status, 200);
      assert.equal(chat.json.object, 'chat.completion');
    });

    test('a version we do not serve is a 406 naming the supported ones', async () => {
      for (const accept of [
        'application/vnd.llmgw.v2+json',
        'application/vnd.llmgw+json',
        'application/vnd.llmgw.v1+xml',
      ]) {
        const answer = await call(`${fixture.gw.url}/v1/?route=health`, { headers: { accept } });
        assert.equal(answer.status, 406, accept);
        assert.equal(answer.json.code, 'unsupported_version');
        assert.deepEqual(answer.json.details?.supported, ['v1']);
      }
      const errorsToo = await call(`${fixture.gw.url}/v1/?route=chat`, {
        method: 'POST',
        headers: authHeaders({ accept: 'application/vnd.llmgw.v2+json' }),
        body: chatBody(),
      });
      assert.equal(errorsToo.status, 406);
      assert.equal(fixture.mock.chatRequests().length, 0);
    });

    test('Accept headers that do not name our vendor are not version requests', async () => {
      for (const accept of ['*/*', 'application/json', 'text/plain']) {
        const answer = await call(`${fixture.gw.url}/v1/?route=health`, { headers: { accept } });
        assert.equal(answer.status, 200, accept);
        assert.match(String(answer.headers['content-type']), /^application\/json/);
      }
    });

    test('when several versions are listed, v1 is chosen', async () => {
      const answer = await call(`${fixture.gw.url}/v1/?route=health`, {
        headers: { accept: 'application/vnd.llmgw.v2+json, application/vnd.llmgw.v1+json;q=0.5' },
      });
      assert.equal(answer.status, 200);
    });
  });

  describe('health', () => {
    test('reports ok, version, ISO UTC time, uptime and a check per dependency (the whole report: the admin token)', async () => {
      const open = await call(`${fixture.gw.url}/v1/?route=health`);
      assert.equal(open.status, 200);
      // Without a token: the status and each check's status (test/core/models/health-view.test.ts).
      assert.deepEqual(Object.keys(open.json).sort(), ['checks', 'status', 'time']);
      const answer = await call(`${fixture.gw.url}/v1/?route=health`, { headers: authHeaders() });
      assert.equal(answer.status, 200);
      const body = answer.json as Record<string, unknown> & {
        checks: { store: Record<string, unknown>; upstreams: Record<string, Record<string, unknown>> };
      };
      assert.equal(body.status, 'ok');
      assert.equal(body.version, '0.0.0-test');
      assert.match(String(body.time), ISO_UTC);
      assert.match(String(body.started_at), ISO_UTC);
      assert.equal(typeof body.uptime_seconds, 'number');
      assert.equal(body.checks.store.status, 'ok');
      assert.equal(body.checks.store.kind, 'sqlite');
      assert.equal(body.checks.upstreams.default?.status, 'ok');
      assert.match(String(body.checks.upstreams.default?.checked_at), ISO_UTC);
      assert.equal(answer.headers['cache-control'], 'no-store');
      assert.ok(!answer.text.includes('sk-routes-test-upstream-key'));
      assert.ok(!answer.text.includes(fixture.mock.baseUrl), 'health does not reveal upstream addresses');
      assert.equal(fixture.mock.chatRequests().length, 0, 'the upstream check spends no tokens');
    });

    test('upstream probes are cached: a burst of health calls makes at most one upstream call', async () => {
      await new Promise((r) => setTimeout(r, 5100)); // let the cache from the previous test expire
      fixture.mock.reset();
      await Promise.all(Array.from({ length: 20 }, () => call(`${fixture.gw.url}/v1/?route=health`)));
      assert.equal(fixture.mock.requests.filter((r) => r.path === '/v1/models').length, 1);
    });

    test('a failing upstream makes the status degraded and names only our code', async () => {
      await new Promise((r) => setTimeout(r, 5100));
      fixture.mock.modelsStatus = 500;
      const answer = await call(`${fixture.gw.url}/v1/?route=health`, { headers: authHeaders() });
      assert.equal(answer.status, 200);
      assert.equal(answer.json.status, 'degraded');
      const upstreams = (answer.json.checks as { upstreams: Record<string, { status: string; code: string }> })
        .upstreams;
      assert.equal(upstreams.default?.status, 'fail');
      assert.equal(upstreams.default?.code, 'upstream_error');
    });
  });

  describe('models', () => {
    test('needs the admin token', async () => {
      const answer = await call(`${fixture.gw.url}/v1/?route=models`);
      assert.equal(answer.status, 401);
      assert.equal(answer.json.code, 'authentication_required');
    });

    test('lists configured and upstream models with provider, context window and ISO timestamps', async () => {
      await new Promise((r) => setTimeout(r, 5100));
      const answer = await call(`${fixture.gw.url}/v1/?route=models`, { headers: authHeaders() });
      assert.equal(answer.status, 200);
      const data = answer.json.data as Array<Record<string, unknown>>;
      assert.deepEqual(
        data.map((m) => m.id),
        ['echo', 'gpt-4o', 'gpt-4o-mini', 'house-model'],
      );
      const house = data.find((m) => m.id === 'house-model');
      assert.deepEqual(house, {
        id: 'house-model',
        object: 'model',
        provider: 'default',
        upstream_model: 'gpt-4o',
        context_window: 128000,
        context_window_source: 'config',
        created_at: '2024-05-13T00:00:00.000Z',
        owned_by: null,
        source: 'config',
      });
      const discovered = data.find((m) => m.id === 'gpt-4o');
      assert.match(String(discovered?.created_at), ISO_UTC);
      assert.equal(discovered?.source, 'upstream');
      assert.equal(answer.json.next_token, undefined, 'no next_token on the last page');
    });

    test('pages with limit and an opaque next_token until the last page', async () => {
      const seen: string[] = [];
      let token: string | undefined;
      let pages = 0;
      do {
        const query = `limit=1${token ? `&next_token=${encodeURIComponent(token)}` : ''}`;
        const answer = await call(`${fixture.gw.url}/v1/?route=models&${query}`, { headers: authHeaders() });
        assert.equal(answer.status, 200);
        const data = answer.json.data as Array<{ id: string }>;
        assert.equal(data.length, 1);
        seen.push(data[0]?.id ?? '');
        token = answer.json.next_token as string | undefined;
        pages++;
      } while (token !== undefined && pages < 10);
      assert.deepEqual(seen, ['echo', 'gpt-4o', 'gpt-4o-mini', 'house-model']);
    });

    test('a bad limit or next_token is a 400 that says which', async () => {
      for (const limit of ['0', '201', 'abc', '1.5']) {
        const answer = await call(`${fixture.gw.url}/v1/?route=models&limit=${limit}`, { headers: authHeaders() });
        assert.equal(answer.status, 400, limit);
        assert.equal(answer.json.code, 'invalid_query_parameter');
        assert.equal(answer.json.details?.parameter, 'limit');
      }
      const bad = await call(`${fixture.gw.url}/v1/?route=models&next_token=garbage`, { headers: authHeaders() });
      assert.equal(bad.status, 400);
      assert.equal(bad.json.code, 'invalid_pagination_token');
    });
  });

  test('a configured model is sent upstream under its upstream name', async () => {
    const answer = await call(`${fixture.gw.url}/v1/?route=chat`, {
      method: 'POST',
      headers: authHeaders(),
      body: chatBody({ model: 'house-model' }),
    });
    assert.equal(answer.status, 200);
    assert.equal((fixture.mock.chatRequests()[0]?.json as { model: string }).model, 'gpt-4o');
  });
});
