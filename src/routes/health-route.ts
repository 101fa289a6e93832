import type { FastifyReply, FastifyRequest } from 'fastify';
import { publicHealth, type HealthService } from '../core/health/health-service.js';

/**
 * GET /v1/?route=health: no token needed. 200 while the gateway can serve (ok or degraded), 503 while it drains.
 * Without the admin token (or with another credential) the answer is the public view: the status and each check's
 * status only; with it, the whole report (which process, the config file and its last error, latencies, loads,
 * pauses, the price catalog). The answer depends on the Authorization header: `Vary: authorization`.
 */
export function makeHealthHandler(health: HealthService, isAdmin: (authorization: string | undefined) => boolean) {
  return async function handleHealth(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const report = await health.report();
    return reply
      .code(report.status === 'shutting_down' ? 503 : 200)
      .header('cache-control', 'no-store')
      .header('vary', 'authorization')
      .type(request.responseType)
      .send(isAdmin(request.headers.authorization) ? report : publicHealth(report));
  };
}
