import { randomUUID } from 'node:crypto';
import type { SearchRun } from './passages.js';

/** A search the stream shows as it happens: its item opens (`started`) and closes with its results (`done`). */
export interface SearchEvent {
  kind: 'started' | 'done';
  run: SearchRun;
}

/** A `file_search_call` item's id, in OpenAI's form. */
export function newSearchId(): string {
  return `fs_${randomUUID().replaceAll('-', '')}`;
}
