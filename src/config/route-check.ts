import { ConfigError } from './config-error.js';
import type { GatewayConfig } from './types.js';

/**
 * The routes the config grants (Basic users', OAuth scopes') that the app does not serve, one problem each. Config
 * parsing takes any well-formed route name there, since a surface may declare a route of its own in its descriptor
 * alone and the config is read before the app knows its surfaces; the app calls this when it is built (a start with
 * an unknown route fails) and before a live reload applies a file (which is then refused).
 */
export function checkConfigRoutes(
  config: Pick<GatewayConfig, 'basicUsers' | 'oauth'>,
  routes: readonly string[],
): void {
  const served = new Set(routes);
  const problems: string[] = [];
  const check = (field: string, granted: readonly string[]) => {
    for (const route of granted)
      if (!served.has(route))
        problems.push(`${field}: "${route}" is not a route this gateway serves (${routes.join(', ')})`);
  };
  config.basicUsers.forEach((user, i) => check(`auth.basic_users[${i}].routes`, user.routes));
  for (const [scope, granted] of Object.entries(config.oauth?.scopes ?? {}))
    check(`auth.oauth.scopes.${scope}`, granted);
  if (problems.length > 0) throw new ConfigError(problems);
}
