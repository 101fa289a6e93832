// Offline by construction: once the CLIs are installed, the runs happen inside a fresh network namespace
// (`unshare -rn`) whose only interface is loopback, so no client, gateway or mock can reach anything else, whatever
// a client's settings would let it try. Where that is not possible (no unshare, user namespaces off), the runs
// happen on the machine's network and the matrix says offline was not enforced.
import { spawn, spawnSync } from 'node:child_process';
import { track } from './children.js';

export const IN_NETNS_ENV = 'CONFORMANCE_IN_NETNS';

const LOOPBACK_UP = 'ip link set lo up && exec "$0" "$@"';

/** Whether this process already runs in the namespace the suite made. */
export function insideNetns(): boolean {
  return process.env[IN_NETNS_ENV] === '1';
}

/** Whether a loopback-only namespace can be made here (and CONFORMANCE_NETNS is not `off`). */
export function netnsAvailable(): boolean {
  if (process.env.CONFORMANCE_NETNS === 'off') return false;
  const probe = spawnSync('unshare', ['-rn', 'sh', '-c', LOOPBACK_UP, 'true'], { stdio: 'ignore', timeout: 10_000 });
  return probe.error === undefined && probe.status === 0;
}

/** Runs this script again inside a loopback-only namespace, output inherited; resolves with its exit code. */
export function rerunInNetns(script: string, args: string[]): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(
      'unshare',
      ['-rn', 'sh', '-c', LOOPBACK_UP, process.execPath, '--import', 'tsx', script, ...args],
      {
        stdio: 'inherit',
        env: { ...process.env, [IN_NETNS_ENV]: '1' },
      },
    );
    // Interrupted, this process passes the signal on as SIGTERM: the run inside stops its clients and gateways.
    track(child, { signal: 'SIGTERM' });
    child.once('error', () => resolve(2));
    child.once('close', (code, signal) => resolve(signal !== null ? 2 : (code ?? 2)));
  });
}
