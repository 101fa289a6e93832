/**
 * A chat body's `reasoning_effort` as Gemini's `generationConfig.thinkingConfig` (pure). Gemini 3 and later take
 * a `thinkingLevel`; 2.5 a `thinkingBudget` in tokens (sending both is a 400); earlier models do not think and get
 * nothing. A name that says no version (a tuned model, Gemma) gets nothing either: the model's own default applies.
 */

/** Levels by effort for Gemini 3 and later; `none` is the lowest level (thinking cannot be turned off there). */
const LEVELS: Readonly<Record<string, string>> = { none: 'MINIMAL', minimal: 'MINIMAL', low: 'LOW', medium: 'MEDIUM', high: 'HIGH', xhigh: 'HIGH', max: 'HIGH' };

/** Budgets by effort for Gemini 2.5 (0 turns thinking off on Flash; Pro cannot, and thinks at least 128 tokens). */
const BUDGETS: Readonly<Record<string, number>> = { none: 0, minimal: 512, low: 1024, medium: 8192, high: 16_384, xhigh: 24_576, max: 24_576 };

/** Pro models take neither MINIMAL (Gemini 3) nor a budget of 0 (2.5): their lowest instead. */
const PRO_LOWEST = { level: 'LOW', budget: 128 } as const;

/** The `thinkingConfig` for `effort` on `model`, or undefined when there is none to send. */
export function thinkingConfigFor(effort: unknown, model: string): Record<string, unknown> | undefined {
  if (typeof effort !== 'string' || !Object.hasOwn(LEVELS, effort)) return undefined;
  const version = /^(?:models\/)?gemini-(\d{1,2})(?:\.(\d{1,2}))?/.exec(model);
  if (!version) return undefined;
  const major = Number(version[1]);
  const minor = version[2] === undefined ? 0 : Number(version[2]);
  const pro = /-pro\b/.test(model);
  if (major >= 3) {
    const level = LEVELS[effort] as string;
    return { thinkingLevel: pro && level === 'MINIMAL' ? PRO_LOWEST.level : level };
  }
  if (major === 2 && minor >= 5) {
    const budget = BUDGETS[effort] as number;
    return { thinkingBudget: pro ? Math.max(budget, PRO_LOWEST.budget) : budget };
  }
  return undefined;
}
