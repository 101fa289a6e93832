import type { FastifyInstance } from 'fastify';
import type { Server as TlsServer } from 'node:tls';
import type { GatewayConfig } from '../config/types.js';
import { CertificateReloader } from '../http/tls-certificate.js';

/** Reloads the TLS certificate on SIGHUP and when its files change (HTTPS only); stops with the app. */
export function wireCertificates(app: FastifyInstance, config: GatewayConfig): CertificateReloader | undefined {
  if (!config.tls) return undefined;
  const certificates = new CertificateReloader(app.server as unknown as TlsServer, config.tls, app.log);
  certificates.start();
  app.addHook('onClose', async () => {
    certificates.stop();
  });
  return certificates;
}
