import { CHAT_DESCRIPTOR } from './chat-descriptor.js';
import type { SurfaceDescriptor } from './descriptor.js';
import { GEMINI_DESCRIPTOR } from './gemini/descriptor.js';
import { MESSAGES_DESCRIPTOR } from './messages/descriptor.js';
import { RESPONSES_DESCRIPTOR } from './responses/descriptor.js';

/**
 * Every API surface the gateway serves, in one place (docs/architecture.md, "API surfaces"). Adding one is a line
 * here; the app mounts, dispatches, shapes errors, names routes, emits events, caches and forwards from these.
 * The order is that of `/v1/?route=` in the index.
 */
export const SURFACES: readonly SurfaceDescriptor[] = [
  CHAT_DESCRIPTOR,
  RESPONSES_DESCRIPTOR,
  MESSAGES_DESCRIPTOR,
  GEMINI_DESCRIPTOR,
];
