import { GatewayError } from '../errors/gateway-error.js';
import { ProblemList } from '../http/validation-details.js';
import type { ChatRequestBody } from '../providers/provider-contract.js';

/**
 * The rules of a conversation that a JSON Schema states badly (they depend on the role): each message has text
 * unless it is an assistant turn that calls tools; a tool result names the call it answers, and that call must
 * have been made earlier in the conversation, so function calling round-trips stay consistent.
 */
export function checkConversation(body: ChatRequestBody): void {
  const problems = new ProblemList();
  const calledIds = new Set<string>();
  body.messages.forEach((message, i) => {
    const at = `messages[${i}]`;
    const hasContent = message.content !== undefined && message.content !== null;
    if (message.role === 'assistant') {
      for (const call of message.tool_calls ?? []) calledIds.add(call.id);
      if (!hasContent && (message.tool_calls?.length ?? 0) === 0) {
        problems.add({ field: `${at}.content`, problem: 'is required unless the assistant message has tool_calls' });
      }
      return;
    }
    if (message.tool_calls !== undefined) {
      problems.add({ field: `${at}.tool_calls`, problem: 'is only allowed on assistant messages' });
    }
    if (!hasContent) problems.add({ field: `${at}.content`, problem: `is required for role "${message.role}"` });
    if (message.role === 'tool') {
      if (message.tool_call_id === undefined) {
        problems.add({ field: `${at}.tool_call_id`, problem: 'is required for role "tool"' });
      } else if (!calledIds.has(message.tool_call_id)) {
        problems.add({
          field: `${at}.tool_call_id`,
          problem: 'does not match the id of a tool call made by an earlier assistant message',
        });
      }
    }
  });
  if (!problems.empty) throw new GatewayError('validation_failed', problems.details());
}

const MAX_UPSTREAM_KEY_LENGTH = 1024;

/** X-Upstream-Key: absent, or a single printable token. Its value is never echoed, even when refused. */
export function readUpstreamKey(header: string | string[] | undefined): string | undefined {
  if (header === undefined) return undefined;
  const value = Array.isArray(header) ? undefined : header.trim();
  if (value === undefined || value === '' || value.length > MAX_UPSTREAM_KEY_LENGTH || !/^[\x21-\x7e]+$/.test(value)) {
    throw new GatewayError('invalid_header', {
      header: 'x-upstream-key',
      problem: `must be one printable token of at most ${MAX_UPSTREAM_KEY_LENGTH} characters, sent once`,
    });
  }
  return value;
}
