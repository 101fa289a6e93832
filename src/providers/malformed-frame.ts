import { GatewayError } from '../errors/gateway-error.js';
import { scrubCut } from '../secrets/redact.js';

const FRAME_PREVIEW_CHARS = 120;

/**
 * `upstream_stream_malformed` for a frame an upstream stream should never carry (the OpenAI-compatible decoder's
 * frames, the native passthroughs' events), with the start of the frame for the operator.
 */
export function malformedFrame(
  upstream: string,
  reason: string,
  frame: string,
  secrets: ReadonlyArray<string | undefined>,
): GatewayError {
  return new GatewayError('upstream_stream_malformed', {
    upstream,
    reason,
    frame_preview: framePreview(frame, secrets),
  });
}

/**
 * The start of a bad frame. Scrubbed before it is cut (a key straddling the cut would leave a piece), over a
 * window a little longer than the preview so a frame of megabytes is not scanned whole.
 */
function framePreview(frame: string, secrets: ReadonlyArray<string | undefined>): string {
  return scrubCut(frame, secrets, FRAME_PREVIEW_CHARS);
}
