import { GatewayError, isGatewayError } from '../../errors/gateway-error.js';
import { ProblemList } from '../../http/validation-details.js';
import type { FileSearch } from '../../core/retrieval/file-search.js';
import type { CallingAs } from '../../core/pipeline/call-as.js';
import { isJsonObject } from '../../wire/json.js';
import type { SurfaceCall } from '../surface.js';
import { FileSearchLoop } from './search-loop.js';
import { readFileSearchTool, type FileSearchSpec } from './tool-spec.js';

/** What to do with a request's `file_search` tool. */
export type FileSearchPlan =
  /** The gateway runs it: the loop the call's turns go through. */
  | { kind: 'gateway'; loop: FileSearchLoop; spec: FileSearchSpec }
  /** Its stores are not the caller's on this gateway: an upstream that speaks the API may hold them. */
  | { kind: 'not_ours'; error: GatewayError }
  /** No such tool, or no search on this gateway (the translation refuses the tool as before). */
  | { kind: 'none' };

/**
 * Reads the request's one `file_search` tool and finds whether its stores are the caller's on this gateway: a search
 * of no query (which checks the stores and embeds nothing: core/retrieval/search-service.ts) must not say
 * `vector_store_not_found`. Another caller's store reads as unknown (the search's rule). Any other refusal of that
 * check (an expired store) is the request's, before any model turn.
 */
export async function planFileSearch(
  tools: unknown,
  fileSearch: FileSearch | undefined,
  call: SurfaceCall,
): Promise<FileSearchPlan> {
  if (!fileSearch || !Array.isArray(tools)) return { kind: 'none' };
  const places: number[] = [];
  tools.forEach((tool: unknown, i) => {
    if (isJsonObject(tool) && tool.type === 'file_search') places.push(i);
  });
  const place = places[0];
  if (place === undefined) return { kind: 'none' };
  if (places.length > 1)
    throw new GatewayError('validation_failed', {
      field: `tools[${places[1] as number}]`,
      problem: 'a request may have one file_search tool (it may name several vector stores)',
    });
  const problems = new ProblemList();
  const spec = readFileSearchTool(tools[place] as Record<string, unknown>, `tools[${place}]`, problems);
  if (!spec) throw new GatewayError('validation_failed', problems.details());
  const as = callingAs(call);
  try {
    await fileSearch({ as, vectorStoreIds: spec.vectorStoreIds, queries: [], maxNumResults: 1 });
  } catch (error) {
    if (isGatewayError(error) && error.code === 'vector_store_not_found')
      return {
        kind: 'not_ours',
        error: new GatewayError('vector_store_not_found', { ...error.details, field: `${spec.at}.vector_store_ids` }),
      };
    throw error;
  }
  return { kind: 'gateway', loop: new FileSearchLoop(fileSearch, spec, as), spec };
}

function callingAs(call: SurfaceCall): CallingAs {
  if (!call.callingAs) throw new Error('a file_search call needs to know its caller (SurfaceCall.callingAs)');
  return call.callingAs();
}
