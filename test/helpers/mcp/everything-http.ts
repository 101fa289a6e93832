/**
 * @modelcontextprotocol/server-everything over HTTP, as its own process on a free port: `streamableHttp` (its
 * Streamable HTTP endpoint at /mcp) or `sse` (the legacy transport: GET /sse, POST /message).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { waitFor } from '../wait.js';

export const EVERYTHING_SERVER = join(
  process.cwd(),
  'node_modules/@modelcontextprotocol/server-everything/dist/index.js',
);

export interface EverythingHttp {
  /** Its endpoint: `/mcp` for Streamable HTTP, `/sse` for the legacy transport. */
  url: string;
  port: number;
  child: ChildProcess;
  close(): Promise<void>;
}

/** A port nobody listens on now (bound, then released). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export async function startEverythingHttp(mode: 'streamableHttp' | 'sse', onPort?: number): Promise<EverythingHttp> {
  const port = onPort ?? (await freePort());
  const child = spawn(process.execPath, [EVERYTHING_SERVER, mode], {
    env: { ...process.env, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  await waitFor(`server-everything (${mode}) listening on ${port}`, async () => {
    if (child.exitCode !== null) throw new Error(`server-everything exited: ${output.slice(0, 500)}`);
    return fetch(`http://127.0.0.1:${port}/`).then(
      () => true,
      () => false,
    );
  });
  return {
    url: `http://127.0.0.1:${port}/${mode === 'sse' ? 'sse' : 'mcp'}`,
    port,
    child,
    close: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
    },
  };
}
