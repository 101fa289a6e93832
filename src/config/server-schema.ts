import { z } from 'zod';

const positiveMs = z.number().int().positive();

/** The config file's `server` section (docs/config.md): where and how the gateway listens. */
export const serverSectionSchema = z
  .object({
    host: z.string().min(1).optional(),
    port: z.number().int().min(0).max(65535).optional(),
    body_limit_bytes: z
      .number()
      .int()
      .min(1024)
      .max(64 * 1024 * 1024)
      .optional(),
    shutdown_grace_ms: positiveMs.optional(),
    /** The longest a caller may take to send one whole request (headers and body); then 408 and close. */
    request_timeout_seconds: z.number().int().min(1).max(3600).optional(),
    workers: z.union([z.literal('auto'), z.number().int().min(1).max(64)]).optional(),
    /** Serve HTTPS (TLS 1.2 or newer) with this certificate; reloaded when the files change or on SIGHUP. */
    tls: z
      .object({ cert_file: z.string().min(1), key_file: z.string().min(1) })
      .strict()
      .optional(),
    /** Proxies (addresses or CIDRs) whose X-Forwarded-Proto / -For are believed. */
    trusted_proxies: z.array(z.string().min(1)).max(64).optional(),
    /**
     * The origin (and optional path prefix) of the URLs the gateway gives out (batch `results_url`, presigned
     * upload URLs); unset: the Host the caller used, when it is a valid host (docs/config.md).
     */
    public_base_url: z
      .url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' })
      .max(2048)
      .refine((value) => {
        const url = new URL(value);
        return url.username === '' && url.password === '' && url.search === '' && url.hash === '';
      }, 'must be a scheme, a host and optionally a path: no credentials, query or fragment')
      .optional(),
  })
  .strict();
