#!/usr/bin/env node
// The `gateway` command (package bin). All the work is in run-cli.ts; this file only binds it to the process.
import { runCli } from './run-cli.js';
import type { CliOutput } from './webhooks-command.js';
import { unsupportedNode } from '../process/node-version.js';

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

const io: CliOutput = {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
};
// `usage tail` runs until Ctrl-C or SIGTERM and then ends cleanly (exit 0); every other command keeps Node's
// default (a signal ends it at once).
const unsupported = unsupportedNode();
if (unsupported) {
  io.err(`gateway: ${unsupported}`);
  process.exit(1);
}
const argv = process.argv.slice(2);
const stop = new AbortController();
if (argv[0] === 'usage' && argv[1] === 'tail')
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => stop.abort());
runCli(argv, process.env, io, readStdin, stop.signal).then(
  (code) => process.exit(code),
  (error: unknown) => {
    io.err(`gateway: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  },
);
