/**
 * The fixture most route tests share: a mock OpenAI-compatible upstream on a real socket, and the real gateway in
 * front of it. Registers its own before/after/beforeEach in the describe block that calls it (the mock's queue and
 * log are reset before each test), so a test file states only what differs: the gateway's env and config file.
 */
import { after, before, beforeEach } from 'node:test';
import { startOpenAiUpstream, type OpenAiUpstream } from './upstreams/openai.js';
import { started } from './started.js';
import { startGateway, type StartOptions, type TestGateway } from './gateway.js';

export interface MockedGateway {
  readonly mock: OpenAiUpstream;
  readonly gw: TestGateway;
  /** The gateway's URL for `path` (e.g. CHAT_PATH). */
  url(path: string): string;
}

export interface MockedGatewayOptions extends Omit<StartOptions, 'configFile'> {
  /** The mock's own options (a key it requires, 401 otherwise). */
  mock?: { requiredKey?: string };
  /** The config file; its text may be built from the mock's base URL (`http://127.0.0.1:<port>/v1`). */
  configFile?: { name: string; text: string | ((mockBaseUrl: string) => string) };
}

export function useMockedGateway(options: MockedGatewayOptions = {}): MockedGateway {
  let mock: OpenAiUpstream | undefined;
  let gw: TestGateway | undefined;
  before(async () => {
    mock = await startOpenAiUpstream(options.mock);
    const file = options.configFile;
    const configFile = file
      ? { name: file.name, text: typeof file.text === 'string' ? file.text : file.text(mock.baseUrl) }
      : undefined;
    gw = await startGateway({
      env: { UPSTREAM_BASE_URL: mock.baseUrl, ...options.env },
      ...(configFile ? { configFile } : {}),
    });
  });
  after(async () => {
    await gw?.close();
    await mock?.close();
  });
  beforeEach(() => mock?.reset());
  return {
    get mock() {
      return started(mock, 'useMockedGateway');
    },
    get gw() {
      return started(gw, 'useMockedGateway');
    },
    url: (path) => `${started(gw, 'useMockedGateway').url}${path}`,
  };
}
