import { DONE_FRAME, formatEvent } from '../http/sse.js';
import type { ChatRequestBody } from '../providers/provider-contract.js';
import type { ApiSurface, StreamEncoder } from './surface.js';

/** Chat completions, the gateway's own model: nothing to translate; chunks leave as the provider normalised them. */
const CHAT_ENCODER: StreamEncoder = {
  open: () => '',
  chunk: (item) => (item.internal === true ? '' : formatEvent(item.json ?? JSON.stringify(item.chunk))),
  end: () => DONE_FRAME,
  fail: (error, shape) => shape.streamFrame(error.toBody(), error.status, error.headers),
};

export const CHAT_SURFACE: ApiSurface = {
  route: 'chat',
  forwardsRawBody: true,
  toChat: (body) => body as ChatRequestBody,
  answer: (completion) => completion,
  encoder: () => CHAT_ENCODER, // stateless: one for every stream
  isCompleteEnd: (frame) => frame === DONE_FRAME,
};
