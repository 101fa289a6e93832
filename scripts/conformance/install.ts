// Installs a pinned CLI release into a cache directory outside the project's dependencies
// (`~/.cache/llm-gateway-conformance/<client>-<version>`, or $CONFORMANCE_CACHE), reused when already there.
//
// `npm install --ignore-scripts`: no install script of these packages runs. Claude Code's postinstall only copies
// its native binary from the platform package (an optional dependency) over a placeholder, and npm 11 may skip it
// anyway (allowScripts); the binary is run from the platform package instead, as the package's cli-wrapper.cjs
// does. Codex's and Gemini CLI's `bin` are Node scripts, run with this process's Node (Codex's finds its native
// binary in its own optional dependency). An install goes to a temporary directory first and is moved into place
// only once the CLI answers `--version` with the pinned version, so a broken install is never reused.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PINS, type ClientPin } from './pins.js';

export interface InstalledClient {
  pin: ClientPin;
  dir: string;
  /** The program and its first arguments: the CLI's own arguments follow. */
  command: string[];
}

export function cacheRoot(): string {
  const explicit = process.env.CONFORMANCE_CACHE;
  if (explicit !== undefined && explicit !== '') return explicit;
  return join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'llm-gateway-conformance');
}

const MARKER = '.installed';
const INSTALL_TIMEOUT_MS = 10 * 60_000;

/** `linux-x64`, `linux-x64-musl`, `darwin-arm64`...: the suffix of Claude Code's platform packages. */
function platformKey(): string {
  const report = process.report.getReport() as { header?: { glibcVersionRuntime?: string } };
  const musl = process.platform === 'linux' && report.header?.glibcVersionRuntime === undefined;
  return `${process.platform}-${process.arch}${musl ? '-musl' : ''}`;
}

/** How to start the CLI installed in `dir` (undefined: not found there). */
function commandIn(pin: ClientPin, dir: string): string[] | undefined {
  const modules = join(dir, 'node_modules');
  if (pin.id === 'claude-code') {
    const native = join(modules, `${pin.package}-${platformKey()}`, 'claude');
    if (existsSync(native)) return [native];
    // A postinstall that did run leaves the binary in place of the placeholder (a few kB).
    const placed = join(modules, pin.package, 'bin', 'claude.exe');
    return existsSync(placed) && statSync(placed).size > 1_000_000 ? [placed] : undefined;
  }
  const manifestPath = join(modules, pin.package, 'package.json');
  if (!existsSync(manifestPath)) return undefined;
  const manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as { bin?: string | Record<string, string> };
  const bin = typeof manifest.bin === 'string' ? manifest.bin : Object.values(manifest.bin ?? {})[0];
  if (bin === undefined) return undefined;
  const script = join(modules, pin.package, bin);
  return existsSync(script) ? [process.execPath, script] : undefined;
}

/** Runs a command to its end (bounded), returning its exit code and output. */
export function runCommand(
  command: string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs: number },
): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const [program, ...args] = command;
    const child = spawn(program as string, args, {
      cwd: options.cwd,
      env: options.env ?? process.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    const keep = (chunk: Buffer): void => {
      if (out.length < 1_000_000) out += chunk.toString('utf8');
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs);
    child.once('error', (error) => {
      clearTimeout(timer);
      resolve({ code: null, out: `${out}\n${error.message}` });
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    });
  });
}

/** The npm command that installs `packages` into `prefix`, outside any project: no lock file, no scripts run. */
export function npmInstall(prefix: string, packages: readonly string[]): string[] {
  return [
    ...npmCommand(),
    'install',
    '--prefix',
    prefix,
    '--no-save',
    '--no-package-lock',
    '--no-audit',
    '--no-fund',
    '--ignore-scripts',
    '--loglevel=error',
    ...packages,
  ];
}

/** npm as `npm run` started it (the project's Node), else the one on PATH. */
export function npmCommand(): string[] {
  const execPath = process.env.npm_execpath;
  return execPath !== undefined && execPath.endsWith('.js') ? [process.execPath, execPath] : ['npm'];
}

async function checkVersion(pin: ClientPin, command: string[]): Promise<string | undefined> {
  const home = mkdtempSync(join(tmpdir(), 'conformance-version-'));
  try {
    const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, DISABLE_AUTOUPDATER: '1' };
    const result = await runCommand([...command, '--version'], { env, timeoutMs: 60_000 });
    if (result.code === 0 && result.out.includes(pin.version)) return undefined;
    return `\`${command.join(' ')} --version\` exited ${String(result.code)}: ${result.out.trim().slice(0, 300)}`;
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

/**
 * A client that is the project's own dependency (the MCP SDK's client): run from the project with its tsx (resolved
 * here: the client runs in its own working directory), only at the version the lock file holds.
 */
function projectClient(pin: ClientPin): InstalledClient {
  const own = PINS.find((candidate) => candidate.id === pin.id);
  if (own === undefined || own.version !== pin.version)
    throw new Error(`${pin.package}@${pin.version}: the project depends on ${own?.version ?? 'no version'} of it`);
  const script = fileURLToPath(new URL(`./${pin.id}-client.ts`, import.meta.url));
  return { pin, dir: dirname(script), command: [process.execPath, '--import', import.meta.resolve('tsx'), script] };
}

export async function ensureInstalled(pin: ClientPin, log: (line: string) => void): Promise<InstalledClient> {
  if (pin.project === true) return projectClient(pin);
  const dir = join(cacheRoot(), `${pin.id}-${pin.version}`);
  const ready = existsSync(join(dir, MARKER)) ? commandIn(pin, dir) : undefined;
  if (ready !== undefined) return { pin, dir, command: ready };
  mkdirSync(cacheRoot(), { recursive: true });
  const staging = `${dir}.tmp-${process.pid}`;
  rmSync(staging, { recursive: true, force: true });
  log(`installing ${pin.package}@${pin.version} into ${dir}`);
  const started = Date.now();
  const npm = npmInstall(staging, [`${pin.package}@${pin.version}`]);
  const result = await runCommand(npm, { timeoutMs: INSTALL_TIMEOUT_MS });
  const command = result.code === 0 ? commandIn(pin, staging) : undefined;
  const problem =
    command === undefined
      ? `npm install exited ${String(result.code)}; no CLI found: ${result.out.trim().slice(-500)}`
      : await checkVersion(pin, command);
  if (problem !== undefined) {
    rmSync(staging, { recursive: true, force: true });
    throw new Error(`${pin.package}@${pin.version}: ${problem}`);
  }
  writeFileSync(join(staging, MARKER), `${new Date().toISOString()}\n`);
  rmSync(dir, { recursive: true, force: true });
  renameSync(staging, dir);
  log(`installed ${pin.package}@${pin.version} in ${Math.round((Date.now() - started) / 1000)} s`);
  const installed = commandIn(pin, dir);
  if (installed === undefined) throw new Error(`${pin.package}@${pin.version}: not found in ${dir} after the move`);
  return { pin, dir, command: installed };
}
