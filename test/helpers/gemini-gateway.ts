/**
 * The fixture of the tests that need a Gemini upstream: a mock speaking Gemini's API on a real socket (its key
 * required), and the real gateway with one `kind: gemini` upstream named `google` and the model `flash`
 * (gemini-2.0-flash). Registers its own before/after/beforeEach (the mock's log reset) in the calling describe block.
 */
import { after, before, beforeEach } from 'node:test';
import { startGeminiUpstream, type GeminiUpstream } from './upstreams/gemini.js';
import { started } from './started.js';
import { startGateway, type TestGateway } from './gateway.js';

export interface GeminiGateway {
  readonly mock: GeminiUpstream;
  readonly gw: TestGateway;
}

export function useGeminiGateway(key: string): GeminiGateway {
  let mock: GeminiUpstream | undefined;
  let gw: TestGateway | undefined;
  before(async () => {
    mock = await startGeminiUpstream({ requiredKey: key });
    gw = await startGateway({
      env: { GEMINI_TEST_KEY: key },
      configFile: {
        name: 'gemini.yaml',
        text: [
          'upstreams:',
          `  - { name: google, kind: gemini, base_url: "${mock.baseUrl}", api_key_env: GEMINI_TEST_KEY }`,
          'models:',
          '  - { id: flash, upstream: google, upstream_model: gemini-2.0-flash }',
        ].join('\n'),
      },
    });
  });
  after(async () => {
    await gw?.close();
    await mock?.close();
  });
  beforeEach(() => mock?.reset());
  return {
    get mock() {
      return started(mock, 'useGeminiGateway');
    },
    get gw() {
      return started(gw, 'useGeminiGateway');
    },
  };
}
