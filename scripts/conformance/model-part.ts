// The model's part a mock upstream plays when no task is set (the Open Responses compliance suite: open-responses.ts):
// it follows a system prompt, calls an offered weather tool when asked about the weather, answers after a tool
// result, describes the image it received and answers from the conversation's history. Every answer shows what
// reached the upstream (the system text's effect, the image's media type and size, the name said earlier), so a
// test through the gateway proves the translation carried it.
import type { ImageSeen } from './conversation.js';
import type { ParsedTurn, Reply } from './task.js';

/** The longest piece of a tool result quoted back. */
const QUOTE_LIMIT = 2_000;

/** `San Francisco, CA` for the suite's question; the place named after "in" otherwise. */
export function locationOf(text: string): string {
  if (/san francisco/i.test(text)) return 'San Francisco, CA';
  return /\bin ([A-Z][\w .,'-]*?)\s*[?.!]*$/.exec(text)?.[1] ?? 'San Francisco, CA';
}

function describe(image: ImageSeen): string {
  if (image.bytes !== undefined) return `an ${image.mediaType} image of ${image.bytes} bytes`;
  return `an image of type ${image.mediaType} at ${image.url ?? 'an address'}`;
}

/** The answer to the last user text, from the conversation (what it says back when no rule fits). */
function answerOf(turn: ParsedTurn): string {
  const { userTexts, images } = turn.conversation;
  const last = userTexts.at(-1) ?? '';
  if (images.length > 0) return `I see ${images.map(describe).join(' and ')}.`;
  if (/\bwhat is my name\b/i.test(last)) {
    const said = userTexts
      .slice(0, -1)
      .map((text) => /\bmy name is ([\p{L}'-]+)/iu.exec(text)?.[1])
      .filter((name) => name !== undefined)
      .at(-1);
    return said === undefined ? 'You have not told me your name.' : `Your name is ${said}.`;
  }
  const count = /\bcount from (\d+) to (\d+)/i.exec(last);
  if (count !== null) {
    const from = Number(count[1]);
    const to = Math.min(Number(count[2]), from + 100);
    return Array.from({ length: Math.max(to - from + 1, 0) }, (_, index) => String(from + index)).join(', ');
  }
  if (/\bhello\b/i.test(last)) return 'Hello there, friend.';
  if (last === '') return 'OK';
  return `You said: ${last.slice(0, 200)}`;
}

/** The model's turn: a weather call when one is due, else a text, in pirate speak when the system text asks so. */
export function playModel(turn: ParsedTurn): Reply {
  if (turn.toolResults.length > 0) {
    const quoted = turn.toolResults.join('\n').trim().slice(0, QUOTE_LIMIT);
    return { kind: 'text', text: `The tool said: ${quoted}` };
  }
  const last = turn.conversation.userTexts.at(-1) ?? '';
  const weather = turn.tools.find((tool) => /weather/i.test(tool.name) && tool.freeform !== true);
  if (weather !== undefined && /weather/i.test(last))
    return { kind: 'tool', tool: weather, args: { location: locationOf(last) } };
  const answer = answerOf(turn);
  if (/\bpirate\b/i.test(turn.conversation.system)) return { kind: 'text', text: `Ahoy, matey! ${answer} Arr!` };
  return { kind: 'text', text: answer };
}
