import { isOwnId } from './file-ids.js';

/** The prefix of the gateway's file ids (stored-file-service.ts makes them). */
export const GATEWAY_FILE_PREFIX = 'file-';

/** One place in a request body that names one of the gateway's files: a `file_id` whose value is a gateway id. */
export interface FileRef {
  id: string;
  /** The keys from the body's root to the `file_id` field. */
  keys: ReadonlyArray<string | number>;
  /** Where it is, as the errors name it (`messages[1].content[0].file.file_id`). */
  field: string;
  /** Inside a chat `file` content part (`{type: "file", file: {file_id}}`): what a translated upstream can take inline. */
  chatFilePart: boolean;
}

/**
 * The cheap test every request pays: whether the body as received could name a gateway file at all. Its bytes, when
 * the route kept them, must hold `"file-` (a JSON string starting with the prefix); a request without them pays
 * this one search and nothing else. Without the bytes (a body a surface built), the walk decides.
 */
export function mayNameFiles(rawBody: string | undefined): boolean {
  return rawBody === undefined || rawBody.includes(`"${GATEWAY_FILE_PREFIX}`);
}

interface Frame {
  value: object;
  /** The frame of the container it is in (its keys are built only for a hit: most bodies have none). */
  parent: Frame | undefined;
  key: string | number;
}

/**
 * Every `file_id` field of the body whose value has the shape of a gateway file id (file-ids.ts `isOwnId`), in
 * document order, at most `limit + 1` (the caller refuses more than `limit`). Format-agnostic: chat's `file` part,
 * the Responses API's `input_file`, any other place a provider's format puts a `file_id`. Ids of another shape
 * (the upstream's own `file-abc123`) are not the gateway's and pass through untouched. Iterative (no recursion): a
 * deeply nested body cannot overflow the stack.
 */
export function findFileRefs(body: unknown, limit: number): FileRef[] {
  const found: FileRef[] = [];
  if (typeof body !== 'object' || body === null) return found;
  const stack: Frame[] = [{ value: body, parent: undefined, key: '' }];
  while (stack.length > 0 && found.length <= limit) {
    const frame = stack.pop() as Frame;
    const { value } = frame;
    if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) {
        const item: unknown = value[i];
        if (typeof item === 'object' && item !== null) stack.push({ value: item, parent: frame, key: i });
      }
      continue;
    }
    const record = value as Record<string, unknown>;
    const id = record.file_id;
    if (typeof id === 'string' && isOwnId(id, GATEWAY_FILE_PREFIX)) {
      const keys = keysOf(frame);
      const at = [...keys, 'file_id'];
      found.push({ id, keys: at, field: fieldOf(at), chatFilePart: isChatFilePart(body, keys) });
    }
    const names = Object.keys(record);
    for (let i = names.length - 1; i >= 0; i--) {
      const key = names[i] as string;
      const item = record[key];
      if (typeof item === 'object' && item !== null) stack.push({ value: item, parent: frame, key });
    }
  }
  return found;
}

/** The keys from the root to a frame's value. */
function keysOf(frame: Frame): Array<string | number> {
  const keys: Array<string | number> = [];
  for (let at: Frame | undefined = frame; at?.parent !== undefined; at = at.parent) keys.push(at.key);
  return keys.reverse();
}

/** `messages[1].content[0].file.file_id` */
export function fieldOf(keys: ReadonlyArray<string | number>): string {
  let out = '';
  for (const key of keys) out += typeof key === 'number' ? `[${key}]` : out === '' ? key : `.${key}`;
  return out;
}

/** Whether `keys` (the object holding `file_id`) is the `file` of a chat content part of type `file`. */
function isChatFilePart(body: unknown, keys: ReadonlyArray<string | number>): boolean {
  const n = keys.length;
  if (n < 5 || keys[0] !== 'messages' || keys[2] !== 'content' || keys[n - 1] !== 'file') return false;
  const part = valueAt(body, keys.slice(0, -1)) as { type?: unknown } | undefined;
  return part?.type === 'file';
}

function valueAt(root: unknown, keys: ReadonlyArray<string | number>): unknown {
  let at = root;
  for (const key of keys) at = (at as Record<string | number, unknown> | undefined)?.[key];
  return at;
}

/**
 * A copy of `root` with the value at `keys` replaced by `replace(old)`: only the objects and arrays on the path are
 * copied (the rest is shared), and `root` itself is never changed (a fallback target gets the caller's body).
 */
export function replaceAt<T>(root: T, keys: ReadonlyArray<string | number>, replace: (old: unknown) => unknown): T {
  const step = (value: unknown, depth: number): unknown => {
    if (depth === keys.length) return replace(value);
    const key = keys[depth] as string | number;
    const copy = (Array.isArray(value) ? [...(value as unknown[])] : { ...(value as object) }) as Record<
      string | number,
      unknown
    >;
    copy[key] = step((value as Record<string | number, unknown>)[key], depth + 1);
    return copy;
  };
  return step(root, 0) as T;
}
