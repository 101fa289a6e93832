import { GatewayError } from '../errors/gateway-error.js';

/**
 * The page size a caller asked for in `limit`: plain decimal digits only, from 1 to `max`. `Number()` alone
 * would take `1e2`, `0x10`, ` 5` or `5.0` as sizes; a query parameter is text, and a size written any other
 * way than as digits is a mistake worth a 400 that names it. One rule for every paged route.
 */
export function parsePageLimit(raw: unknown, page: { fallback: number; max: number }): number {
  if (raw === undefined) return page.fallback;
  const value = typeof raw === 'string' && /^\d{1,6}$/.test(raw) ? Number(raw) : Number.NaN;
  if (!(value >= 1 && value <= page.max)) {
    throw new GatewayError('invalid_query_parameter', {
      parameter: 'limit',
      problem: `must be a whole number from 1 to ${page.max}, in decimal digits`,
    });
  }
  return value;
}
