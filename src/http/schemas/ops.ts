import { Type } from "typebox";
import type { DataDirSpace, Readiness } from "../../observability/readiness.ts";

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

// Embedded engine only: the free space of DATA_DIR against DATA_DIR_MIN_FREE_MB. Below it /readyz
// answers 503 with this object beside the error, and work that writes is refused.
const DataDirSpaceReply = Type.Object({
  free_mb: Type.Union([Type.Integer(), Type.Null()], {
    description: "MiB free in DATA_DIR at the last sample (taken every second); null if unreadable",
  }),
  min_free_mb: Type.Integer({ description: "DATA_DIR_MIN_FREE_MB: below it the node is not ready" }),
});

export const ReadyReply = Type.Object(
  {
    status: Type.Literal("ready"),
    database: Type.String({ description: "The storage engine in use, e.g. pglite or postgres" }),
    warnings: Type.Array(ReadyWarning),
    data_dir: Type.Optional(DataDirSpaceReply),
  },
  {
    $id: "Readiness",
    description:
      "The node can serve: the database answers and, on the embedded engine, DATA_DIR has at least DATA_DIR_MIN_FREE_MB free",
  },
);

export const toDataDirReply = (d: DataDirSpace) => ({ free_mb: d.freeMb, min_free_mb: d.minFreeMb });

export const toReadyReply = (r: Readiness) => ({
  status: "ready" as const,
  database: r.database,
  warnings: [...r.warnings],
  ...(r.dataDir ? { data_dir: toDataDirReply(r.dataDir) } : {}),
});
