/**
 * What the two recorders of client traffic (scripts/record-traffic.ts for the SDKs, scripts/conformance/record.ts for
 * the CLIs) share of the fixture format (test/fixtures/clients/README.md): its name, the placeholder a key becomes,
 * and the headers that carry credentials (replaced whole). The reader's name for the format is
 * test/helpers/client-fixtures.ts FIXTURE_FORMAT.
 */
export { FIXTURE_FORMAT as FORMAT } from '../test/helpers/client-fixtures.js';

export const API_KEY_PLACEHOLDER = '<API_KEY>';

export const CREDENTIAL_HEADERS: ReadonlySet<string> = new Set([
  'authorization',
  'x-api-key',
  'api-key',
  'x-goog-api-key',
  'cookie',
  'proxy-authorization',
  'openai-organization',
  'openai-project',
]);
