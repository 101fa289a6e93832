/**
 * The fixture of the tests that need an Anthropic upstream: a mock speaking Anthropic's Messages API on a real
 * socket (its key required), and the real gateway with one `kind: anthropic` upstream named `claude` and the
 * given model entries. Registers its own before/after in the calling describe block.
 */
import { after, before } from 'node:test';
import { startAnthropicUpstream, type AnthropicUpstream } from './upstreams/anthropic.js';
import { started } from './started.js';
import { startGateway, type TestGateway } from './gateway.js';

export interface AnthropicGateway {
  readonly mock: AnthropicUpstream;
  readonly gw: TestGateway;
}

/**
 * `models`: YAML lines of the model entries, e.g. `- { id: claude-fast, upstream: claude, upstream_model: ... }`;
 * `upstream`: more YAML lines of the upstream entry (`batch: gateway`...).
 */
export function useAnthropicGateway(key: string, models: string[], upstream: string[] = []): AnthropicGateway {
  let mock: AnthropicUpstream | undefined;
  let gw: TestGateway | undefined;
  before(async () => {
    mock = await startAnthropicUpstream({ requiredKey: key });
    gw = await startGateway({
      env: { ANTHROPIC_TEST_KEY: key },
      configFile: {
        name: 'anthropic.yaml',
        text: [
          'upstreams:',
          '  - name: claude',
          '    kind: anthropic',
          `    base_url: ${mock.baseUrl}`,
          '    api_key_env: ANTHROPIC_TEST_KEY',
          ...upstream.map((line) => `    ${line}`),
          'models:',
          ...models.map((m) => `  ${m}`),
        ].join('\n'),
      },
    });
  });
  after(async () => {
    await gw?.close();
    await mock?.close();
  });
  return {
    get mock() {
      return started(mock, 'useAnthropicGateway');
    },
    get gw() {
      return started(gw, 'useAnthropicGateway');
    },
  };
}
