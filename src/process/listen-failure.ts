/**
 * A human sentence for an error of `listen()` that no retry can fix, or undefined for any other error. The
 * operator sees which address failed and which setting changes it, instead of a stack trace.
 */
export function listenFailure(error: unknown, host: string, port: number): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  const where = `${host.includes(':') ? `[${host}]` : host}:${port}`;
  switch (code) {
    case 'EADDRINUSE':
      return `cannot listen on ${where}: port ${port} is already in use by another process. Set PORT to a free port (or stop the process that holds it).`;
    case 'EACCES':
      return `cannot listen on ${where}: permission denied (ports below 1024 need privileges). Set PORT to a port above 1023.`;
    case 'EADDRNOTAVAIL':
      return `cannot listen on ${where}: ${host} is not an address of this machine. Set HOST to one of its addresses (0.0.0.0 for all).`;
    default:
      return undefined;
  }
}
