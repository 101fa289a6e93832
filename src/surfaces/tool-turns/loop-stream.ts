import type { StartedStream } from '../../core/pipeline/chat-service.js';
import type { CallInput, StreamCall } from '../../core/pipeline/model-call.js';
import type { PricedUsage } from '../../core/models/pricing.js';
import type {
  ChatCompletionChunk,
  ChatRequestBody,
  StreamBatch,
  StreamChunk,
} from '../../providers/provider-contract.js';
import type { ChatTurns } from '../tool-loop.js';
import { turnInput, type GatewayTurns } from './gateway-turns.js';
import { TurnReader } from './turn-reader.js';
import { sumPriced, sumUsage } from './usage-sum.js';

/**
 * A gateway tool loop streamed (gateway-turns.ts): the turns' chunks go on as one stream, what the loop does between
 * them shown by internal chunks that carry its events to the surface's encoder (a search started and done, an MCP
 * call started and done), the gateway's calls themselves never shown. Each turn is a stream call of its own: a tool
 * turn is settled when it ends, the last one by the route when the stream ends (`call` settles the turn in progress
 * and sums them). A tool or a later turn that fails ends the stream with its error (the surface's error event).
 */
export async function loopStream(
  loop: GatewayTurns,
  chat: ChatTurns,
  body: ChatRequestBody,
  input: CallInput,
): Promise<StartedStream> {
  const messages = [...body.messages];
  let current = await chat.stream(loop.turnBody(body, messages, 0), turnInput(input, 0));
  const opening = current;
  const settledTurns: Array<PricedUsage | undefined> = [];
  let currentSettled = false;
  let opened = false;

  async function* batches(): AsyncGenerator<StreamBatch, undefined> {
    let next = current.first;
    let reading = true;
    try {
      for (let turn = 0; ; turn++) {
        const reader = new TurnReader(opened, (name) => loop.runs(name));
        while (next.done !== true) {
          const out = reader.read(next.value);
          if (out.length > 0) {
            opened = true;
            yield out;
          }
          next = await current.chunks.next();
        }
        reading = false;
        const calls = reader.gatewayCalls();
        if (!loop.goesOn(calls, reader.callsTheirs)) {
          const closing =
            calls.length > 0 && loop.closing ? loop.closing(calls, reader.callsTheirs).map(eventItem) : [];
          const ending = [...closing, ...reader.ending(loop.earlierUsage)];
          if (ending.length > 0) yield ending;
          return undefined;
        }
        settledTurns.push(current.call.settle(reader.usage));
        currentSettled = true;
        loop.earlierUsage = sumUsage([loop.earlierUsage, reader.usage]);
        await current.call.leaseReturned;
        messages.push({ role: 'assistant', content: reader.text === '' ? null : reader.text, tool_calls: calls });
        const answers = loop.answerCalls(calls);
        for (let step = await answers.next(); ; step = await answers.next()) {
          if (step.done === true) {
            messages.push(...step.value);
            break;
          }
          yield [eventItem(step.value)];
        }
        current = await chat.stream(loop.turnBody(body, messages, turn + 1), turnInput(input, turn + 1));
        currentSettled = false;
        reading = true;
        next = current.first;
      }
    } finally {
      if (reading) await current.chunks.return?.();
    }
  }

  const call: StreamCall = {
    settle(usage, failure, from, delivered) {
      const last = currentSettled ? undefined : current.call.settle(usage, failure, from, delivered);
      currentSettled = true;
      return sumPriced([...settledTurns, last]);
    },
    get leaseReturned() {
      return current.call.leaseReturned;
    },
  };
  const chunks = batches();
  let first: IteratorResult<StreamBatch>;
  try {
    first = await chunks.next();
  } catch (error) {
    call.settle(undefined, error);
    await call.leaseReturned;
    throw error;
  }
  return {
    upstream: opening.upstream,
    headers: opening.headers,
    first,
    chunks,
    call,
    get scope() {
      return current.scope;
    },
  };
}

/** An internal chunk that carries a loop's event (it shows nothing on a surface that does not read it). */
function eventItem(chunk: ChatCompletionChunk): StreamChunk {
  return { chunk, internal: true };
}
