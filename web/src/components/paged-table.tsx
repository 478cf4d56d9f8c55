import type { ComponentChildren } from "preact";
import { Pager } from "./pager.tsx";

/**
 * A card table with its pager below: the block every paged list repeats. The scroll region is
 * focusable so a keyboard user can scroll a wide table (axe: scrollable-region-focusable).
 */
export function PagedTable({
  region,
  tableClass = "cards",
  caption,
  head,
  children,
  instead,
  page,
}: {
  /** The scroll region's name ("Tasks table"); without it the table is not wrapped. */
  region?: string;
  tableClass?: string;
  caption: ComponentChildren;
  /** The header row's cells. */
  head: ComponentChildren;
  /** The body rows. */
  children: ComponentChildren;
  /** Shown in the table's place when set (null shows nothing): the pager still follows. */
  instead?: ComponentChildren;
  page: { offset: number; limit: number; total: number; label: string; onChange: (offset: number) => void };
}) {
  const table = (
    <table class={tableClass}>
      <caption class="visually-hidden">{caption}</caption>
      <thead>
        <tr>{head}</tr>
      </thead>
      <tbody>{children}</tbody>
    </table>
  );
  return (
    <>
      {instead !== undefined ? (
        instead
      ) : region ? (
        <div class="table-scroll" tabIndex={0} role="region" aria-label={region}>
          {table}
        </div>
      ) : (
        table
      )}
      <Pager {...page} />
    </>
  );
}
