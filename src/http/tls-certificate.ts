import { unwatchFile, watchFile } from 'node:fs';
import type { Server as TlsServer } from 'node:tls';
import { FILE_BOUNDS, readBoundedFile, readBoundedFileSync, readFailure } from '../config/bounded-file.js';
import { ConfigError } from '../config/config-error.js';

export interface CertificateFiles {
  certFile: string;
  keyFile: string;
}

/** The pair, at start (before serving): regular files of at most 1 MiB each; a ConfigError names the file. */
export function readCertificate(files: CertificateFiles): { key: Buffer; cert: Buffer } {
  const read = (field: string, path: string) => {
    try {
      return readBoundedFileSync(path, FILE_BOUNDS.certificate);
    } catch (error) {
      throw unreadable(field, path, error);
    }
  };
  return { key: read('server.tls.key_file', files.keyFile), cert: read('server.tls.cert_file', files.certFile) };
}

/** The pair again, while serving: the same bounds, read off the event loop. */
async function rereadCertificate(files: CertificateFiles): Promise<{ key: Buffer; cert: Buffer }> {
  const read = (field: string, path: string) =>
    readBoundedFile(path, FILE_BOUNDS.certificate).catch((error: unknown) => {
      throw unreadable(field, path, error);
    });
  const [key, cert] = await Promise.all([
    read('server.tls.key_file', files.keyFile),
    read('server.tls.cert_file', files.certFile),
  ]);
  return { key, cert };
}

const unreadable = (field: string, path: string, error: unknown) =>
  new ConfigError([`${field}: cannot read ${path} (${readFailure(error)})`]);

/**
 * Keeps the HTTPS listener's certificate current without a restart: `reload()` (SIGHUP) and a poll of both files'
 * modification times (every 2 s; polling also sees the atomic renames certificate managers do) swap in the new
 * pair with `setSecureContext`. New connections get the new certificate, open ones keep theirs. A pair that does
 * not load (half-written, key and cert not matching, not regular files, over 1 MiB) is reported and the old one
 * stays. Reloads run one at a time, their reads off the event loop.
 */
export class CertificateReloader {
  private timer: NodeJS.Timeout | undefined;
  private reloading: Promise<boolean> = Promise.resolve(true);
  private waiting: Promise<boolean> | undefined;

  constructor(
    private readonly server: TlsServer,
    private readonly files: CertificateFiles,
    private readonly log: { info(fields: object, msg: string): void; warn(fields: object, msg: string): void },
  ) {}

  start(intervalMs = 2_000): void {
    const changed = () => {
      // Both files usually change together: wait for the second before loading the pair.
      if (this.timer) clearTimeout(this.timer);
      this.timer = setTimeout(() => void this.reload(), 200);
      this.timer.unref();
    };
    watchFile(this.files.certFile, { interval: intervalMs, persistent: false }, changed);
    watchFile(this.files.keyFile, { interval: intervalMs, persistent: false }, changed);
  }

  /**
   * Loads the pair again (after any reload already running); resolves whether the new pair is in use. A call while
   * another reload waits to start joins it (that one reads the files as they are when it starts): a storm of
   * SIGHUPs reads the pair twice at most, not once per signal.
   */
  reload(): Promise<boolean> {
    if (this.waiting) return this.waiting;
    const next = this.reloading.then(() => {
      this.waiting = undefined;
      return this.reloadOnce();
    });
    this.waiting = next;
    this.reloading = next;
    return next;
  }

  private async reloadOnce(): Promise<boolean> {
    try {
      const pair = await rereadCertificate(this.files);
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
