/**
 * The package's public surface for programs that embed the gateway or talk to it. The runnable server is
 * `dist/main.js` (`npm start`); importing this module starts nothing.
 *
 * @example
 * ```ts
 * import { buildApp, createLogger, loadConfig, openDependencies } from 'llm-gateway';
 * const config = loadConfig({ ADMIN_TOKEN: 'a-long-admin-token-123', UPSTREAM_BASE_URL: 'http://127.0.0.1:11434/v1' });
 * const logger = createLogger({ level: 'info', secrets: config.adminTokens });
 * const deps = await openDependencies(config, logger); // the stores the config asks for (SQLite by default)
 * const { app } = await buildApp(deps);
 * await app.listen({ port: 8080 });
 * // Stopping: first the app, then the stores.
 * await app.close();
 * await deps.close();
 * ```
 * (test/project/public-api.test.ts compiles this example as it is written here, and runs it.)
 */
export { buildApp, type AppDependencies, type GatewayApp } from './app.js';
export { openDependencies, type Dependencies } from './dependencies.js';
export { loadConfig, ConfigError } from './config/load.js';
export type { GatewayConfig } from './config/types.js';
export { createLogger } from './observability/logger.js';
export { openSqliteStore } from './store/sqlite/sqlite-store.js';
export { ERROR_CODES, type ErrorCode } from './errors/codes.js';
export { GatewayError, type ErrorBody } from './errors/gateway-error.js';
export { SseParser, parseSseStream, type SseEvent } from './streaming/sse-parser.js';
export { VENDOR_MEDIA_TYPE_V1 } from './http/versioning.js';
export {
  verifyWebhook,
  WebhookVerificationError,
  type WebhookEvent,
  type VerifyWebhookOptions,
  type WebhookVerificationCode,
} from './webhooks/verify.js';
