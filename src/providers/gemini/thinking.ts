import type { GeminiThinkingConfig, GeminiThinkingLevel } from '../../wire/gemini.js';
import { THINKING_BUDGET_BY_EFFORT, THINKING_LEVEL_BY_EFFORT } from '../../wire/gemini-values.js';

/**
 * Gemini's thinking, as far as a chat body can speak of it (pure). A `reasoning_effort` is
 * `generationConfig.thinkingConfig`: Gemini 3 and later take a `thinkingLevel`; 2.5 a `thinkingBudget` in tokens
 * (sending both is a 400); earlier models do not think and get nothing. A name that says no version (a tuned model,
 * Gemma) gets nothing either: the model's own default applies. And the signature Gemini 3 wants on a function call.
 */

/** Levels by effort for Gemini 3 and later, budgets for 2.5 (src/wire/gemini-values.ts, where the inverse is too). */
const LEVELS = THINKING_LEVEL_BY_EFFORT;
const BUDGETS = THINKING_BUDGET_BY_EFFORT;

/** Pro models take neither MINIMAL (Gemini 3) nor a budget of 0 (2.5; Pro thinks at least 128 tokens): their lowest instead. */
const PRO_LOWEST = { level: 'LOW', budget: 128 } as const;

/** The `thinkingConfig` for `effort` on `model`, or undefined when there is none to send. */
export function thinkingConfigFor(effort: unknown, model: string): GeminiThinkingConfig | undefined {
  if (typeof effort !== 'string' || !Object.hasOwn(LEVELS, effort)) return undefined;
  const version = geminiVersion(model);
  if (!version) return undefined;
  const [major, minor] = version;
  const pro = /-pro\b/.test(model);
  if (major >= 3) {
    const level = LEVELS[effort] as GeminiThinkingLevel;
    return { thinkingLevel: pro && level === 'MINIMAL' ? PRO_LOWEST.level : level };
  }
  if (major === 2 && minor >= 5) {
    const budget = BUDGETS[effort] as number;
    return { thinkingBudget: pro ? Math.max(budget, PRO_LOWEST.budget) : budget };
  }
  return undefined;
}

/** A Gemini model's version from its name (`gemini-3.1-pro-preview`: [3, 1]), or undefined when it says none. */
export function geminiVersion(model: string): [number, number] | undefined {
  const version = /^(?:models\/)?gemini-(\d{1,2})(?:\.(\d{1,2}))?/.exec(model);
  return version ? [Number(version[1]), version[2] === undefined ? 0 : Number(version[2])] : undefined;
}

/**
 * Gemini 3 signs the function calls it makes (`thoughtSignature`) and refuses a history whose calls of the current
 * turn come back unsigned (400 "Function call is missing a thought_signature"). A chat history has nowhere to keep
 * the signature, so the first call of each model turn the gateway rebuilds carries the value Google documents for
 * a history another system wrote, which skips the check (ai.google.dev/gemini-api/docs/thought-signatures).
 */
export const UNSIGNED_CALL_SIGNATURE = 'skip_thought_signature_validator';

/** Whether `model` wants its function calls signed (Gemini 3 and later). */
export function signsFunctionCalls(model: string): boolean {
  return (geminiVersion(model)?.[0] ?? 0) >= 3;
}
