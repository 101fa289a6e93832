import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP } from 'node:net';

/**
 * Server-side request forgery guard for webhook receivers: a callback URL must not reach the gateway's own host or
 * its private network (loopback, RFC 1918, carrier-grade NAT, link-local — cloud metadata at 169.254.169.254 —,
 * unique-local and IPv4-mapped forms of those) unless the config allows it. Checked twice: on the URL at start
 * (literal addresses and `localhost`), and on every address DNS returns at connect time, so a name that
 * resolves (or re-resolves: DNS rebinding) to a private address is refused too.
 */
const PRIVATE = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  PRIVATE.addSubnet(net, prefix, 'ipv4');
}
for (const [net, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
  ['64:ff9b::', 96],
] as const) {
  PRIVATE.addSubnet(net, prefix, 'ipv6');
}

/** True for an address a webhook must not reach without `allow_private_addresses`. */
export function isPrivateAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return PRIVATE.check(address, 'ipv4');
  if (family === 6) {
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
    if (mapped?.[1]) return PRIVATE.check(mapped[1], 'ipv4');
    return PRIVATE.check(address, 'ipv6');
  }
  return false;
}

/** Why a URL's host is refused before any lookup, or undefined when only DNS can tell. */
export function refusedHost(hostname: string): string | undefined {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (host === 'localhost' || host.endsWith('.localhost')) return `"${hostname}" is the gateway's own host`;
  if (isIP(host) !== 0 && isPrivateAddress(host)) return `${hostname} is a loopback, private or link-local address`;
  return undefined;
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/** A `dns.lookup` for undici's connector that fails when any resolved address is private. */
export function guardedLookup(hostname: string, options: object, callback: LookupCallback): void {
  dnsLookup(hostname, { ...options, all: true }, (error, addresses) => {
    if (error) {
      callback(error, []);
      return;
    }
    const list = addresses as LookupAddress[];
    const bad = list.find((a) => isPrivateAddress(a.address));
    if (bad) {
      const refused: NodeJS.ErrnoException = new Error(
        `webhook receiver ${hostname} resolves to ${bad.address}, a loopback, private or link-local address`,
      );
      refused.code = 'EPRIVATEADDRESS';
      callback(refused, []);
      return;
    }
    if ((options as { all?: boolean }).all) callback(null, list);
    else callback(null, list[0]?.address ?? '', list[0]?.family);
  });
}

/** Loopback by name or address (127.0.0.0/8, ::1, localhost): plain HTTP to it never leaves the machine. */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  return host === '::1' || /^::ffff:127\./.test(host);
}
