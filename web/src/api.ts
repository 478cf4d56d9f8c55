// The dashboard's one way to the API: the SDK's client with the session's JWT. Every call goes
// through request(), which turns error answers into MailprobeError and ends the session on 401.
import {
  createMailprobeClient,
  isMailprobeError,
  MailprobeError,
  unwrap,
  type DataOf,
  type FetchResult,
  type Session as ApiSession,
} from "@mailprobe/client";
import { filenameOf } from "./lib/content-disposition.ts";
import { currentSession, expireSession } from "./session.ts";

const baseUrl = window.location.origin;

export const client = createMailprobeClient({ baseUrl, token: () => currentSession()?.token });

export async function request<R extends FetchResult>(call: Promise<R>): Promise<DataOf<R>> {
  try {
    return await unwrap(call);
  } catch (error) {
    if (isMailprobeError(error) && error.status === 401) expireSession();
    throw error;
  }
}

/**
 * Exchanges an API key for a session JWT; the key lives only in this call. With `rememberDevice`
 * the reply also sets this browser's device cookie (web/src/remembered-device.ts).
 */
export async function openSession(apiKey: string, rememberDevice: boolean): Promise<ApiSession> {
  return unwrap(
    createMailprobeClient({ baseUrl }).POST("/api/v1/auth/session", {
      headers: { "x-api-key": apiKey },
      body: { remember_device: rememberDevice },
    }),
  );
}

/** Redeems a one-time sign-in link for a session; the link is the credential (web/src/sign-in-link.ts). */
export async function redeemSignInLink(token: string): Promise<ApiSession> {
  return unwrap(
    createMailprobeClient({ baseUrl }).POST("/api/v1/auth/sign-in-links/redeem", { body: { token } }),
  );
}

/** SESSION_TTL_SECONDS and SESSION_MAX_HOURS, for the sign-in form (the route needs no credentials). */
export interface SessionPolicy {
  lifetime_seconds: number;
  max_hours: number;
  /** DEVICE_REMEMBER_DAYS; absent from a server older than remembered devices. */
  device_remember_days?: number;
}

export async function fetchSessionPolicy(signal: AbortSignal): Promise<SessionPolicy> {
  const res = await fetch(`${baseUrl}/api/v1/auth/session/policy`, { signal });
  if (!res.ok) throw MailprobeError.fromResponse(res, await res.json().catch(() => null));
  return (await res.json()) as SessionPolicy;
}

/** Words for any failure: the API's own message, or what went wrong on the way. */
export function errorMessage(error: unknown): string {
  if (error instanceof MailprobeError) return error.message;
  if (error instanceof TypeError)
    return `Could not reach the server (${error.message}). Check your connection and try again.`;
  if (error instanceof Error) return error.message;
  return String(error);
}

export const isAbort = (error: unknown): boolean =>
  error instanceof DOMException && error.name === "AbortError";

/** Hands a Blob to the browser as a download. */
function saveBlob(blob: Blob, filename: string): void {
  const url = URL.createObjectURL(blob);
  const a = document.createElement("a");
  a.href = url;
  a.download = filename;
  a.hidden = true;
  document.body.append(a);
  a.click();
  a.remove();
  // The click starts the download asynchronously; keep the URL alive a moment.
  window.setTimeout(() => URL.revokeObjectURL(url), 30_000);
}

export type DownloadFormat = "csv" | "txt" | "xlsx";

/** Fetches a task's results with the bearer token (a plain link could not send it) and saves them. */
export async function downloadTask(
  taskId: string,
  format: DownloadFormat,
  statuses: readonly string[],
  escapeFormulas: boolean,
): Promise<string> {
  const { data, error, response } = await client.GET("/api/v1/tasks/{id}/download", {
    params: {
      path: { id: taskId },
      query: {
        format,
        ...(statuses.length > 0 ? { status: statuses.join(",") } : {}),
        escape_formulas: escapeFormulas,
      },
    },
    parseAs: "blob",
  });
  if (!response.ok || !(data instanceof Blob)) {
    const failure = MailprobeError.fromResponse(response, error);
    if (failure.status === 401) expireSession();
    throw failure;
  }
  const filename = filenameOf(
    response.headers.get("content-disposition"),
    `task-${taskId}-results.${format}`,
  );
  saveBlob(data, filename);
  return filename;
}
