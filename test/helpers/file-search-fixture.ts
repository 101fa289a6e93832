/**
 * The `file_search` tool's fixture: a search of fixed passages (the gateway's FileSearch, made here instead of the
 * vector stores), a scripted upstream that calls the offered `file_search` function and then answers citing the
 * passages it got, and one gateway with a model on each upstream kind (OpenAI-compatible chat, Anthropic, Gemini),
 * plus a `kind: openai` one that speaks the Responses API natively.
 */
import { after, before } from 'node:test';
import { GatewayError } from '../../src/errors/gateway-error.js';
import type { FileSearch, FileSearchHit, FileSearchRequest } from '../../src/core/retrieval/file-search.js';
import { startGateway, type TestGateway } from './gateway.js';
import { SCRIPT, startScriptedUpstream, type Decide, type ScriptedUpstream } from './upstreams/scripted.js';
import { everyKindConfig } from './upstreams/scripted-kinds.js';

/** The stores the caller has on the gateway. */
export const OUR_STORE = 'vs_ours0001';
/** A store id the fixture's search does not know (another caller's, or an upstream's own). */
export const FOREIGN_STORE = 'vs_foreign01';

export const HITS: FileSearchHit[] = [
  { fileId: 'file-paris', filename: 'paris.txt', score: 0.91, attributes: {}, text: 'Paris is the capital of France.' },
  { fileId: 'file-rome', filename: 'rome.md', score: 0.52, attributes: { lang: 'en' }, text: 'Rome is in Italy.' },
];

/** The model's final answer: a known marker, a known one and an unknown one after another sentence. */
export const CITING_ANSWER = 'The capital of France is Paris [1]. Rome is in Italy [2][9].';
/** The answer as the caller reads it: known markers and the space before them gone, the unknown one kept. */
export const CITED_TEXT = 'The capital of France is Paris. Rome is in Italy[9].';
/** Where the two citations are in CITED_TEXT. */
export const CITATION_INDEXES = [CITED_TEXT.indexOf('. Rome'), CITED_TEXT.indexOf('[9]')];

export const SEARCH_QUERY = 'capital of France';

/** Calls `file_search` until a tool result with passages is in the conversation, then answers citing them. */
export const searchThenCite: Decide = (api, body) => {
  if (JSON.stringify(body).includes('Passages found for')) return { type: 'text', text: CITING_ANSWER };
  return {
    type: 'tool_call',
    id: SCRIPT.toolCallIds[api],
    name: 'file_search',
    arguments: JSON.stringify({ queries: [SEARCH_QUERY] }),
  };
};

/** A model that never stops searching. */
export const searchForever: Decide = (api) => ({
  type: 'tool_call',
  id: SCRIPT.toolCallIds[api],
  name: 'file_search',
  arguments: JSON.stringify({ queries: ['more'] }),
});

/** A query the fixture's search refuses as a spent budget would (the embedding call of a search refused). */
export const SPENT_QUERY = 'spent';

/** A model that searches for SPENT_QUERY. */
export const searchSpent: Decide = (api) => ({
  type: 'tool_call',
  id: SCRIPT.toolCallIds[api],
  name: 'file_search',
  arguments: JSON.stringify({ queries: [SPENT_QUERY] }),
});

/**
 * The fixture's search: the fixed hits for the caller's store, 404 for any other, `budget_exceeded` for
 * SPENT_QUERY; every request kept.
 */
export function fixedSearch(): { search: FileSearch; requests: FileSearchRequest[] } {
  const requests: FileSearchRequest[] = [];
  const search: FileSearch = (request) => {
    requests.push(request);
    const unknown = request.vectorStoreIds.find((id) => id !== OUR_STORE);
    if (unknown !== undefined) return Promise.reject(new GatewayError('vector_store_not_found', { id: unknown }));
    if (request.queries.includes(SPENT_QUERY)) return Promise.reject(new GatewayError('budget_exceeded', {}));
    const hits = request.queries.length === 0 ? [] : HITS.slice(0, request.maxNumResults);
    return Promise.resolve({ hits, queries: [...request.queries], usage: [] });
  };
  return { search, requests };
}

/** The models of the fixture's gateway, by upstream kind. */
export { MODELS, NATIVE_MODEL } from './upstreams/scripted-kinds.js';

export interface FileSearchFixture {
  readonly gw: TestGateway;
  readonly upstream: ScriptedUpstream;
  readonly searches: FileSearchRequest[];
}

/** The scripted upstream and the gateway, started and closed by the calling describe block's hooks. */
export function useFileSearchGateway(): FileSearchFixture {
  let gw: TestGateway | undefined;
  let upstream: ScriptedUpstream | undefined;
  const { search, requests } = fixedSearch();
  before(async () => {
    upstream = await startScriptedUpstream(searchThenCite);
    const origin = upstream.origin;
    gw = await startGateway({
      env: { FS_UPSTREAM_KEY: 'sk-file-search-0123456789' },
      fileSearch: search,
      configFile: {
        name: 'file-search.yaml',
        text: everyKindConfig(origin, 'FS_UPSTREAM_KEY').join('\n'),
      },
    });
  });
  after(async () => {
    await gw?.close();
    await upstream?.close();
  });
  return {
    get gw() {
      if (!gw) throw new Error('the gateway is not started');
      return gw;
    },
    get upstream() {
      if (!upstream) throw new Error('the upstream is not started');
      return upstream;
    },
    searches: requests,
  };
}
