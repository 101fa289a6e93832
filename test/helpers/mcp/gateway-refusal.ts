import assert from 'node:assert/strict';
import { isGatewayError, type GatewayError } from '../../../src/errors/gateway-error.js';

/** The GatewayError a promise rejects with; fails the test when it resolves or rejects with anything else. */
export async function gatewayRefusal(promise: Promise<unknown>): Promise<GatewayError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(isGatewayError(error), `not a GatewayError: ${String(error)}`);
    return error;
  }
  assert.fail('the call was admitted');
}
