import type { FastifyReply, FastifyRequest } from 'fastify';
import type { HealthService } from '../core/health-service.js';

/** GET /v1/?route=health: no token. 200 while the gateway can serve (ok or degraded), 503 while it drains. */
export function makeHealthHandler(health: HealthService) {
  return async function handleHealth(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const report = await health.report();
    return reply
      .code(report.status === 'shutting_down' ? 503 : 200)
      .header('cache-control', 'no-store')
      .type(request.responseType)
      .send(report);
  };
}
