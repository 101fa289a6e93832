import type { Dispatcher } from 'undici';
import { GatewayError } from '../errors/gateway-error.js';
import { SseParser, type SseEvent } from '../streaming/sse-parser.js';
import type { StreamBatch, StreamChunk } from './provider-contract.js';
import { discardBody, drainQuietly } from './response-body.js';
import { toUpstreamError } from './transport-errors.js';

/**
 * How an upstream's event stream ended: at its end marker (nothing after it was read), with the body ending
 * between two events, or with the body ending in the middle of one (the connection was cut).
 */
export type StreamEnding = 'marker' | 'clean' | 'cut';

export interface EventStreamReading {
  upstream: string;
  signal: AbortSignal;
  /** Sends the request and checks the answer is an event stream (run at the first read, as a generator would). */
  open: () => Promise<Dispatcher.ResponseData>;
  /**
   * One event into the batch (none, one or several chunks); true at the stream's end marker, after which nothing
   * more is read. A throw ends the stream with that failure, once the chunks before it have gone out.
   */
  translate: (event: SseEvent, batch: StreamChunk[]) => boolean;
  /** How the stream ended: throws when that is not a good end; may return a last batch (e.g. Gemini's usage). */
  end: (ending: StreamEnding) => StreamBatch | undefined;
}

/**
 * The read loop of every streamed upstream answer (OpenAI-compatible, Anthropic, Gemini, and the native Responses
 * and Messages passthroughs): one batch of chunks per socket read, so a read's events leave as one write. The
 * chunks of events before a bad one still go out, then the failure. Transport errors become our upstream errors.
 * At the end marker the rest of the body is drained (the keep-alive connection is reused); a body left unfinished
 * for any other reason is destroyed (its connection is not reusable).
 *
 * A function returning the generator, not a generator wrapped in another: a provider's `streamChat` returns this
 * one directly, so each batch crosses one generator, not two.
 */
export async function* readEventStream(reading: EventStreamReading): AsyncGenerator<StreamBatch> {
  const response = await reading.open();
  const pending: SseEvent[] = [];
  const parser = new SseParser((event) => pending.push(event));
  let ending: StreamEnding | undefined;
  try {
    // destroyOnReturn: false keeps the socket when we stop at the end marker, so the connection can be reused.
    for await (const bytes of response.body.iterator({ destroyOnReturn: false })) {
      parser.feed(bytes as Buffer);
      const batch: StreamChunk[] = [];
      let failure: unknown;
      try {
        for (const event of pending) {
          if (reading.translate(event, batch)) {
            ending = 'marker';
            break;
          }
        }
      } catch (error) {
        failure = error;
      }
      pending.length = 0;
      if (batch.length > 0) yield batch;
      if (failure !== undefined) throw failure;
      if (ending === 'marker') break;
    }
    ending ??= parser.end() ? 'cut' : 'clean';
  } catch (error) {
    throw toUpstreamError(error, reading.upstream, reading.signal);
  } finally {
    if (ending === 'marker') drainQuietly(response.body);
    else if (ending !== 'clean') discardBody(response.body);
  }
  const last = reading.end(ending);
  if (last !== undefined && last.length > 0) yield last;
}

/**
 * `upstream_stream_truncated` for a stream that did not end as it should: cut in the middle of an event, or ended
 * between events (`unfinished` says what was missing then).
 */
export function truncatedStream(upstream: string, ending: StreamEnding, unfinished: string): GatewayError {
  return new GatewayError('upstream_stream_truncated', {
    upstream,
    reason: ending === 'cut' ? 'the connection closed in the middle of an event' : unfinished,
  });
}

/** The `end` of a stream whose only good end is its end marker (OpenAI's `[DONE]`, Anthropic's `message_stop`). */
export function endAtMarker(upstream: string, unfinished: string): EventStreamReading['end'] {
  return (ending) => {
    if (ending === 'marker') return undefined;
    throw truncatedStream(upstream, ending, unfinished);
  };
}
