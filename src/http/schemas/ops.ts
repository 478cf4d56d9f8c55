import { Type } from "typebox";
import type { Readiness } from "../../observability/readiness.ts";

export const HealthReply = Type.Object(
  { status: Type.Literal("ok") },
  { $id: "Health", description: "The process is up" },
);

// Set-up problems that don't make this node unready (it serves and verifies) but cost accuracy,
// e.g. a HELO name receivers refuse. Monitors keep reading the status code; people read these.
const ReadyWarning = Type.Object({
  code: Type.String({ description: "stable code, e.g. helo_name_not_fqdn" }),
  variable: Type.String({ description: "the environment variable to set or fix" }),
  message: Type.String({ description: "what is wrong and what to set, with an example" }),
});

export const ReadyReply = Type.Object(
  {
    status: Type.Literal("ready"),
    database: Type.String({ description: "The storage engine in use, e.g. pglite or postgres" }),
    warnings: Type.Array(ReadyWarning),
  },
  { $id: "Readiness", description: "The node can serve: the database answers" },
);

export const toReadyReply = (r: Readiness) => ({
  status: "ready" as const,
  database: r.database,
  warnings: [...r.warnings],
});
