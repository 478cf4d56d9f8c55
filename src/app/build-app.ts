import swagger from "@fastify/swagger";
import swaggerUi from "@fastify/swagger-ui";
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import Fastify, {
  LogController,
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
} from "fastify";
import { installAuthentication } from "../http/plugins/auth.ts";
import { dashboardPlugin } from "../http/plugins/dashboard.ts";
import {
  clientErrorHandler,
  frameworkErrorHandler,
  installErrorHandlers,
} from "../http/plugins/error-handler.ts";
import { installInputGuard } from "../http/plugins/input-guard.ts";
import { collectRouteMethods } from "../http/plugins/method-not-allowed.ts";
import { installJsonParser } from "../http/plugins/json-body.ts";
import { installHttpMetrics } from "../http/plugins/http-metrics.ts";
import { installRequestIdHeader, requestIdFrom } from "../http/plugins/request-id.ts";
import { installCloseOnRefusal, installJsonBodyDeadline } from "../http/plugins/slow-clients.ts";
import { limitConnections } from "../http/connection-limit.ts";
import { installValidators } from "../http/plugins/validation.ts";
import { installWriteGuard } from "../http/plugins/write-guard.ts";
import { adminRoutes } from "../http/routes/admin.ts";
import { apiKeyRoutes } from "../http/routes/api-keys.ts";
import { authSessionRoutes, sessionPolicyRoutes } from "../http/routes/auth-session.ts";
import { signInLinkRedeemRoutes, signInLinkRoutes } from "../http/routes/sign-in-links.ts";
import { deviceRoutes, deviceSessionRoutes } from "../http/routes/devices.ts";
import { creditRoutes } from "../http/routes/credits.ts";
import { healthRoutes } from "../http/routes/health.ts";
import { operatorRoutes } from "../http/routes/operator.ts";
import { plantRoutes } from "../http/routes/plants.ts";
import { reportRoutes } from "../http/routes/reports.ts";
import { verifyRoutes } from "../http/routes/verify.ts";
import { taskRoutes } from "../http/routes/tasks.ts";
import { uploadRoutes } from "../http/routes/uploads.ts";
import { downloadRoutes } from "../http/routes/downloads.ts";
import { webhookRoutes } from "../http/routes/webhooks.ts";
import { COMPONENTS, SWAGGER_OPTIONS } from "../http/schemas/openapi.ts";
import { isDatabaseUnavailable } from "../db/client.ts";
import { httpDepsOf } from "./http-deps.ts";
import { defaultMaxConnections, openFileLimit } from "./open-file-limit.ts";
import { prettyLogs } from "../observability/logger.ts";
import type { Services } from "./services.ts";

export interface AppOptions {
  /** Enables the loopback admin API used by the CLI (embedded mode). */
  adminToken?: string | null;
}

