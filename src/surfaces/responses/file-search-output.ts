import type { FileSearchLoop } from '../file-search/search-loop.js';
import type { SearchEvent } from '../file-search/search-turns.js';
import { CitationMarkers, type MarkedPiece, type MarkerCitation } from '../file-search/citation-markers.js';
import type { PassageIndex, SearchRun } from '../file-search/passages.js';
import { outputItemId } from './ids.js';
import type {
  FileCitation,
  FileSearchCallItem,
  FileSearchResultEntry,
  OutputItem,
  ResponseObject,
  ResponseStreamEvents,
} from '../../wire/openai-responses.js';

/** The `file_search` tool a Responses call has the gateway run, and whether its results are shown (`include`). */
export interface ResponsesFileSearch {
  loop: FileSearchLoop;
  /** `include: ["file_search_call.results"]`: each item's `results`; otherwise `null`. */
  include: boolean;
}

/** A search's output item (`results` every field of every hit, `attributes` `{}` when none; or null). */
export function searchItem(run: SearchRun, include: boolean, status: FileSearchCallItem['status']): FileSearchCallItem {
  const results: FileSearchResultEntry[] | null = include
    ? run.hits.map((hit) => ({
        attributes: hit.attributes ?? {},
        file_id: hit.fileId,
        filename: hit.filename,
        score: hit.score,
        text: hit.text,
      }))
    : null;
  return { id: run.id, type: 'file_search_call', status, queries: run.queries, results };
}

/** The citation of the passage a marker named (its file, at the marker's place). */
export function fileCitation(passages: PassageIndex, citation: MarkerCitation): FileCitation | undefined {
  const hit = passages.hit(citation.passage);
  return hit && { type: 'file_citation', file_id: hit.fileId, filename: hit.filename, index: citation.index };
}

/** Markers that name a passage of this answer's searches (the rest stay text). */
export function citationMarkers(passages: PassageIndex): CitationMarkers {
  return new CitationMarkers((n) => passages.hit(n) !== undefined);
}

/**
 * A finished response (JSON answer) with its searches: one `file_search_call` item per search, before the answer's
 * items (whose ids follow their new places), and each `output_text` without the markers that cited a passage and
 * with a `file_citation` for each.
 */
export function withFileSearch(response: ResponseObject, search: ResponsesFileSearch): void {
  const { passages } = search.loop;
  const items: OutputItem[] = passages.searches.map((run) => searchItem(run, search.include, 'completed'));
  for (const item of response.output) {
    const index = items.length;
    if (item.type === 'message') {
      item.id = outputItemId(response.id, 'msg', index);
      for (const part of item.content) {
        if (part.type !== 'output_text') continue;
        const markers = citationMarkers(passages);
        const whole = markers.push(part.text);
        const rest = markers.end();
        part.text = whole.text + rest.text;
        part.annotations = [...whole.citations, ...rest.citations].flatMap((c) => fileCitation(passages, c) ?? []);
      }
    } else if (item.type !== 'file_search_call') {
      item.id = outputItemId(response.id, item.type === 'function_call' ? 'fc' : 'ctc', index);
    }
    items.push(item);
  }
  response.output = items;
}

/** Writes one stream event (ResponseStream's, with its sequence number). */
export type EmitEvent = <T extends keyof ResponseStreamEvents>(type: T, fields: ResponseStreamEvents[T]) => void;

/**
 * A search as the stream shows it (OpenAI's order): when it starts, its item is added (`queries` [], `results`
 * null) and said `in_progress` then `searching`; when it is done, `completed` and the item's `done` with what it
 * searched and (included) found. `output` is the response's, where the item takes its place.
 */
export function streamSearchEvent(
  event: SearchEvent,
  search: ResponsesFileSearch,
  output: OutputItem[],
  emit: EmitEvent,
): void {
  const { run } = event;
  if (event.kind === 'started') {
    const item = searchItem(run, false, 'in_progress');
    const ref = { item_id: item.id, output_index: output.length };
    output.push(item);
    emit('response.output_item.added', { output_index: ref.output_index, item: { ...item } });
    emit('response.file_search_call.in_progress', ref);
    emit('response.file_search_call.searching', ref);
    return;
  }
  const index = output.findIndex((item) => item.id === run.id);
  const item = searchItem(run, search.include, 'completed');
  output[index] = item;
  emit('response.file_search_call.completed', { item_id: item.id, output_index: index });
  emit('response.output_item.done', { output_index: index, item });
}

/** A message's text in a stream: its markers taken out as it comes, a citation event for each (MessageCitations). */
export class MessageCitations {
  readonly annotations: FileCitation[] = [];
  private readonly markers: CitationMarkers;

  constructor(
    private readonly passages: PassageIndex,
    private readonly ref: { item_id: string; output_index: number },
  ) {
    this.markers = citationMarkers(passages);
  }

  /** A delta's text without its markers; the citations it made are emitted (after the text they follow is). */
  push(delta: string, emitText: (text: string) => void, emit: EmitEvent): void {
    this.emit(this.markers.push(delta), emitText, emit);
  }

  /** What the markers held back, at the message's end. */
  end(emitText: (text: string) => void, emit: EmitEvent): void {
    this.emit(this.markers.end(), emitText, emit);
  }

  private emit(piece: MarkedPiece, emitText: (text: string) => void, emit: EmitEvent): void {
    if (piece.text !== '') emitText(piece.text);
    for (const marker of piece.citations) {
      const annotation = fileCitation(this.passages, marker);
      if (!annotation) continue;
      emit('response.output_text.annotation.added', {
        ...this.ref,
        content_index: 0,
        annotation_index: this.annotations.length,
        annotation,
      });
      this.annotations.push(annotation);
    }
  }
}
