import type { FileSearchHit } from '../../core/retrieval/file-search.js';

/** One search the gateway ran for the model in this answer: its output item's id, what it searched, what it found. */
export interface SearchRun {
  /** Its `file_search_call` item's id (`fs_…`). */
  id: string;
  queries: string[];
  hits: FileSearchHit[];
  /** The number the model cites its first hit by (`[first]`); hits are numbered on across the answer's searches. */
  first: number;
}

/**
 * The tool result the model reads: the passages, numbered across every search of this answer (so a marker names one
 * passage of one search), each with its file's name, and how to cite them. The gateway turns a marker `[n]` that
 * names a passage into a citation of its file (citation-markers.ts) and removes it from the text.
 */
export function toolResultText(run: SearchRun): string {
  if (run.hits.length === 0) return `No passages were found for ${quoted(run.queries)}.`;
  const lines = [
    `Passages found for ${quoted(run.queries)}.`,
    'Cite a passage you use by writing its number in square brackets, like [' +
      String(run.first) +
      '], right after the sentence that uses it.',
  ];
  run.hits.forEach((hit, i) => {
    lines.push('', `[${run.first + i}] (file: ${hit.filename})`, hit.text);
  });
  return lines.join('\n');
}

function quoted(queries: readonly string[]): string {
  return queries.length === 0 ? 'no query' : queries.map((query) => JSON.stringify(query)).join(', ');
}

/** The passages of an answer's searches by the number the model cites them with. */
export class PassageIndex {
  private readonly runs: SearchRun[] = [];
  private next = 1;

  /** Numbers a search's hits on from the last search's, and keeps it. */
  add(id: string, queries: string[], hits: FileSearchHit[]): SearchRun {
    const run: SearchRun = { id, queries, hits, first: this.next };
    this.next += hits.length;
    this.runs.push(run);
    return run;
  }

  /** The hit a marker number names (undefined: no search of this answer returned it). */
  hit(passage: number): FileSearchHit | undefined {
    for (const run of this.runs) {
      const i = passage - run.first;
      if (i >= 0 && i < run.hits.length) return run.hits[i];
    }
    return undefined;
  }

  get searches(): readonly SearchRun[] {
    return this.runs;
  }
}
