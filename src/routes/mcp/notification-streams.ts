import { GatewayError } from '../../errors/gateway-error.js';

/** The most notification streams (`GET /mcp`) one process keeps open at once. */
export const MAX_NOTIFICATION_STREAMS = 10_000;
/** How long one stays open; the client opens another (and its credential is checked again). */
export const NOTIFICATION_STREAM_MS = 30 * 60_000;

/**
 * The count of open `GET /mcp` streams: each holds a socket, an SDK server and a keep-alive timer, so their number
 * is bounded (past it 503 `mcp_streams_busy` with Retry-After; no hidden queue) and each one's lifetime too.
 */
export class NotificationStreams {
  private open = 0;
  readonly lifetimeMs = NOTIFICATION_STREAM_MS;

  constructor(private readonly max = MAX_NOTIFICATION_STREAMS) {}

  /** Counts a new stream in, or throws when there are too many; returns its release (idempotent). */
  admit(): () => void {
    if (this.open >= this.max)
      throw new GatewayError('mcp_streams_busy', { open: this.open }, { headers: { 'retry-after': '5' } });
    this.open++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.open--;
    };
  }

  get size(): number {
    return this.open;
  }
}
