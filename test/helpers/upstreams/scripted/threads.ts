/**
 * Anthropic's message threads (beta `message-threads-2026-08-12`) as a mock upstream holds them: a request with
 * `thread: {type: "create"}` starts one from its whole conversation (its `system` and `tools` kept with it), and the
 * reply's id names the thread as it stands after that reply; `{type: "continue", previous_message_id}` sends only the
 * new messages (no `system`, no `tools`: the thread's are used), appended to what the thread holds. A thread the mock
 * does not hold is Anthropic's `404 thread_not_found`, which the SDKs recover from by sending the whole conversation
 * under a new thread.
 */
import { messageContentOf, type ScriptedRefusal, type ScriptedReply } from './replies.js';

type Json = Record<string, unknown>;

/** The fields a thread keeps from the request that creates it; a `continue` may not send them. */
const CREATE_ONLY = ['system', 'tools'] as const;

export const THREAD_NOT_FOUND: ScriptedRefusal = {
  type: 'refusal',
  status: 404,
  error: {
    type: 'not_found_error',
    message: 'No thread holds this previous_message_id.',
    details: { error_code: 'thread_not_found' },
  },
};

export class ScriptedThreads {
  /** Each reply's id, and the conversation through that reply with the fields its thread was created with. */
  private readonly held = new Map<string, { fields: Json; messages: unknown[] }>();

  /**
   * The whole request a threaded call stands for (what the model reads): a `create` as it is, a `continue` as the
   * thread's conversation followed by the call's messages, with the thread's `system` and `tools`; or the refusal of
   * a thread not held.
   */
  whole(body: Json): { whole: Json } | { refusal: ScriptedRefusal } {
    const thread = body.thread as { type?: unknown; previous_message_id?: unknown };
    if (thread.type !== 'continue') return { whole: body };
    const held = this.held.get(String(thread.previous_message_id));
    if (held === undefined) return { refusal: THREAD_NOT_FOUND };
    const messages = Array.isArray(body.messages) ? (body.messages as unknown[]) : [];
    return { whole: { ...body, ...held.fields, messages: [...held.messages, ...messages] } };
  }

  /** Holds the conversation of `whole` followed by `reply`, under the reply's id. */
  hold(id: string, whole: Json, reply: ScriptedReply): void {
    const fields: Json = {};
    for (const field of CREATE_ONLY) if (whole[field] !== undefined) fields[field] = whole[field];
    const messages = Array.isArray(whole.messages) ? (whole.messages as unknown[]) : [];
    this.held.set(id, {
      fields,
      messages: [...messages, { role: 'assistant', content: messageContentOf(reply) }],
    });
  }
}
