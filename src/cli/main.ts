#!/usr/bin/env node
import { ConfigError, loadConfig } from '../config/load.js';
import { openStateStores } from '../store/open-state-stores.js';
import { openSqliteStore } from '../store/sqlite/sqlite-store.js';
import { listDeadLetters, redeliver, sendTestEvent, type CliOutput } from './webhooks-command.js';
import { keysCommand } from './keys-command.js';
import { hashPassword } from '../auth/password.js';

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

const USAGE = `usage: gateway <command>

  keys create --name N --models m1,m2|* [--routes chat,models] [--rpm N] [--tpm N] [--concurrent N]
              [--budget-tokens N] [--budget-usd X] [--budget-period 30d] [--expires 90d]
                                        create a scoped key for this environment (shown once)
  keys list [--json]                    every key, without secrets
  keys rotate <key id> [--grace 24h]    a successor with the same rights; the old key works for the grace period
  keys revoke <key id>                  refused everywhere within 5 s
  users hash-password                   read a password on stdin, print its scrypt hash (for auth.basic_users)

  webhooks test <subscription>          send a signed test event to a subscription and show the answer
  webhooks dead [--limit N] [--json]    list dead letters (oldest first)
  webhooks redeliver <id>... | --all    queue dead letters again (a running gateway sends them)

Configuration comes from the same environment as the server (GATEWAY_ENV, GATEWAY_CONFIG, DATA_DIR, REDIS_URL).`;

/** The operators' command line. Reads the environment here and nowhere else (like main.ts for the server). */
export async function runCli(argv: string[], env: NodeJS.ProcessEnv, io: CliOutput): Promise<number> {
  const [area, command, ...rest] = argv;
  if (area === 'users' && command === 'hash-password') {
    const password = (await readStdin()).replace(/\r?\n$/, '');
    if (password.length < 12) {
      io.err('a password of 12 characters or more, on standard input');
      return 2;
    }
    io.out(await hashPassword(password));
    return 0;
  }
  if ((area !== 'webhooks' && area !== 'keys') || command === undefined) {
    io.err(USAGE);
    return area === undefined || area === 'help' || area === '--help' ? 0 : 2;
  }
  let config;
  try {
    config = loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) {
      io.err(`configuration problems:\n${error.problems.map((p) => `  - ${p}`).join('\n')}`);
      return 2;
    }
    throw error;
  }
  if (area === 'keys') {
    const sqlite = await openSqliteStore(config.dataDir);
    const state = await openStateStores(config, sqlite);
    try {
      return await keysCommand(state.keys, config.environment, [command, ...rest], io);
    } finally {
      await state.close();
      await sqlite.close();
    }
  }
  if (command === 'test') {
    const [subscription] = rest;
    if (!subscription) {
      io.err('usage: gateway webhooks test <subscription>');
      return 2;
    }
    return sendTestEvent(config, subscription, io);
  }
  if (command !== 'dead' && command !== 'redeliver') {
    io.err(USAGE);
    return 2;
  }
  const sqlite = await openSqliteStore(config.dataDir);
  const state = await openStateStores(config, sqlite);
  try {
    if (command === 'dead') {
      const limitAt = rest.indexOf('--limit');
      const limit = limitAt >= 0 ? Number(rest[limitAt + 1]) : 100;
      if (!Number.isInteger(limit) || limit < 1) {
        io.err('--limit takes a whole number of 1 or more');
        return 2;
      }
      return await listDeadLetters(state.outbox, limit, rest.includes('--json'), io);
    }
    return await redeliver(state.outbox, rest.filter((a) => !a.startsWith('--')), rest.includes('--all'), io);
  } finally {
    await state.close();
    await sqlite.close();
  }
}

const io: CliOutput = { out: (line) => process.stdout.write(`${line}\n`), err: (line) => process.stderr.write(`${line}\n`) };
runCli(process.argv.slice(2), process.env, io).then(
  (code) => process.exit(code),
  (error: unknown) => {
    io.err(`gateway: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  },
);
