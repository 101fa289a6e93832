/**
 * The Anthropic mock's prompt cache (`startAnthropicUpstream({ promptCache: true })`): Messages answered as
 * Anthropic caches prompts (https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching), so a test
 * measures what breakpoints save instead of assuming it:
 *
 * - the prompt is read in Anthropic's order, tools, then system, then messages, one block at a time; a block's
 *   tokens are its JSON (without `cache_control`) divided by 4, rounded up;
 * - a breakpoint is a block with `cache_control` (or the last block, for a top-level `cache_control`); more than
 *   4 is a 400, as Anthropic answers; each breakpoint's prefix is known by a hash of the model and every block up
 *   to it;
 * - a read: for each breakpoint, the longest prefix already cached at that block or at one of the 20 blocks
 *   before it (Anthropic's lookback); the longest over all breakpoints is `cache_read_input_tokens`;
 * - a write: each breakpoint's prefix past what was read is stored, if it is at least the model's minimum (1,024
 *   tokens; 2,048 for Haiku): those tokens are `cache_creation_input_tokens` (split by the breakpoint's `ttl`);
 *   a shorter prefix is simply not cached, at no charge;
 * - `input_tokens` is the rest: the tokens after the last cached breakpoint.
 *
 * Entries never expire (a test lasts less than the 5-minute lifetime). The answer is a tool call (`tool_use`,
 * `tools[0]`'s name, its id from the number of results so far: the same conversation gets the same ids) while the
 * request offers tools and holds fewer than `toolTurns` tool results, else a short text; JSON, or Anthropic's event
 * stream with the usage in `message_start`.
 */
import { createHash } from 'node:crypto';
import type { ServerResponse } from 'node:http';

/** Anthropic's limit of breakpoints in one request. */
export const MAX_BREAKPOINTS = 4;
/** How many blocks before a breakpoint Anthropic looks for an earlier cached prefix. */
export const LOOKBACK_BLOCKS = 20;
/** The output tokens of each answer: a tool call, or the final text. */
export const TOOL_CALL_OUTPUT_TOKENS = 60;
export const TEXT_OUTPUT_TOKENS = 25;

export interface CacheUsage {
  input_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
  cache_creation: { ephemeral_5m_input_tokens: number; ephemeral_1h_input_tokens: number };
  output_tokens: number;
}

/** The minimum cacheable prompt of a model (Anthropic's table: 2,048 tokens for Haiku, 1,024 for the others). */
export function minimumCacheable(model: string): number {
  return model.includes('haiku') ? 2048 : 1024;
}

/** A block's tokens as this mock counts them: its JSON without `cache_control`, 4 characters a token. */
export function blockTokens(block: unknown): number {
  return Math.ceil(JSON.stringify(unmarked(block)).length / 4);
}

type Block = Record<string, unknown>;

interface Item {
  /** The hash of the model and every block up to this one. */
  hash: string;
  /** Tokens from the start of the prompt to the end of this block. */
  through: number;
  /** This block's `cache_control`, when it is a breakpoint. */
  mark: Block | undefined;
}

/** The mock's cache and its knobs, which a test may change between calls. */
export class PromptCache {
  /** The usage each Messages answer reported, in order. */
  readonly usages: CacheUsage[] = [];
  /** How many tool calls an agent loop gets before the final text (default 4). */
  toolTurns = 4;
  /** How many tool calls each tool answer holds (default 1: one `tool_use` block). */
  callsPerTurn = 1;
  private readonly cache = new Set<string>();
  private calls = 0;

  /** Forgets every cached prefix. */
  clear(): void {
    this.cache.clear();
  }

  /** Forgets the prefixes and the usages; the knobs back to their defaults. */
  reset(): void {
    this.cache.clear();
    this.usages.length = 0;
    this.toolTurns = 4;
    this.callsPerTurn = 1;
    this.calls = 0;
  }

  /** Answers a Messages request (`body`) against the cache. */
  answer(body: Record<string, unknown>, res: ServerResponse): void {
    const model = String(body.model ?? '');
    const items = promptItems(body, model);
    const marks = items.filter((item) => item.mark !== undefined).length;
    if (marks > MAX_BREAKPOINTS)
      return error(
        res,
        400,
        'invalid_request_error',
        `A maximum of ${MAX_BREAKPOINTS} blocks with cache_control may be provided. Found ${marks}.`,
      );
    const usage = cacheUsage(items, this.cache, minimumCacheable(model));
    this.calls += 1;
    const results = (body.messages as Array<{ content: unknown }>)
      .flatMap((m) => (Array.isArray(m.content) ? (m.content as Block[]) : []))
      .filter((b) => b.type === 'tool_result').length;
    const tools = Array.isArray(body.tools) ? (body.tools as Block[]) : [];
    const content: Block[] =
      tools.length > 0 && results < this.toolTurns * this.callsPerTurn
        ? Array.from({ length: this.callsPerTurn }, (_, i) => ({
            type: 'tool_use',
            id: `toolu_step${results}_${i}`,
            name: String(tools[0]?.name),
            input: { step: results, part: i },
          }))
        : [{ type: 'text', text: 'Done: every step ran.' }];
    const toolCall = content[0]?.type === 'tool_use';
    const full: CacheUsage = { ...usage, output_tokens: toolCall ? TOOL_CALL_OUTPUT_TOKENS : TEXT_OUTPUT_TOKENS };
    this.usages.push(full);
    const message = {
      id: `msg_cache_${this.calls}`,
      type: 'message',
      role: 'assistant',
      model,
      content,
      stop_reason: toolCall ? 'tool_use' : 'end_turn',
      stop_sequence: null,
      usage: full,
    };
    if (body.stream === true) stream(res, message, full);
    else {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(message));
    }
  }
}

