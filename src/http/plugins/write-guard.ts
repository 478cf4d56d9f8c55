import type { FastifyInstance } from "fastify";

declare module "fastify" {
  interface FastifyContextConfig {
    /** A POST that only reads or computes (a session token, a listing): not refused by the write guard. */
    writesNothing?: boolean;
  }
}

const READS = new Set(["GET", "HEAD", "OPTIONS"]);

/**
 * Refuses every state-changing request of the scope it is installed in while `assertWritable`
 * throws (DATA_DIR nearly full: 503 SERVICE_UNAVAILABLE with Retry-After). It runs at onRequest,
 * before the body is read, so an upload is refused before its bytes are taken in, and after the
 * scope's authentication hook, so a caller without credentials still gets 401. Reads go on.
 */
export function installWriteGuard(app: FastifyInstance, assertWritable: () => void): void {
  app.addHook("onRequest", async (req) => {
    if (READS.has(req.method) || req.routeOptions.config.writesNothing === true) return;
    assertWritable();
  });
}
