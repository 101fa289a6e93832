/**
 * A chat body's `reasoning_effort` as Anthropic's thinking settings (pure). Which form a Claude model takes depends
 * on its generation: from Claude 4.6 on, `thinking: {type: "adaptive"}` with `output_config: {effort}` (Opus 4.7
 * and later refuse `enabled`); before it (Sonnet 4.5, Haiku 4.5, 3.x) only `thinking: {type: "enabled",
 * budget_tokens}`, the budget below `max_tokens`. A model whose name does not say its generation (an
 * Anthropic-compatible server's own) gets the budget form, the one such servers take.
 *
 * With thinking on, Anthropic wants the last assistant turn that called tools to start with its (signed) thinking
 * block: a 400 otherwise. A caller of another API never had those blocks (no other API carries them), so in the
 * middle of a tool loop thinking is turned off for that call, as other gateways do; the effort still applies.
 */

import type { AnthropicThinkingConfig } from '../../wire/anthropic.js';

/** The generation from which a Claude model takes adaptive thinking and an effort (major, minor). */
const ADAPTIVE_FROM = [4, 6] as const;

/** Anthropic's smallest thinking budget. */
const MIN_BUDGET = 1024;

/** Budgets of the form with one, by effort; `max_tokens` caps each (docs/messages.md, "Reasoning effort to Anthropic"). */
const BUDGETS: Readonly<Record<string, number>> = {
  minimal: 1024,
  low: 2048,
  medium: 8192,
  high: 16_384,
  xhigh: 32_768,
  max: 65_536,
};

/** Anthropic's effort levels; OpenAI's `minimal` is its `low`. */
const EFFORTS: Readonly<Record<string, string>> = {
  minimal: 'low',
  low: 'low',
  medium: 'medium',
  high: 'high',
  xhigh: 'xhigh',
  max: 'max',
};

/** What to set on the Anthropic request: `thinking`, maybe `output_config`, and `max_tokens` when it had to grow. */
export interface AnthropicThinking {
  thinking: AnthropicThinkingConfig;
  output_config?: { effort: string };
  max_tokens?: number;
}

/** The request the settings are for. */
export interface ThinkingTarget {
  /** The upstream model's name. */
  model: string;
  /** The caller's own limit (undefined: `defaultMaxTokens` applies, and is kept for the answer: it grows by the budget). */
  maxTokens: number | undefined;
  defaultMaxTokens: number;
  /** The last assistant turn called tools and carries no thinking block (see above). */
  unsignedToolTurn: boolean;
}

/**
 * The thinking settings for `effort`, or undefined when there are none to send (no effort, an effort no level
 * matches, or a budget that cannot fit). `none` turns thinking off.
 */
export function thinkingFor(effort: unknown, target: ThinkingTarget): AnthropicThinking | undefined {
  if (typeof effort !== 'string') return undefined;
  if (effort === 'none') return { thinking: { type: 'disabled' } };
  const level = Object.hasOwn(EFFORTS, effort) ? EFFORTS[effort] : undefined;
  if (level === undefined) return undefined;
  const adaptive = takesAdaptive(target.model);
  if (target.unsignedToolTurn)
    return { thinking: { type: 'disabled' }, ...(adaptive ? { output_config: { effort: level } } : {}) };
  if (adaptive) return { thinking: { type: 'adaptive' }, output_config: { effort: level } };
  const wanted = BUDGETS[effort] ?? MIN_BUDGET;
  if (target.maxTokens === undefined)
    return { thinking: { type: 'enabled', budget_tokens: wanted }, max_tokens: target.defaultMaxTokens + wanted };
  // Thinking counts toward max_tokens, as reasoning counts toward OpenAI's max_completion_tokens: the caller's limit stays.
  const budget = Math.min(wanted, target.maxTokens - 1);
  return budget >= MIN_BUDGET ? { thinking: { type: 'enabled', budget_tokens: budget } } : undefined;
}

/** Whether a Claude model name says generation 4.6 or later (`claude-opus-4-6`, `claude-sonnet-5`, `claude-opus-5-5-20261101`). */
export function takesAdaptive(model: string): boolean {
  const match = /^claude-(?:opus|sonnet|haiku|fable|mythos)-(\d{1,2})(?:-(\d{1,2})(?!\d))?/.exec(model);
  if (!match) return false;
  const major = Number(match[1]);
  const minor = match[2] === undefined ? 0 : Number(match[2]);
  return major > ADAPTIVE_FROM[0] || (major === ADAPTIVE_FROM[0] && minor >= ADAPTIVE_FROM[1]);
}
