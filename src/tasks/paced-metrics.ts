// Which providers are pacing a task's addresses, and when the rest should be answered
// (docs/pacing.md): the pending jobs of each task per paced provider, at the rate its pace allows
// over all our identities, from the moment it next has room.
import type { Queryable } from "../db/client.ts";
import { livePaces, pendingByPacedProvider, type PaceRow } from "../db/queries/provider-paces.ts";
import type { PacedProvider } from "../db/queries/task-metrics.ts";
import { providerLabel, ratePerMinute } from "../verify/index.ts";

/** The paced providers of each task that has any (tasks without are left out). */
export async function pacedOfTasks(
  q: Queryable,
  taskIds: readonly string[],
  now: Date,
): Promise<Map<string, PacedProvider[]>> {
  const pending = await pendingByPacedProvider(q, taskIds, now);
  if (pending.length === 0) return new Map();
  const paces = new Map<string, PaceRow[]>();
  for (const p of await livePaces(q, now)) paces.set(p.provider, [...(paces.get(p.provider) ?? []), p]);
  const out = new Map<string, PacedProvider[]>();
  for (const row of pending) {
    const rows = paces.get(row.provider);
    if (rows === undefined) continue;
    const list = out.get(row.taskId) ?? [];
    list.push(pacedProvider(row.provider, row.pending, rows, now));
    out.set(row.taskId, list);
  }
  for (const list of out.values()) list.sort((a, b) => b.pending - a.pending);
  return out;
}

function pacedProvider(
  provider: string,
  pending: number,
  rows: readonly PaceRow[],
  now: Date,
): PacedProvider {
  // Each identity has a pace of its own; one still being learnt leaves the total unknown.
  let rate: number | null = 0;
  for (const r of rows) {
    const each = ratePerMinute(r.maxRcpts, r.windowMs);
    rate = rate === null || each === null ? null : rate + each;
  }
  const from = Math.max(now.getTime(), Math.min(...rows.map((r) => r.roomAt.getTime())));
  return {
    provider,
    name: providerLabel(provider),
    pending,
    ratePerMinute: rate,
    expectedDoneAt: rate === null || rate <= 0 ? null : new Date(from + (pending / rate) * 60_000),
  };
}
