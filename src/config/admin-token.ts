import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync, chmodSync } from 'node:fs';
import { join } from 'node:path';
import type { GatewayConfig } from './types.js';
import { ConfigError } from './config-error.js';
import { readFailure } from './bounded-file.js';
import { EMPTY_SECRET, SecretTextError, readSecretFile } from './secret-ref.js';

export const ADMIN_TOKEN_FILE = 'admin-token';

/**
 * Makes sure the gateway has an administrator token. In staging and prod a missing ADMIN_TOKEN is fatal: a
 * gateway must never come up unprotected or with a token nobody chose. In dev a random token is generated once
 * and kept in the data directory with mode 0600, so restarts keep it and only the machine's owner can read it.
 */
export function provisionAdminToken(config: GatewayConfig): GatewayConfig {
  if (config.adminTokens.length > 0) return config;
  if (config.environment !== 'dev') {
    // loadConfig already refuses this; kept so no caller can skip that check by building a config by hand.
    throw new ConfigError([`ADMIN_TOKEN: required when GATEWAY_ENV=${config.environment}`]);
  }
  const file = join(config.dataDir, ADMIN_TOKEN_FILE);
  const existing = readTokenFile(file);
  if (existing) {
    chmodSync(file, 0o600); // someone may have loosened it; the token is only for the machine's owner
    return { ...config, adminTokens: [existing], adminTokenSource: 'data-dir', adminTokenFile: file };
  }

  mkdirSync(config.dataDir, { recursive: true });
  const token = `gw-dev-${randomBytes(24).toString('base64url')}`;
  writeFileSync(file, `${token}\n`, { mode: 0o600 });
  chmodSync(file, 0o600); // writeFileSync's mode is filtered by the umask; make it exact.
  return { ...config, adminTokens: [token], adminTokenSource: 'generated', adminTokenFile: file };
}

/**
 * The kept token; undefined when there is none yet (no file, or an empty one). A file that is there but is not a
 * token (not a regular file, over 64 KiB, more than one line) stops the start naming it: it is never overwritten.
 */
function readTokenFile(file: string): string | undefined {
  try {
    return readSecretFile(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    if (error instanceof SecretTextError && error.message === EMPTY_SECRET) return undefined;
    const reason = error instanceof SecretTextError ? error.message : `cannot be read (${readFailure(error)})`;
    throw new ConfigError([`${file}: the development admin token file ${reason}`]);
  }
}
