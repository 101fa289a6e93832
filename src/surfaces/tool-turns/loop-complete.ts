import type { CompletedChat } from '../../core/pipeline/chat-service.js';
import type { CallInput } from '../../core/pipeline/model-call.js';
import type { ChatMessage, ChatRequestBody, ToolCall } from '../../providers/provider-contract.js';
import { chatUsageOf } from '../../providers/usage-shapes.js';
import { toolCallFields } from '../tool-arguments.js';
import type { ChatTurns } from '../tool-loop.js';
import { turnInput, type GatewayTurns } from './gateway-turns.js';
import { MAX_GATEWAY_CALLS_PER_TURN } from './turn-reader.js';
import { sumPriced, sumUsage } from './usage-sum.js';

/**
 * A gateway tool loop answered as one JSON completion: each turn that calls only the gateway's tools gets them run
 * (`answerCalls`) and the next turn goes; a turn that calls one of the caller's tools, or none, or that the loop
 * ends (`goesOn` false) is the answer, without the gateway's calls (its finish reason `stop` when none is left). Each
 * turn is a call of its own through the pipeline; the answer's usage is every turn's.
 */
export async function loopComplete(
  loop: GatewayTurns,
  chat: ChatTurns,
  body: ChatRequestBody,
  input: CallInput,
): Promise<CompletedChat> {
  const messages = [...body.messages];
  const turns: CompletedChat[] = [];
  for (let turn = 0; ; turn++) {
    const done = await chat.complete(loop.turnBody(body, messages, turn), turnInput(input, turn));
    turns.push(done);
    const completion = JSON.parse(done.result.body.toString('utf8')) as CompletionShape;
    const choice = completion.choices?.[0];
    const { ours, theirs } = splitCalls(choice?.message?.tool_calls ?? [], (name) => loop.runs(name));
    if (!loop.goesOn(ours, theirs.length > 0)) {
      if (ours.length > 0) loop.closing?.(ours, theirs.length > 0);
      if (choice?.message) finishWithout(choice, theirs);
      const usage = sumUsage(turns.map((t) => t.result.usage));
      if (usage && turns.length > 1) completion.usage = chatUsageOf(usage);
      const text = JSON.stringify(completion);
      return { ...done, result: { body: Buffer.from(text), usage }, usage: sumPriced(turns.map((t) => t.usage)) };
    }
    messages.push({ role: 'assistant', content: choice?.message?.content ?? null, tool_calls: ours });
    const answers = loop.answerCalls(ours);
    let step = await answers.next();
    while (step.done !== true) step = await answers.next(); // the events are a stream's; the loop keeps what ran
    messages.push(...step.value);
  }
}

/** What the driver reads of a completion (the gateway's own JSON: providers normalised it). */
interface CompletionShape {
  choices?: Array<{ message?: ChatMessage; finish_reason?: string | null }>;
  usage?: unknown;
  [field: string]: unknown;
}

/**
 * The calls of the gateway's tools (the first MAX_GATEWAY_CALLS_PER_TURN: the others are dropped, as a stream's
 * are), well formed, and the caller's own as they came. An upstream's call is read field by field
 * (tool-arguments.ts): one without `function`, or with `arguments` sent as an object, is not a TypeError.
 */
export function splitCalls(
  calls: readonly unknown[],
  runs: (name: string) => boolean,
): { ours: ToolCall[]; theirs: ToolCall[] } {
  const ours: ToolCall[] = [];
  const theirs: ToolCall[] = [];
  calls.forEach((call, i) => {
    const fields = toolCallFields(call);
    const name = fields?.name;
    if (name === undefined || !runs(name)) theirs.push(call as ToolCall);
    else if (ours.length < MAX_GATEWAY_CALLS_PER_TURN)
      ours.push({
        id: fields?.id ?? `call_${name}_${i}`,
        type: 'function',
        function: { name, arguments: fields?.arguments ?? '' },
      });
  });
  return { ours, theirs };
}

/** The answer's message without the gateway's calls it was not given; a turn left with no call stopped. */
function finishWithout(choice: NonNullable<CompletionShape['choices']>[number], theirs: ToolCall[]): void {
  const message = choice.message as ChatMessage;
  if (theirs.length > 0) message.tool_calls = theirs;
  else if (message.tool_calls !== undefined) {
    delete message.tool_calls;
    if (choice.finish_reason === 'tool_calls') choice.finish_reason = 'stop';
  }
}
