import { bpePieces } from './bpe-pieces.js';

/** The BPEs of OpenAI's model families (context-window.ts `encodingFor` says which model has which). */
export type Encoding = 'o200k_base' | 'cl100k_base';

/** To the counting thread: count each text (`id` names the answer), or forget count `cancel` (its caller left). */
export type CountRequest = { id: number; encoding: Encoding; texts: string[] } | { cancel: number };

/** From the counting thread: the tokens of each text, in order, or why it could not count them. */
export type CountReply = { id: number; counts: number[] } | { id: number; error: string };

/** What of a thread's port the lane uses (a worker's `parentPort`, or one end of a MessageChannel in tests). */
export interface CountPort {
  on(event: 'message', listener: (message: CountRequest) => void): unknown;
  postMessage(message: CountReply): void;
}

interface Encoder {
  countTokens(text: string, options: { disallowedSpecial: Set<string> }): number;
}

/**
 * Text that reads like a special token (`<|endoftext|>`) is counted as the text it is, as the model would receive
 * it; gpt-tokenizer's default refuses it with an exception (a 500 for the caller).
 */
const AS_TEXT = { disallowedSpecial: new Set<string>() };

/** The longest the lane counts before it lets its thread read new requests and cancellations. */
const SLICE_MS = 5;

function loadEncoder(encoding: Encoding): Promise<Encoder> {
  return encoding === 'o200k_base'
    ? import('gpt-tokenizer/encoding/o200k_base')
    : import('gpt-tokenizer/encoding/cl100k_base');
}

/** One request's count, resumable: the text it is in and that text's remaining pieces. */
class CountJob {
  readonly counts: number[];
  private index = 0;
  private pieces: Iterator<string, void> | undefined;

  constructor(
    readonly id: number,
    private readonly encoder: Encoder,
    private readonly texts: readonly string[],
  ) {
    this.counts = texts.map(() => 0);
  }

  /** Counts pieces until `deadline` (performance.now()); true once every text is counted. */
  step(deadline: number): boolean {
    for (; this.index < this.texts.length; this.index++) {
      this.pieces ??= bpePieces(this.texts[this.index] ?? '');
      for (let next = this.pieces.next(); !next.done; next = this.pieces.next()) {
        this.counts[this.index] = (this.counts[this.index] ?? 0) + this.encoder.countTokens(next.value, AS_TEXT);
        if (performance.now() >= deadline) return false;
      }
      this.pieces = undefined;
    }
    return true;
  }
}

/**
 * Serves counts on `port`: the thread's loop is never held longer than one slice (SLICE_MS, plus one piece of at
 * most MAX_PIECE characters), and the counts in progress take turns, one slice each, so a short count is not kept
 * waiting behind a long one. Each encoding is loaded on its first request (gpt-tokenizer builds its ~200,000 ranks
 * then: about half a second, on this thread, not the gateway's).
 */
export function serveTokenCounts(port: CountPort, load: (encoding: Encoding) => Promise<Encoder> = loadEncoder): void {
  const encoders = new Map<Encoding, Promise<Encoder>>();
  const jobs: CountJob[] = [];
  /** The requests waiting for their encoder to load (a cancelled one is dropped from here). */
  const waiting = new Set<number>();
  let scheduled = false;

  const turn = () => {
    scheduled = false;
    const deadline = performance.now() + SLICE_MS;
    while (jobs.length > 0 && performance.now() < deadline) {
      const job = jobs.shift() as CountJob;
      let done = false;
      try {
        done = job.step(deadline);
      } catch (error) {
        port.postMessage({ id: job.id, error: String(error) });
        continue;
      }
      if (done) port.postMessage({ id: job.id, counts: job.counts });
      else jobs.push(job);
    }
    if (jobs.length > 0) schedule();
  };
  const schedule = () => {
    if (scheduled) return;
    scheduled = true;
    setImmediate(turn);
  };

  port.on('message', (message) => {
    if ('cancel' in message) {
      const at = jobs.findIndex((job) => job.id === message.cancel);
      if (at >= 0) jobs.splice(at, 1);
      waiting.delete(message.cancel);
      return;
    }
    waiting.add(message.id);
    let loading = encoders.get(message.encoding);
    if (!loading) encoders.set(message.encoding, (loading = load(message.encoding)));
    loading.then(
      (encoder) => {
        if (!waiting.delete(message.id)) return;
        jobs.push(new CountJob(message.id, encoder, message.texts));
        schedule();
      },
      (error: unknown) => {
        encoders.delete(message.encoding);
        if (waiting.delete(message.id))
          port.postMessage({ id: message.id, error: `loading ${message.encoding}: ${String(error)}` });
      },
    );
  });
}
