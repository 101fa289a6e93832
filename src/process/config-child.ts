/**
 * The entry point of the child process that reads the configuration for a gateway that may run workers
 * (config-from-child.ts starts it). It validates the environment and the config file with zod, provisions the
 * development admin token and, when there will be workers, runs the SQLite migrations once before they race for
 * the file; then it hands the validated config to its parent over the IPC channel and exits. The cluster primary
 * itself thus never loads zod, the config sections or node:sqlite (the primary's idle footprint).
 */
import { loadConfig } from '../config/load.js';
import { ConfigError } from '../config/config-error.js';
import { provisionAdminToken } from '../config/admin-token.js';
import { openSqliteStore } from '../store/sqlite/sqlite-store.js';
import type { ChildReply } from './config-from-child.js';

async function prepare(version: string): Promise<ChildReply> {
  try {
    const config = provisionAdminToken(loadConfig(process.env, { version }));
    // Migrations run once here, before the workers open the file.
    if (config.workers > 1) await (await openSqliteStore(config.dataDir)).close();
    return { config };
  } catch (error) {
    if (error instanceof ConfigError) return { problems: error.problems };
    return { error: (error as Error).stack ?? String(error) };
  }
}

if (process.send) {
  const reply = await prepare(process.argv[2] ?? '0.0.0');
  process.send(reply, () => process.disconnect());
}
