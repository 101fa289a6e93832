import { GatewayError } from '../../errors/gateway-error.js';
import { EXPIRES_AFTER_MAX_SECONDS, EXPIRES_AFTER_MIN_SECONDS } from '../../wire/openai-files.js';

const invalid = (field: string, problem: string) => new GatewayError('batch_input_invalid', { field, problem });

/**
 * OpenAI's `output_expires_after` of `POST /v1/batches` (`{anchor: "created_at", seconds}`), checked: the seconds
 * the output and error files live after they are written, or null when it is absent (the files' default age).
 * The seconds are whole, from an hour to 30 days (OpenAI's bounds) and never past the gateway's own longest file
 * age (`files.max_ttl_seconds`, `maxSeconds`). Anything else is a 400 `batch_input_invalid` naming the field.
 */
export function outputTtlOf(value: unknown, maxSeconds: number): number | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'object' || Array.isArray(value))
    throw invalid('output_expires_after', 'an object {anchor: "created_at", seconds}');
  const { anchor, seconds } = value as Record<string, unknown>;
  if (anchor !== 'created_at') throw invalid('output_expires_after.anchor', 'must be "created_at"');
  const max = Math.min(EXPIRES_AFTER_MAX_SECONDS, maxSeconds);
  if (typeof seconds !== 'number' || !Number.isInteger(seconds) || seconds < EXPIRES_AFTER_MIN_SECONDS || seconds > max)
    throw invalid('output_expires_after.seconds', `whole seconds from ${EXPIRES_AFTER_MIN_SECONDS} to ${max}`);
  return seconds;
}