/** The prompt's blocks in Anthropic's order (tools, system, messages), each with its prefix hash and running total. */
function promptItems(body: Record<string, unknown>, model: string): Item[] {
  const blocks: Array<[string, unknown]> = [];
  for (const tool of Array.isArray(body.tools) ? body.tools : []) blocks.push(['tool', tool]);
  if (typeof body.system === 'string') blocks.push(['system', { type: 'text', text: body.system }]);
  else if (Array.isArray(body.system)) for (const block of body.system) blocks.push(['system', block]);
  for (const message of Array.isArray(body.messages)
    ? (body.messages as Array<{ role?: unknown; content?: unknown }>)
    : []) {
    const content =
      typeof message.content === 'string'
        ? [{ type: 'text', text: message.content }]
        : Array.isArray(message.content)
          ? message.content
          : [];
    content.forEach((block, i) => blocks.push([`${String(message.role)}${i === 0 ? ' turn' : ''}`, block]));
  }
  const items: Item[] = [];
  let hash = createHash('sha256').update(model).digest('hex');
  let through = 0;
  for (const [where, block] of blocks) {
    hash = createHash('sha256')
      .update(hash)
      .update(where)
      .update(JSON.stringify(unmarked(block)))
      .digest('hex');
    through += blockTokens(block);
    const mark = (block as Block | null)?.cache_control;
    items.push({ hash, through, mark: typeof mark === 'object' && mark !== null ? (mark as Block) : undefined });
  }
  const automatic = body.cache_control;
  const last = items.at(-1);
  if (last && typeof automatic === 'object' && automatic !== null) last.mark ??= automatic as Block;
  return items;
}

/** What Anthropic reports for this prompt against this cache, and the cache after it (see the file's comment). */
function cacheUsage(items: Item[], cache: Set<string>, minimum: number): Omit<CacheUsage, 'output_tokens'> {
  const total = items.at(-1)?.through ?? 0;
  const breakpoints = items.flatMap((item, i) => (item.mark ? [i] : []));
  let read = 0;
  for (const b of breakpoints) {
    for (let p = b; p >= Math.max(0, b - LOOKBACK_BLOCKS); p--) {
      const item = items[p] as Item;
      if (cache.has(item.hash)) {
        read = Math.max(read, item.through);
        break;
      }
    }
  }
  let from = read;
  const written = { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 };
  for (const b of breakpoints) {
    const item = items[b] as Item;
    if (item.through <= from || item.through < minimum) continue;
    written[item.mark?.ttl === '1h' ? 'ephemeral_1h_input_tokens' : 'ephemeral_5m_input_tokens'] += item.through - from;
    cache.add(item.hash);
    from = item.through;
  }
  const creation = written.ephemeral_5m_input_tokens + written.ephemeral_1h_input_tokens;
  return {
    input_tokens: total - read - creation,
    cache_creation_input_tokens: creation,
    cache_read_input_tokens: read,
    cache_creation: written,
  };
}

function unmarked(block: unknown): unknown {
  if (typeof block !== 'object' || block === null || !('cache_control' in block)) return block;
  const { cache_control: _mark, ...rest } = block as Block;
  return rest;
}

function error(res: ServerResponse, status: number, type: string, message: string): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ type: 'error', error: { type, message } }));
}

/** Anthropic's event stream of `message`: the usage in message_start (output 1), the output tokens in message_delta. */
function stream(res: ServerResponse, message: Record<string, unknown> & { content: Block[] }, usage: CacheUsage): void {
  const event = (name: string, data: unknown) => res.write(`event: ${name}\ndata: ${JSON.stringify(data)}\n\n`);
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  event('message_start', {
    type: 'message_start',
    message: { ...message, content: [], stop_reason: null, usage: { ...usage, output_tokens: 1 } },
  });
  message.content.forEach((block, index) => {
    if (block.type === 'tool_use') {
      event('content_block_start', { type: 'content_block_start', index, content_block: { ...block, input: {} } });
      event('content_block_delta', {
        type: 'content_block_delta',
        index,
        delta: { type: 'input_json_delta', partial_json: JSON.stringify(block.input) },
      });
    } else {
      event('content_block_start', { type: 'content_block_start', index, content_block: { type: 'text', text: '' } });
      event('content_block_delta', {
        type: 'content_block_delta',
        index,
        delta: { type: 'text_delta', text: block.text },
      });
    }
    event('content_block_stop', { type: 'content_block_stop', index });
  });
  event('message_delta', {
    type: 'message_delta',
    delta: { stop_reason: message.stop_reason, stop_sequence: null },
    usage: { output_tokens: usage.output_tokens },
  });
  event('message_stop', { type: 'message_stop' });
  res.end();
}
