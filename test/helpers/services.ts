/**
 * The real Redis and PostgreSQL of this machine, for the distributed-mode tests. In CI (`REQUIRE_SERVICES=1`,
 * set by .ci/run) a missing service fails the run; elsewhere (a laptop) those tests are skipped with a message
 * saying so.
 */
import type { Browser } from 'playwright-core';
import { connect } from 'node:net';

export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

function reachable(url: string): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect({ host: hostname, port: Number(port) });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1_000, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

export const DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/**
 * Returns a skip reason (a string) when the service is not reachable and not required, undefined when tests can
 * run. Throws when it is required (CI) but missing.
 */
async function skipReason(name: string, url: string, variable: string): Promise<string | undefined> {
  if (await reachable(url)) return undefined;
  const message = `${name} not reachable at ${new URL(url).host}: skipping the ${name}-backed tests (set ${variable}, or run ${name}, to include them)`;
  if (process.env.REQUIRE_SERVICES === '1') throw new Error(`${message} — but REQUIRE_SERVICES=1 (CI) requires it`);
  console.log(`# SKIP ${message}`);
  return message;
}

export const redisSkipReason = (): Promise<string | undefined> => skipReason('Redis', REDIS_URL, 'REDIS_URL');
export const postgresSkipReason = (): Promise<string | undefined> =>
  skipReason('PostgreSQL', DATABASE_URL, 'DATABASE_URL');

/** Debian's Chromium (package `chromium`), or the browser CHROMIUM_PATH names. */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** The browser tests' skip reason, like the services': CI (REQUIRE_SERVICES=1, which installs it) fails without it. */
export async function chromiumSkipReason(): Promise<string | undefined> {
  const { existsSync } = await import('node:fs');
  if (existsSync(CHROMIUM_PATH)) return undefined;
  const message = `headless Chromium not found at ${CHROMIUM_PATH}: skipping the browser tests (apt-get install chromium, or set CHROMIUM_PATH)`;
  if (process.env.REQUIRE_SERVICES === '1') throw new Error(`${message} — but REQUIRE_SERVICES=1 (CI) requires it`);
  console.log(`# SKIP ${message}`);
  return message;
}

/** Debian's headless Chromium through playwright-core, kept from calling home (this machine's network is closed: each refused call costs time). */
export async function launchChromium(): Promise<Browser> {
  const { chromium } = await import('playwright-core');
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}
