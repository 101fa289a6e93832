/**
 * The package's public surface for programs that embed the gateway or talk to it. The runnable server is
 * `dist/main.js` (`npm start`); importing this module starts nothing.
 *
 * @example
 * ```ts
 * import { buildApp, loadConfig, createLogger, openSqliteStore } from 'llm-gateway';
 * const config = loadConfig({ ADMIN_TOKEN: 'a-long-admin-token-123', UPSTREAM_BASE_URL: 'http://127.0.0.1:11434/v1' });
 * const store = await openSqliteStore(config.dataDir);
 * const { app } = await buildApp({ config, logger: createLogger({ level: 'info', secrets: config.adminTokens }), store });
 * await app.listen({ port: 8080 });
 * ```
 */
export { buildApp, type AppDependencies, type GatewayApp } from './app.js';
export { loadConfig, ConfigError } from './config/load.js';
export type { GatewayConfig } from './config/types.js';
export { createLogger } from './observability/logger.js';
export { openSqliteStore } from './store/sqlite/sqlite-store.js';
export { ERROR_CODES, type ErrorCode } from './errors/codes.js';
export { GatewayError, type ErrorBody } from './errors/gateway-error.js';
export { SseParser, parseSseStream, type SseEvent } from './streaming/sse-parser.js';
export { VENDOR_MEDIA_TYPE_V1 } from './http/versioning.js';
export { verifyWebhook, WebhookVerificationError, type WebhookEvent, type VerifyWebhookOptions, type WebhookVerificationCode } from './webhooks/verify.js';
