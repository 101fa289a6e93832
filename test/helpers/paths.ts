import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository's root, wherever the test that asks sits under test/. */
export const PROJECT_ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** Where browser tests leave screenshots and traces (not committed). */
export const TEST_ARTIFACTS = join(PROJECT_ROOT, 'test-artifacts');
