import type { Queryable } from "../client.ts";

/** One round trip that proves the database answers (GET /readyz); throws when it does not. */
export async function pingDatabase(q: Queryable): Promise<void> {
  await q.query("select 1");
}
