/**
 * A child process for the concurrent-migration tests: loads the store code and its driver, prints `ready`, then
 * for each line on stdin (a data directory) opens the embedded store there (which migrates it) and prints
 * `ok <dir> <schema version>` or `fail <dir> <message>`; exits when stdin ends. The tests start several and
 * send each directory to all of them at once, so the migrations really overlap.
 *
 *   node --import tsx test/helpers/migrate-when-told.ts
 */
import 'node:sqlite';
import { createInterface } from 'node:readline';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.js';

const lines = createInterface({ input: process.stdin });
let queue = Promise.resolve();
lines.on('line', (dir) => {
  queue = queue.then(async () => {
    try {
      const store = await openSqliteStore(dir);
      process.stdout.write(`ok ${dir} ${store.schemaVersion}\n`);
      await store.close();
    } catch (error) {
      process.stdout.write(`fail ${dir} ${(error as Error).message.replaceAll('\n', ' ')}\n`);
    }
  });
});
process.stdout.write('ready\n');
