// Loading, error and empty states: every request shows one of them until it has data.
import type { ComponentChildren } from "preact";
import { MailprobeError } from "@mailprobe/client";
import { errorMessage } from "../api.ts";

export function Loading({ label = "Loading…" }: { label?: string }) {
  return (
    <p class="loading" role="status">
      <span class="spinner" aria-hidden="true" />
      {label}
    </p>
  );
}

/** The API's error message as it came, its field details, and the request id to quote. */
export function ErrorMessage({
  error,
  title,
  onRetry,
}: {
  error: unknown;
  title?: string;
  onRetry?: () => void;
}) {
  const details = error instanceof MailprobeError ? error.details : [];
  const requestId = error instanceof MailprobeError ? error.requestId : null;
  return (
    <div class="error" role="alert">
      {title && <p class="error-title">{title}</p>}
      <p>{errorMessage(error)}</p>
      {details.length > 0 && (
        <ul>
          {details.map((d) => (
            <li key={`${d.field}:${d.reason}`}>
              <code>{d.field}</code> {d.reason}
            </li>
          ))}
        </ul>
      )}
      {requestId && (
        <p class="muted small">
          Request id <code>{requestId}</code>
        </p>
      )}
      {onRetry && (
        <button type="button" class="secondary" onClick={onRetry}>
          Try again
        </button>
      )}
    </div>
  );
}

export function Empty({ title, children }: { title: string; children?: ComponentChildren }) {
  return (
    <div class="empty">
      <p class="empty-title">{title}</p>
      {children}
    </div>
  );
}
