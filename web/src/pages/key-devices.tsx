// The browsers remembered at a sign-in with a key, listed under it on the keys page with a Revoke
// button each (docs/dashboard-session.md, "Remembered devices"). A row of its own under the key's
// row, and none at all while the key has no device.
import { useState } from "preact/hooks";
import type { ApiKey } from "@mailprobe/client";
import { client, errorMessage, request } from "../api.ts";
import { announce, useApi } from "../hooks.ts";
import { formatDateTime } from "../lib/format.ts";

const COLUMNS = 7;

export function KeyDevicesRow({ apiKey, nameId }: { apiKey: ApiKey; nameId: string }) {
  const devices = useApi(
    (signal) =>
      request(client.GET("/api/v1/api-keys/{id}/devices", { params: { path: { id: apiKey.id } }, signal })),
    [apiKey.id],
  );
  const [busy, setBusy] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);
  const list = devices.data?.devices ?? [];
  if (list.length === 0 && devices.error == null) return null;

  async function revoke(id: string, label: string) {
    setBusy(id);
    setError(null);
    try {
      await request(
        client.DELETE("/api/v1/api-keys/{id}/devices/{device_id}", {
          params: { path: { id: apiKey.id, device_id: id } },
        }),
      );
      announce(`Device ${label} revoked`);
      devices.reload();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(null);
    }
  }

  return (
    <tr class="key-devices">
      <td colSpan={COLUMNS}>
        {devices.error != null ? (
          <p class="error small" role="alert">
            Could not load the remembered devices: {errorMessage(devices.error)}
          </p>
        ) : (
          <ul class="devices" aria-label={`Devices remembered with ${apiKey.name}`}>
            {list.map((d) => (
              <li key={d.id}>
                <span class="device-label">
                  {d.label}
                  {d.is_current && <span class="tag">this device</span>}
                </span>
                <span class="muted small">
                  Remembered {formatDateTime(d.created_at)}, last used{" "}
                  {d.last_used_at ? formatDateTime(d.last_used_at) : "never"}, until{" "}
                  {formatDateTime(d.expires_at)}
                </span>
                <button
                  type="button"
                  class="danger-outline"
                  aria-describedby={nameId}
                  aria-label={`Revoke device ${d.label}`}
                  disabled={busy === d.id}
                  onClick={() => void revoke(d.id, d.label)}
                >
                  Revoke
                </button>
              </li>
            ))}
          </ul>
        )}
        {error !== null && (
          <p class="error small" role="alert">
            {errorMessage(error)}
          </p>
        )}
      </td>
    </tr>
  );
}
