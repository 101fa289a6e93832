import { randomUUID } from 'node:crypto';
import { CallScope, type ClientWatch } from '../../core/pipeline/call-scope.js';
import type { CompletedChat, StartedStream } from '../../core/pipeline/chat-service.js';
import type { CallInput } from '../../core/pipeline/model-call.js';
import type { ChatTurns } from '../tool-loop.js';
import type { McpToolService, ToolCaller } from '../../core/mcp/tool-service.js';
import type { ChatCompletionChunk, ChatMessage, ChatRequestBody, ToolCall } from '../../providers/provider-contract.js';
import { GatewayError } from '../../errors/gateway-error.js';
import { argumentsObject } from '../tool-arguments.js';
import { GatewayToolLoop } from '../tool-turns/gateway-tool-loop.js';
import { laterToolChoice, loopTurnBody } from '../tool-turns/gateway-turns.js';
import type { McpOffer, OfferedTool } from './mcp-plan.js';
import { failureOutcome, resultOutcome, type McpCallOutcome } from './tool-result.js';

/** One MCP tool call the gateway made for the answer (an `mcp_call` item, an `mcp_tool_use` block). */
export interface McpCallRun {
  /** The item's own id (`mcp_…`). */
  id: string;
  /** The id of the model's call (its tool result answers it). */
  callId: string;
  label: string;
  server: string;
  name: string;
  /** The model's arguments, as JSON text. */
  arguments: string;
  /** Undefined while it runs. */
  outcome: McpCallOutcome | undefined;
  /** The approval request it answers (null: none was asked). */
  approvalRequestId: string | null;
}

/** A call the model made that waits for the caller's approval (an `mcp_approval_request` item). */
export interface McpApprovalRun {
  /** `mcpr_…`: the follow-up's `mcp_approval_response` names it; the call's id in the conversation too. */
  id: string;
  label: string;
  server: string;
  name: string;
  arguments: string;
}

/** A tool call's own bound is its server's `call_timeout_seconds` (at most an hour); this scope only follows the caller. */
const TOOL_SCOPE_MS = 3_600_000;

/** What a stream shows of the loop as it happens. */
export type McpEvent =
  | { kind: 'call_started'; run: McpCallRun }
  | { kind: 'call_done'; run: McpCallRun }
  | { kind: 'approval'; request: McpApprovalRun };

/** A caller's answer to an approval request (`mcp_approval_response`). */
export interface ApprovalAnswer {
  approve: boolean;
  /** Where it is in the request, for an error about it. */
  at: string;
}

/**
 * MCP tools run by the gateway for any upstream: each tool of the request's servers is a function the model is
 * offered (mcp-plan.ts); each turn that calls only such functions gets them run through the tool service (as the
 * caller: its rights, limits, records, the server's timeout) and their results fed back, and the next turn goes; at
 * most `maxCalls` calls (the config's `mcp.max_loop_calls`), then one more turn with `tool_choice: none`. A tool's
 * failure is the call's error and the model's tool result, never the response's failure. A turn that calls a tool
 * needing approval ends the answer: each of its MCP calls becomes an approval request, run when a later request
 * approves it (settleApprovals). A turn that calls a tool of the caller's, or none, is the answer.
 */
export class McpToolLoop extends GatewayToolLoop<McpEvent> {
  readonly calls: McpCallRun[] = [];
  readonly approvals: McpApprovalRun[] = [];

  constructor(
    readonly offer: McpOffer,
    private readonly tools: McpToolService,
    private readonly caller: ToolCaller,
    private readonly maxCalls: number,
  ) {
    super();
  }

  /** The caller's side of the answer (set when its turns start): a tool call in flight is cancelled when it leaves. */
  private client: ClientWatch | undefined;

  override complete(chat: ChatTurns, body: ChatRequestBody, input: CallInput): Promise<CompletedChat> {
    this.client = input.client;
    return super.complete(chat, body, input);
  }

  override stream(chat: ChatTurns, body: ChatRequestBody, input: CallInput): Promise<StartedStream> {
    this.client = input.client;
    return super.stream(chat, body, input);
  }

  get callsLeft(): number {
    return Math.max(0, this.maxCalls - this.calls.length);
  }

  runs(name: string): boolean {
    return this.offer.byFunction.has(name);
  }

  goesOn(calls: readonly ToolCall[], callsTheirs: boolean): boolean {
    return calls.length > 0 && !callsTheirs && this.callsLeft > 0 && !calls.some((call) => this.waits(call));
  }

  /** The answer's calls that wait for approval, each an approval request (calls of a turn past the bound: none). */
  closing(calls: readonly ToolCall[], callsTheirs: boolean): ChatCompletionChunk[] {
    if (callsTheirs || this.callsLeft === 0 || !calls.some((call) => this.waits(call))) return [];
    return calls.flatMap((call) => {
      const tool = this.offer.byFunction.get(call.function.name);
      if (!tool) return [];
      const request: McpApprovalRun = {
        id: `mcpr_${randomUUID().replaceAll('-', '')}`,
        label: tool.label,
        server: tool.server,
        name: tool.tool.name,
        arguments: call.function.arguments,
      };
      this.approvals.push(request);
      return [this.events.chunk({ kind: 'approval', request })];
    });
  }

