import type { FastifyInstance } from 'fastify';
import type { ChatService } from '../core/pipeline/chat-service.js';
import { CallerApis } from '../http/error-shape.js';
import { v1RouteTable, type V1RouteTable } from '../http/v1-dispatch.js';
import { mountSurface, type MountedSurface, type SurfaceMountDeps } from '../routes/mount-surface.js';
import type { V1Call } from '../routes/mount-v1.js';
import type { SurfaceDeps, SurfaceDescriptor } from '../surfaces/descriptor.js';
import { EMBEDDINGS_EVENTS, type RouteEvents } from '../webhooks/gateway-events.js';
import { defaultOAuthScopes, grantableRoutes } from '../names/api-names.js';

/**
 * What the layers below the surfaces take from the registry, as plain data: the HTTP server's APIs (which request is
 * whose, its error shape, its own query names), the `/v1/?route=` table, each route's webhook events, and the routes
 * a caller can be given with their default OAuth scopes (the names table's and the mounted surfaces' own).
 */
export interface SurfaceData {
  apis: CallerApis;
  v1Routes: V1RouteTable;
  events: ReadonlyMap<string, RouteEvents>;
  /** Every route a key, a scope or a Basic user can be given; the API calls the observers record. */
  routes: readonly string[];
  /** The OAuth scopes that grant the routes when the config names none. */
  oauthScopes: Readonly<Record<string, string[]>>;
}

export function surfaceData(surfaces: readonly SurfaceDescriptor[]): SurfaceData {
  const v1 = surfaces.flatMap((s) => (s.v1Route ? [{ route: s.route, ...s.v1Route }] : []));
  return {
    apis: new CallerApis(surfaces.map((s) => s.api)),
    v1Routes: v1RouteTable(v1),
    events: new Map<string, RouteEvents>([
      ...surfaces.map((s): [string, RouteEvents] => [s.route, s.events]),
      ['embeddings', EMBEDDINGS_EVENTS],
    ]),
    routes: grantableRoutes(surfaces),
    oauthScopes: defaultOAuthScopes(surfaces),
  };
}

/** What each surface's translation may need, its native API's questions asked of the chat service. */
export function translationDeps(
  chat: ChatService,
  descriptor: SurfaceDescriptor,
  shared: Pick<SurfaceDeps, 'ownership' | 'history' | 'fileSearch' | 'mcp'>,
): SurfaceDeps {
  const api = descriptor.native?.api;
  return {
    forwards: (model) => api !== undefined && chat.forwardsNatively(api, model),
    forwardsWholly: (model) => api !== undefined && chat.forwardsWholly(api, model),
    carries: (model, field) => chat.carries(model, field),
    ownership: shared.ownership,
    history: shared.history,
    fileSearch: shared.fileSearch,
    mcp: shared.mcp,
  };
}

/** Mounts every registered surface (its own paths); what `/v1/?route=` and the shared models paths serve of each. */
export function mountSurfaces(
  app: FastifyInstance,
  surfaces: readonly SurfaceDescriptor[],
  deps: Omit<SurfaceMountDeps, 'translationDeps'>,
  shared: Pick<SurfaceDeps, 'ownership' | 'history' | 'fileSearch' | 'mcp'>,
): MountedSurface[] {
  return surfaces.map((descriptor) =>
    mountSurface(app, descriptor, { ...deps, translationDeps: translationDeps(deps.chat, descriptor, shared) }),
  );
}

/** What `/v1/?route=` POSTs to: each surface's `generate` (those with a `v1Route`), then the gateway's own calls. */
export function v1Calls(
  mounted: readonly MountedSurface[],
  own: Readonly<Record<string, V1Call>>,
): ReadonlyMap<string, V1Call> {
  const calls = new Map<string, V1Call>();
  for (const { descriptor, generate } of mounted)
    if (generate && descriptor.v1Route) calls.set(descriptor.route, generate);
  for (const [route, call] of Object.entries(own)) calls.set(route, call);
  return calls;
}
