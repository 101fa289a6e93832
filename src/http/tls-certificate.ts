import { readFileSync, unwatchFile, watchFile } from 'node:fs';
import type { Server as TlsServer } from 'node:tls';

export interface CertificateFiles {
  certFile: string;
  keyFile: string;
}

export function readCertificate(files: CertificateFiles): { key: Buffer; cert: Buffer } {
  return { key: readFileSync(files.keyFile), cert: readFileSync(files.certFile) };
}

/**
 * Keeps the HTTPS listener's certificate current without a restart: `reload()` (SIGHUP) and a poll of both files'
 * modification times (every 2 s; polling also sees the atomic renames certificate managers do) swap in the new
 * pair with `setSecureContext`. New connections get the new certificate, open ones keep theirs. A pair that does
 * not load (half-written, key and cert not matching) is reported and the old one stays.
 */
export class CertificateReloader {
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly server: TlsServer,
    private readonly files: CertificateFiles,
    private readonly log: { info(fields: object, msg: string): void; warn(fields: object, msg: string): void },
  ) {}

  start(intervalMs = 2_000): void {
    const changed = () => {
      // Both files usually change together: wait for the second before loading the pair.
      if (this.timer) clearTimeout(this.timer);
      this.timer = setTimeout(() => this.reload(), 200);
      this.timer.unref();
    };
    watchFile(this.files.certFile, { interval: intervalMs, persistent: false }, changed);
    watchFile(this.files.keyFile, { interval: intervalMs, persistent: false }, changed);
  }

  reload(): boolean {
    try {
      const pair = readCertificate(this.files);
      this.server.setSecureContext({ ...pair, minVersion: 'TLSv1.2' });
      this.log.info({ cert_file: this.files.certFile }, 'TLS certificate reloaded');
      return true;
    } catch (error) {
      this.log.warn(
        { err: error, cert_file: this.files.certFile },
        'TLS certificate could not be reloaded; keeping the current one',
      );
      return false;
    }
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    unwatchFile(this.files.certFile);
    unwatchFile(this.files.keyFile);
  }
}
