/**
 * The real Redis and PostgreSQL of this machine, for the distributed-mode tests. In CI (`REQUIRE_SERVICES=1`,
 * set by .ci/run) a missing service fails the run; elsewhere (a laptop) those tests are skipped with a message
 * saying so.
 */
import type { Browser } from 'playwright-core';
import { connect } from 'node:net';

export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

function connects(host: string, port: number, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/** One answer per service and process: the first probe's, shared by every file's describe. */
const probes = new Map<string, Promise<boolean>>();

/**
 * Whether a TCP connection to the service opens. Up to three tries, 3 s each: on a loaded 2-core CI machine one
 * 1 s probe once timed out against a Redis that was up (the same file's Redis tests had just passed), and in CI a
 * service taken for missing fails the run. A service that is really absent refuses at once, so the tries cost
 * nothing there.
 */
function reachable(url: string): Promise<boolean> {
  let probe = probes.get(url);
  if (!probe) {
    const { hostname, port } = new URL(url);
    probe = (async () => {
      for (let attempt = 0; attempt < 3; attempt++) {
        if (await connects(hostname, Number(port), 3_000)) return true;
      }
      return false;
    })();
    probes.set(url, probe);
  }
  return probe;
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
