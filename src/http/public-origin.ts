import { isIPv4, isIPv6 } from 'node:net';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { GatewayError } from '../errors/gateway-error.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** `server.public_base_url`: the origin (and path prefix) of the URLs the gateway gives out; undefined: the request's. */
    publicBaseUrl: string | undefined;
  }
}

/** Sets the origin every URL the gateway gives out starts with (`server.public_base_url`; none: the request's). */
export function decoratePublicOrigin(app: FastifyInstance, publicBaseUrl: string | undefined): void {
  app.decorate('publicBaseUrl', publicBaseUrl?.replace(/\/+$/, ''));
}

/** One DNS label (letters, digits, `-`, `_` for service names), not starting or ending with `-`. */
const LABEL = /^[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?$/;
const PORT = /^[0-9]{1,5}$/;

/** Why `host` is not `hostname[:port]` or `[IPv6][:port]` (RFC 9110 section 7.2, RFC 3986 section 3.2.2); undefined: it is. */
export function hostProblem(host: string): string | undefined {
  if (host === '') return 'missing';
  if (host.length > 261) return 'longer than a host name and a port';
  let name: string;
  let port: string | undefined;
  if (host.startsWith('[')) {
    const end = host.indexOf(']');
    if (end === -1 || !isIPv6(host.slice(1, end))) return 'not a valid IPv6 literal';
    name = host.slice(0, end + 1);
    const rest = host.slice(end + 1);
    if (rest !== '' && !rest.startsWith(':')) return 'only a port may follow an IPv6 literal';
    port = rest === '' ? undefined : rest.slice(1);
  } else {
    const colon = host.lastIndexOf(':');
    name = colon === -1 ? host : host.slice(0, colon);
    port = colon === -1 ? undefined : host.slice(colon + 1);
    const bare = name.endsWith('.') ? name.slice(0, -1) : name;
    const labels = bare.split('.');
    // All digits and dots is an IPv4 address or nothing (a URL parser refuses `999.1.1.1`).
    const numeric = /^[0-9.]+$/.test(bare);
    if (name.length > 254 || !labels.every((label) => LABEL.test(label)) || (numeric && !isIPv4(bare)))
      return 'not a host name, an IPv4 address or a bracketed IPv6 address, with an optional port';
  }
  if (port !== undefined && (!PORT.test(port) || Number(port) < 1 || Number(port) > 65535))
    return 'the port is not a number from 1 to 65535';
  return urlParserProblem(name);
}

/**
 * Why a URL parser (WHATWG's, as every SDK and browser uses) would not read `name` as that same host; undefined:
 * it would. It refuses an IPv6 zone id (`[fe80::1%eth0]`) and a name whose last label is a number (`example.123`,
 * `a.0x1`), and reads `0x7f.1` as 127.0.0.1: a URL built on such a name cannot be fetched,
 * or names another host than the one the caller gave.
 */
function urlParserProblem(name: string): string | undefined {
  let parsed: string;
  try {
    parsed = new URL(`http://${name}`).hostname;
  } catch {
    return 'not a host a URL can name (an IPv6 zone id, or a last label that is a number)';
  }
  if (!name.startsWith('[') && parsed !== name.toLowerCase())
    return `read by a URL parser as another host (${parsed.slice(0, 100)}): give the host in its usual form`;
  return undefined;
}

/**
 * The origin the URLs this gateway gives out start with (Anthropic's batch `results_url`, a presigned upload's
 * `url`): `server.public_base_url` when set; otherwise the scheme and host the caller reached it by (its Host, or a
 * trusted proxy's X-Forwarded-Host and -Proto), accepted only when they are syntactically a scheme and a host, so
 * no header can turn the URL into one pointing elsewhere (`Host: evil.example:666/x?y#`): 400 `invalid_header`.
 */
export function publicOrigin(request: FastifyRequest): string {
  const configured = request.server.publicBaseUrl;
  if (configured !== undefined) return configured;
  const forwarded = request.host !== (request.headers.host ?? '');
  const protocol = (request.protocol as string | undefined)?.toLowerCase();
  if (protocol !== 'http' && protocol !== 'https')
    throw new GatewayError('invalid_header', {
      header: 'x-forwarded-proto',
      problem: 'must be http or https',
      received: String(protocol).slice(0, 100),
    });
  const problem = hostProblem(request.host);
  if (problem)
    throw new GatewayError('invalid_header', {
      header: forwarded ? 'x-forwarded-host' : 'host',
      problem: `${problem}: the gateway builds the URLs it gives out from it (or set server.public_base_url)`,
      received: request.host.slice(0, 100),
    });
  return `${protocol}://${request.host}`;
}
