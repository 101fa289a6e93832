import { USAGE_ANOMALIES } from '../providers/provider-contract.js';
import type { RequestRecord } from '../request/request-record.js';

/** Distinct (upstream, kind) pairs remembered as logged; past it nothing more is logged (upstream names come from the config). */
const MAX_LOGGED = 1_000;

/**
 * Says once per process, per upstream and kind of anomaly, that an upstream reported a usage figure the gateway
 * had to correct (src/providers/usage-figures.ts): a misbehaving upstream does it on every call, and one line is
 * enough to find it. Every such request is still flagged (`usage_anomaly` in its access line and usage record)
 * and counted (`llmgw_usage_anomalies_total`).
 */
export function usageAnomalyLog(log: {
  warn(fields: Record<string, unknown>, msg: string): void;
}): (record: RequestRecord) => void {
  const logged = new Set<string>();
  return (record) => {
    const anomalies = record.usage?.[USAGE_ANOMALIES];
    if (anomalies === undefined) return;
    for (const kind of anomalies) {
      const key = `${record.upstream ?? ''}\u0000${kind}`;
      if (logged.has(key) || logged.size >= MAX_LOGGED) continue;
      logged.add(key);
      log.warn(
        {
          upstream: record.upstream,
          kind,
          request_id: record.id,
          prompt_tokens: record.usage?.prompt_tokens,
          completion_tokens: record.usage?.completion_tokens,
        },
        'an upstream reported a usage figure out of range; it was corrected (docs/usage.md). Not logged again for this upstream and kind: see usage_anomaly in access lines and usage records, and llmgw_usage_anomalies_total',
      );
    }
  };
}