  turnBody(body: ChatRequestBody, messages: ChatMessage[], turn: number): ChatRequestBody {
    return loopTurnBody(body, messages, turn, () =>
      laterToolChoice(body, this.callsLeft > 0, (name) => this.runs(name)),
    );
  }

  async *answerCalls(calls: readonly ToolCall[]): AsyncGenerator<ChatCompletionChunk, ChatMessage[], undefined> {
    const messages: ChatMessage[] = [];
    for (const call of calls) {
      const tool = this.offer.byFunction.get(call.function.name);
      if (!tool || this.callsLeft === 0) {
        messages.push(toolMessage(call.id, 'Not run: this answer has used all its tool calls. Answer now.'));
        continue;
      }
      const run = this.startRun(tool, call.id, call.function.arguments, null);
      yield this.events.chunk({ kind: 'call_started', run });
      await this.finishRun(run, tool);
      yield this.events.chunk({ kind: 'call_done', run });
      messages.push(toolMessage(call.id, (run.outcome as McpCallOutcome).forModel));
    }
    return messages;
  }

  /**
   * The conversation with every approval request it holds answered, before its first turn: an approved call is run
   * (an `mcp_call` item naming the request), a declined one, or one left unanswered, told to the model as not run.
   * `answers` are the request's `mcp_approval_response` items by the request id they answer; one that answers no
   * request in the conversation is the request's error (400 naming it).
   */
  async settleApprovals(messages: ChatMessage[], answers: ReadonlyMap<string, ApprovalAnswer>): Promise<ChatMessage[]> {
    const answered = new Set(messages.flatMap((m) => (m.role === 'tool' && m.tool_call_id ? [m.tool_call_id] : [])));
    const out: ChatMessage[] = [];
    const used = new Set<string>();
    for (const message of messages) {
      out.push(message);
      for (const call of message.role === 'assistant' ? (message.tool_calls ?? []) : []) {
        const tool = this.offer.byFunction.get(call.function.name);
        if (!call.id.startsWith('mcpr_') || answered.has(call.id)) continue;
        const answer = answers.get(call.id);
        if (answer) used.add(call.id);
        if (!tool || answer?.approve !== true || this.callsLeft === 0) {
          out.push(toolMessage(call.id, 'Not run: the user did not approve this tool call.'));
          continue;
        }
        const run = this.startRun(tool, call.id, call.function.arguments, call.id);
        await this.finishRun(run, tool);
        out.push(toolMessage(call.id, (run.outcome as McpCallOutcome).forModel));
      }
    }
    const unknown = [...answers].find(([id]) => !used.has(id));
    if (unknown)
      throw new GatewayError('validation_failed', {
        field: `${unknown[1].at}.approval_request_id`,
        problem: 'does not match an mcp_approval_request earlier in the conversation that is still unanswered',
      });
    return out;
  }

  private waits(call: ToolCall): boolean {
    return this.offer.byFunction.get(call.function.name)?.needsApproval === true;
  }

  private startRun(tool: OfferedTool, callId: string, args: string, approval: string | null): McpCallRun {
    const run: McpCallRun = {
      id: `mcp_${randomUUID().replaceAll('-', '')}`,
      callId,
      label: tool.label,
      server: tool.server,
      name: tool.tool.name,
      arguments: args,
      outcome: undefined,
      approvalRequestId: approval,
    };
    this.calls.push(run);
    return run;
  }

  /** Makes the call through the tool service; its failure is the run's outcome (told to the model), not thrown. */
  private async finishRun(run: McpCallRun, tool: OfferedTool): Promise<void> {
    const args = run.arguments.trim() === '' ? {} : argumentsObject(run.arguments);
    if (!args) {
      run.outcome = {
        output: null,
        error: { type: 'http_error', code: 400, message: 'validation_failed: the arguments are not a JSON object' },
        forModel: 'The tool call was not made: its arguments must be a JSON object.',
      };
      return;
    }
    // The call is the try in progress: the caller leaving cancels it (the server is told), as it would a model turn.
    const scope = new CallScope(TOOL_SCOPE_MS, `mcp:${tool.server}`);
    this.client?.follow(scope);
    try {
      const answer = await this.tools.callTool(this.caller, tool.server, tool.tool.name, args, {
        signal: scope.signal,
      });
      run.outcome = resultOutcome(answer.result);
    } catch (error) {
      if (this.client?.gone) throw error;
      run.outcome = failureOutcome(error);
    } finally {
      scope.dispose();
    }
  }
}

function toolMessage(id: string, content: string): ChatMessage {
  return { role: 'tool', tool_call_id: id, content };
}
