import type { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';

/**
 * Bounds what a stdio server may send in one message: the SDK keeps a line until its newline arrives, so a child
 * that writes an endless line would grow the gateway's memory without end. The child's stdout is watched once it
 * is spawned (the transport's `start`); a line longer than `maxBytes` closes the transport (the child is ended and
 * the server reconnected on its next use) through `overflow`.
 */
export function guardStdout(transport: StdioClientTransport, maxBytes: number, overflow: () => void): Transport {
  const start = transport.start.bind(transport);
  transport.start = async () => {
    await start();
    const stdout = (transport as unknown as { _process?: { stdout?: NodeJS.ReadableStream | null } })._process?.stdout;
    let line = 0;
    stdout?.on('data', (chunk: Buffer) => {
      const newline = chunk.lastIndexOf(0x0a);
      line = newline === -1 ? line + chunk.byteLength : chunk.byteLength - newline - 1;
      if (line > maxBytes) {
        line = 0;
        overflow();
        void transport.close();
      }
    });
  };
  return transport;
}
