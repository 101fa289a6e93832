import { USAGE_ANOMALIES, type Usage, type UsageAnomaly } from '../provider-contract.js';
import { saneTokens, withAnomalies } from '../usage-figures.js';
import { usageOf } from './translate-response.js';

/** The counts of Gemini's `usageMetadata` (src/wire/gemini.ts), each checked like any figure of usage. */
const COUNTS = [
  'promptTokenCount',
  'candidatesTokenCount',
  'totalTokenCount',
  'cachedContentTokenCount',
  'thoughtsTokenCount',
  'toolUsePromptTokenCount',
] as const;

/** The per-modality lists (`[{modality, tokenCount}]`): read by no record, their counts checked all the same. */
const DETAILS = ['promptTokensDetails', 'candidatesTokensDetails', 'cacheTokensDetails', 'toolUsePromptTokensDetails'];
/** The longest list read (Gemini has a handful of modalities; a hostile list of millions is not walked). */
const MAX_DETAILS = 64;

/**
 * A natively forwarded Gemini answer's (or event's) `usageMetadata` read as the gateway's usage, and corrected in
 * place when a figure had to be: then the answer, written again, shows what the record counts (its
 * prompt, its candidates and thoughts adding up to its completion, its total, its cache reads), never `1e+300`,
 * `-5` or `"x"`. A count that is no number is 0, one below zero 0, one too large the bound, a fraction rounded up;
 * a part larger than what it is a part of is cut to it. Undefined when there is no usage object; the usage carries
 * its anomalies (`anomaliesOf`) when anything was corrected, and only then was the object changed.
 */
export function correctedUsageMetadata(metadata: unknown): Usage | undefined {
  if (typeof metadata !== 'object' || metadata === null || Array.isArray(metadata)) return undefined;
  const m = metadata as Record<string, unknown>;
  const found: UsageAnomaly[] = [];
  for (const name of DETAILS) {
    const list = m[name];
    if (!Array.isArray(list)) continue;
    for (const entry of list.slice(0, MAX_DETAILS) as unknown[]) {
      if (typeof entry !== 'object' || entry === null) continue;
      const detail = entry as Record<string, unknown>;
      if (detail.tokenCount !== undefined && detail.tokenCount !== null)
        detail.tokenCount = saneTokens(detail.tokenCount, found);
    }
  }
  const usage = usageOf(m);
  if (usage === undefined) return undefined;
  const anomalies = usage[USAGE_ANOMALIES];
  if (found.length === 0 && anomalies === undefined) return usage;
  for (const name of COUNTS) if (m[name] !== undefined && m[name] !== null) m[name] = saneTokens(m[name]);
  // What the record counts, in Gemini's names (src/providers/usage-shapes.ts geminiUsageOf): each field it had.
  const reasoning = usage.reasoning_tokens ?? 0;
  const shown: Record<(typeof COUNTS)[number], number> = {
    promptTokenCount: usage.prompt_tokens,
    candidatesTokenCount: usage.completion_tokens - reasoning,
    totalTokenCount: usage.total_tokens,
    cachedContentTokenCount: usage.cache_read_tokens ?? 0,
    thoughtsTokenCount: reasoning,
    toolUsePromptTokenCount: saneTokens(m.toolUsePromptTokenCount),
  };
  for (const name of COUNTS) if (m[name] !== undefined && m[name] !== null) m[name] = shown[name];
  return withAnomalies(usage, found);
}
