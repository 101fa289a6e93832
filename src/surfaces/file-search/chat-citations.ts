import { DONE_FRAME, formatEvent } from '../../http/sse.js';
import type { ChatCompletionChunk, StreamChunk } from '../../providers/provider-contract.js';
import type { StreamEncoder } from '../surface.js';
import { CitationMarkers, type MarkedPiece, type MarkerCitation } from './citation-markers.js';
import type { PassageIndex } from './passages.js';
import type { FileSearchLoop } from './search-loop.js';

/** A chat call whose `file_search` tool the gateway runs: its loop, and where a cited file's content is fetched. */
export interface ChatFileSearch {
  loop: FileSearchLoop;
  /** The gateway's public origin (`https://gw.example`): a citation's `url` is its file's content there. */
  origin: string;
}

/**
 * A citation as chat's `annotations` have them: `url_citation` only (the AI SDK and typed clients refuse any other
 * type), the cited file's content on the gateway as the `url`, its name as the `title`, the cited sentence's span.
 */
export interface ChatUrlCitation {
  type: 'url_citation';
  url_citation: { url: string; title: string; start_index: number; end_index: number };
}

/** The searches of a chat answer as its extension field `file_search_results` shows them (every result). */
export interface ChatSearchResults {
  id: string;
  queries: string[];
  results: Array<{
    file_id: string;
    filename: string;
    score: number;
    attributes: Record<string, string | number | boolean>;
    text: string;
  }>;
}

export function searchResults(passages: PassageIndex): ChatSearchResults[] {
  return passages.searches.map((run) => ({
    id: run.id,
    queries: run.queries,
    results: run.hits.map((hit) => ({
      file_id: hit.fileId,
      filename: hit.filename,
      score: hit.score,
      attributes: hit.attributes ?? {},
      text: hit.text,
    })),
  }));
}

function urlCitation(search: ChatFileSearch, marker: MarkerCitation): ChatUrlCitation | undefined {
  const hit = search.loop.passages.hit(marker.passage);
  if (!hit) return undefined;
  const url = `${search.origin}/v1/files/${encodeURIComponent(hit.fileId)}/content`;
  return {
    type: 'url_citation',
    url_citation: { url, title: hit.filename, start_index: marker.start, end_index: marker.index },
  };
}

function markersOf(search: ChatFileSearch): CitationMarkers {
  return new CitationMarkers((n) => search.loop.passages.hit(n) !== undefined);
}

/**
 * A chat completion (the gateway's JSON) with its citations: the first choice's text without the markers that
 * named a passage, `message.annotations` (url_citation, after any the upstream gave) and `message.file_search_results`.
 */
export function citedCompletion(completionText: string, search: ChatFileSearch): string {
  const completion = JSON.parse(completionText) as { choices?: Array<{ message?: Record<string, unknown> }> };
  const message = completion.choices?.[0]?.message;
  if (!message) return completionText;
  if (typeof message.content === 'string') {
    const markers = markersOf(search);
    const whole = markers.push(message.content);
    const rest = markers.end();
    message.content = whole.text + rest.text;
    const cited = [...whole.citations, ...rest.citations].flatMap((c) => urlCitation(search, c) ?? []);
    const earlier = Array.isArray(message.annotations) ? (message.annotations as unknown[]) : [];
    if (cited.length > 0 || earlier.length > 0) message.annotations = [...earlier, ...cited];
  }
  message.file_search_results = searchResults(search.loop.passages);
  return JSON.stringify(completion);
}

/**
 * A chat stream with its citations: each chunk's text without the markers (one split across deltas is held until it
 * is whole: CitationMarkers), the citations it made as `delta.annotations` of that chunk, and the searches'
 * `file_search_results` on the delta of the chunk that finishes the choice. The search events are chat's to skip.
 */
export class ChatCitationStream implements StreamEncoder {
  private readonly markers: CitationMarkers;
  /** The last chunk seen: what a chunk for the text held back at the end is shaped after. */
  private last: ChatCompletionChunk | undefined;

  constructor(private readonly search: ChatFileSearch) {
    this.markers = markersOf(search);
  }

  open(): string {
    return '';
  }

  chunk(item: StreamChunk): string {
    if (item.internal === true) return '';
    const choice = item.chunk.choices[0];
    // The citations are the first choice's (n > 1 asks for more: the others go as they came).
    if (!choice || choice.index !== 0) return formatEvent(item.json ?? JSON.stringify(item.chunk));
    this.last = item.chunk;
    const content = choice.delta.content;
    const pieces: MarkedPiece[] = [];
    if (typeof content === 'string' && content !== '') pieces.push(this.markers.push(content));
    if (choice.finish_reason) pieces.push(this.markers.end());
    if (pieces.length === 0) return formatEvent(item.json ?? JSON.stringify(item.chunk));
    const delta: Record<string, unknown> = { ...choice.delta };
    const text = pieces.map((piece) => piece.text).join('');
    if (typeof content === 'string' || text !== '') delta.content = text;
    const annotations = pieces.flatMap((piece) => piece.citations.flatMap((c) => urlCitation(this.search, c) ?? []));
    if (annotations.length > 0) delta.annotations = annotations;
    if (choice.finish_reason) delta.file_search_results = searchResults(this.search.loop.passages);
    const chunk = { ...item.chunk, choices: [{ ...choice, delta }, ...item.chunk.choices.slice(1)] };
    return formatEvent(JSON.stringify(chunk));
  }

  end(): string {
    const rest = this.markers.end();
    if (rest.text === '' || !this.last) return DONE_FRAME;
    const chunk = { ...this.last, choices: [{ index: 0, delta: { content: rest.text }, finish_reason: null }] };
    delete chunk.usage;
    return formatEvent(JSON.stringify(chunk)) + DONE_FRAME;
  }

  fail(...[error, shape]: Parameters<StreamEncoder['fail']>): string {
    return shape.streamFrame(error.toBody(), error.status, error.headers);
  }
}
