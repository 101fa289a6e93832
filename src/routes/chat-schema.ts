/** The chat body's schema lives with its surface (surfaces/chat-schema.ts); named here too for older imports. */
export { chatBodySchema } from '../surfaces/chat-schema.js';
