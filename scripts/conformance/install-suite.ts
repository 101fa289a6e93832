// Installs what runs the Open Responses compliance suite, bun and zod at their pinned versions (pins.ts
// SUITE_RUNTIME), into the CLIs' cache (`~/.cache/llm-gateway-conformance/open-responses-bun-<v>-zod-<v>`, or
// $CONFORMANCE_CACHE), reused when already there. As for the CLIs (install.ts): `npm install --ignore-scripts` into a
// temporary directory, moved into place only once bun answers `--version` with the pinned version.
//
// bun's own package holds a placeholder where its postinstall would copy the binary; the binary is in the platform
// package npm installs beside it (`@oven/bun-<platform>/bin/bun`), or in place of the placeholder when a postinstall
// did run. The suite is run with NODE_PATH pointing at this directory's node_modules, so that its `import "zod"`
// finds the pinned zod without anything being written next to the suite (bun runs it with --no-install).
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cacheRoot, npmInstall, runCommand } from './install.js';
import { SUITE_RUNTIME } from './pins.js';

export interface SuiteRuntime {
  /** The bun binary. */
  bun: string;
  /** Where `zod` is found (NODE_PATH). */
  nodePath: string;
  version: string;
}

const MARKER = '.installed';
const INSTALL_TIMEOUT_MS = 5 * 60_000;
/** A placeholder is a few hundred bytes; the binary ~100 MB. */
const BINARY_MIN_BYTES = 1_000_000;

function isBinary(file: string): boolean {
  return existsSync(file) && statSync(file).size > BINARY_MIN_BYTES;
}

/** The bun binaries found in an install, the platform package's first. */
function bunCandidates(dir: string): string[] {
  const modules = join(dir, 'node_modules');
  const oven = join(modules, '@oven');
  const platform = existsSync(oven)
    ? readdirSync(oven)
        .filter((name) => name.startsWith('bun-'))
        .sort()
        .map((name) => join(oven, name, 'bin', 'bun'))
    : [];
  return [...platform, join(modules, 'bun', 'bin', 'bun.exe')].filter(isBinary);
}

function zodVersion(dir: string): string | undefined {
  const manifest = join(dir, 'node_modules', 'zod', 'package.json');
  if (!existsSync(manifest)) return undefined;
  return (JSON.parse(readFileSync(manifest, 'utf8')) as { version?: string }).version;
}

/** The first bun of the install that answers the pinned version, with the pinned zod beside it. */
async function runtimeIn(dir: string): Promise<SuiteRuntime | string> {
  const zod = zodVersion(dir);
  if (zod !== SUITE_RUNTIME.zod) return `zod ${String(zod)} found, ${SUITE_RUNTIME.zod} wanted`;
  const answers: string[] = [];
  for (const bun of bunCandidates(dir)) {
    const result = await runCommand([bun, '--version'], { timeoutMs: 30_000 });
    if (result.code === 0 && result.out.trim() === SUITE_RUNTIME.bun)
      return { bun, nodePath: join(dir, 'node_modules'), version: SUITE_RUNTIME.bun };
    answers.push(`${bun} --version: exit ${String(result.code)} ${result.out.trim().slice(0, 200)}`);
  }
  return answers.length === 0 ? 'no bun binary found' : answers.join('; ');
}

export async function ensureSuiteRuntime(log: (line: string) => void): Promise<SuiteRuntime> {
  const name = `open-responses-bun-${SUITE_RUNTIME.bun}-zod-${SUITE_RUNTIME.zod}`;
  const dir = join(cacheRoot(), name);
  if (existsSync(join(dir, MARKER))) {
    const ready = await runtimeIn(dir);
    if (typeof ready === 'object') return ready;
  }
  mkdirSync(cacheRoot(), { recursive: true });
  const staging = `${dir}.tmp-${process.pid}`;
  rmSync(staging, { recursive: true, force: true });
  log(`installing bun@${SUITE_RUNTIME.bun} and zod@${SUITE_RUNTIME.zod} into ${dir}`);
  const started = Date.now();
  const npm = npmInstall(staging, [`bun@${SUITE_RUNTIME.bun}`, `zod@${SUITE_RUNTIME.zod}`]);
  const result = await runCommand(npm, { timeoutMs: INSTALL_TIMEOUT_MS });
  const found = result.code === 0 ? await runtimeIn(staging) : `npm install exited ${String(result.code)}`;
  if (typeof found === 'string') {
    rmSync(staging, { recursive: true, force: true });
    throw new Error(`bun@${SUITE_RUNTIME.bun} zod@${SUITE_RUNTIME.zod}: ${found}: ${result.out.trim().slice(-500)}`);
  }
  writeFileSync(join(staging, MARKER), `${new Date().toISOString()}\n`);
  rmSync(dir, { recursive: true, force: true });
  renameSync(staging, dir);
  log(
    `installed bun@${SUITE_RUNTIME.bun} and zod@${SUITE_RUNTIME.zod} in ${Math.round((Date.now() - started) / 1000)} s`,
  );
  const installed = await runtimeIn(dir);
  if (typeof installed === 'string') throw new Error(`bun@${SUITE_RUNTIME.bun}: ${installed} after the move to ${dir}`);
  return installed;
}