/** The HTTP application as a plugin tree; tests call inject() on it without opening a port. */
export async function buildApp(services: Services, opts: AppOptions = {}): Promise<FastifyInstance> {
  const { config } = services;
  // Routes and plugins get the narrow HttpDeps (no db, engine or Config), never Services.
  const deps = httpDepsOf(services);
  // Fastify's instance types are parameterised by the logger type; pino's own Logger type would
  // make every plugin signature disagree with the default instance type.
  const logger: FastifyBaseLogger = services.logger;
  // On a terminal, one line per request (requestLine below) instead of Fastify's two records of
  // the request and the response; JSON logs keep both for a collector.
  const pretty = prettyLogs(config.logFormat, process.stdout.isTTY === true);
  const app = Fastify({
    loggerInstance: logger,
    // Server faults are still logged, by our error handler (http/plugins/error-handler.ts).
    logController: new LogController({ disableRequestLogging: pretty }),
    genReqId: requestIdFrom,
    requestIdHeader: false,
    bodyLimit: config.bodyLimitBytes,
    // Only the listed proxies: the client is the rightmost address none of them added.
    trustProxy: config.trustProxy.length > 0 ? [...config.trustProxy] : false,
    // Explicit server timeouts: a realtime verification may legitimately take tens of seconds.
    // The request timeout bounds an upload's body; a JSON body has BODY_TIMEOUT_MS (slow-clients.ts).
    requestTimeout: 120_000,
    connectionTimeout: 130_000,
    keepAliveTimeout: 72_000,
    http: {
      headersTimeout: config.httpServer.headersTimeoutMs,
      // How often Node looks for requests past their timeouts (default 30 s, which would let a
      // 15 s header timeout run to 45 s).
      connectionsCheckingInterval: Math.min(5_000, Math.max(1_000, config.httpServer.headersTimeoutMs / 5)),
    },
    return503OnClosing: true,
    // Router and HTTP-parser refusals (bad percent-encoding, over-long path params, oversized
    // headers) answer the spec's error envelope too.
    frameworkErrors: frameworkErrorHandler,
    clientErrorHandler,
  }).withTypeProvider<TypeBoxTypeProvider>();
  const limits = {
    perAddress: config.httpServer.maxConnectionsPerIp,
    total: config.httpServer.maxConnections ?? defaultMaxConnections(openFileLimit()),
  };
  limitConnections(app.server, limits, (r) =>
    logger.warn({ ...r, limits }, "connections refused: over MAX_CONNECTIONS_PER_IP or MAX_CONNECTIONS"),
  );

  if (pretty) app.addHook("onResponse", requestLine);

  // The named schemas the routes $ref (the OpenAPI document's components).
  for (const schema of COMPONENTS) app.addSchema(schema);
  // Before any route: it records each route's methods as it is registered.
  const routes = collectRouteMethods(app);
  installValidators(app, COMPONENTS);
  installJsonParser(app);
  installErrorHandlers(app, { isDatabaseOutage: isDatabaseUnavailable, routes });
  installCloseOnRefusal(app);
  installJsonBodyDeadline(app, config.httpServer.bodyTimeoutMs);
  installInputGuard(app);
  installRequestIdHeader(app);
  installHttpMetrics(app, deps.metrics);

  await app.register(swagger, SWAGGER_OPTIONS);
  await app.register(swaggerUi, { routePrefix: "/docs" });
  app.get("/openapi.json", { schema: { hide: true } }, async () => app.swagger());

  await app.register(healthRoutes, { deps });
  await app.register(plantRoutes, { deps });
  await app.register(sessionPolicyRoutes, { deps });
  await app.register(signInLinkRedeemRoutes, { deps });
  await app.register(deviceSessionRoutes, { deps });
  await app.register(dashboardPlugin);
  await app.register(async (api) => {
    installAuthentication(api, deps.authenticator, deps.rateLimiter);
    installWriteGuard(api, () => deps.diskSpace.assertWritable());
    await api.register(authSessionRoutes, { deps });
    await api.register(signInLinkRoutes, { deps });
    await api.register(apiKeyRoutes, { deps });
    await api.register(deviceRoutes, { deps });
    await api.register(creditRoutes, { deps });
    await api.register(reportRoutes, { deps });
    await api.register(verifyRoutes, { deps });
    await api.register(taskRoutes, { deps });
    await api.register(uploadRoutes, { deps });
    await api.register(downloadRoutes, { deps });
    await api.register(webhookRoutes, { deps });
  });
  if (opts.adminToken) await app.register(adminRoutes, { deps, token: opts.adminToken });
  await app.register(operatorRoutes, { deps });

  await app.ready();
  return app;
}

/** A request in one line of a terminal's log: `POST /api/v1/verify 200 41 ms`. */
async function requestLine(req: FastifyRequest, reply: FastifyReply): Promise<void> {
  const level = reply.statusCode >= 500 ? "error" : "info";
  req.log[level](`${req.method} ${req.url} ${reply.statusCode} ${Math.round(reply.elapsedTime)} ms`);
}
