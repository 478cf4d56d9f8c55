import { Fragment } from "preact";
import { useState } from "preact/hooks";
import type { ApiKey, CreatedApiKey, ApiKeyPurpose } from "@mailprobe/client";
import { client, errorMessage, request } from "../api.ts";
import { ConfirmDialog } from "../components/confirm-dialog.tsx";
import { Empty, ErrorMessage, Loading } from "../components/feedback.tsx";
import { announce, useAction, useApi, useTitle } from "../hooks.ts";
import { formatDateTime } from "../lib/format.ts";
import { currentSession } from "../session.ts";
import { KeyDevicesRow } from "./key-devices.tsx";

const PURPOSES: Array<{ value: ApiKeyPurpose; label: string; help: string }> = [
  { value: "custom", label: "Custom", help: "Your own scripts; may also manage keys and sign in here." },
  { value: "zapier", label: "Zapier", help: "Verification, lists and reports only." },
  { value: "n8n", label: "n8n", help: "Verification, lists and reports only." },
  { value: "google sheets", label: "Google Sheets", help: "Verification, lists and reports only." },
];

async function copy(text: string): Promise<void> {
  try {
    await navigator.clipboard.writeText(text);
    announce("Copied to the clipboard");
  } catch {
    announce("Copying is not allowed here: select the key and copy it by hand");
  }
}

export function KeysPage() {
  useTitle("API keys");
  const keys = useApi((signal) => request(client.GET("/api/v1/api-keys", { signal })), []);
  const [created, setCreated] = useState<CreatedApiKey | null>(null);
  return (
    <section class="stack-lg">
      <h1 tabIndex={-1}>API keys</h1>
      <p class="lead">
        Keys let your integrations call the API (<code>Authorization: Bearer &lt;key&gt;</code>). Integration
        keys (Zapier, n8n, Google Sheets) can verify and upload but not manage keys; custom keys can do
        everything.
      </p>
      <CreateKey
        onCreated={(k) => {
          setCreated(k);
          keys.reload();
        }}
      />
      {created && (
        <div class="card new-key" role="status">
          <p>
            <strong>Key “{created.name}” created.</strong> Copy it now and store it safely; you can reveal it
            again later from this page.
          </p>
          <p class="secret">
            <code>{created.key}</code>{" "}
            <button type="button" class="secondary" onClick={() => void copy(created.key)}>
              Copy key
            </button>
          </p>
        </div>
      )}
      <section class="card" aria-labelledby="keys-title">
        <h2 id="keys-title">Your keys</h2>
        {keys.error !== undefined && keys.error !== null && (
          <ErrorMessage error={keys.error} title="Could not load your keys" onRetry={keys.reload} />
        )}
        {keys.loading && !keys.data && <Loading label="Loading keys…" />}
        {keys.data && keys.data.api_keys.length === 0 && (
          <Empty title="No keys.">
            <p>Create one above for each integration, so you can revoke one without breaking the others.</p>
          </Empty>
        )}
        {keys.data && keys.data.api_keys.length > 0 && (
          <KeyTable
            keys={keys.data.api_keys}
            onRevoked={(id) => {
              if (created?.id === id) setCreated(null);
              keys.reload();
            }}
          />
        )}
      </section>
    </section>
  );
}

function CreateKey({ onCreated }: { onCreated: (k: CreatedApiKey) => void }) {
  const [name, setName] = useState("");
  const [purpose, setPurpose] = useState<ApiKeyPurpose>("custom");
  const {
    busy,
    error,
    run: submit,
  } = useAction(async () => {
    const k = await request(client.POST("/api/v1/api-keys", { body: { name: name.trim(), purpose } }));
    setName("");
    announce(`Key ${k.name} created`);
    onCreated(k);
  });

  return (
    <form class="card" onSubmit={(e) => void submit(e)} aria-labelledby="create-key-title">
      <h2 id="create-key-title">New key</h2>
      <div class="filters">
        <div class="field grow">
          <label for="key-name">Name</label>
          <input
            id="key-name"
            required
            maxLength={100}
            placeholder="e.g. CRM sync"
            value={name}
            onInput={(e) => setName(e.currentTarget.value)}
          />
        </div>
        <div class="field">
          <label for="key-purpose">Purpose</label>
          <select
            id="key-purpose"
            value={purpose}
            onChange={(e) => setPurpose(e.currentTarget.value as ApiKeyPurpose)}
            aria-describedby="key-purpose-help"
          >
            {PURPOSES.map((p) => (
              <option key={p.value} value={p.value}>
                {p.label}
              </option>
            ))}
          </select>
        </div>
        <div class="filter-actions">
          <button type="submit" disabled={busy}>
            Create key
          </button>
        </div>
      </div>
      <p id="key-purpose-help" class="help">
        {PURPOSES.find((p) => p.value === purpose)?.help}
      </p>
      {error !== null && <ErrorMessage error={error} title="The key was not created" />}
    </form>
  );
}

function KeyTable({ keys, onRevoked }: { keys: ApiKey[]; onRevoked: (id: string) => void }) {
  const [revealed, setRevealed] = useState<Record<string, string>>({});
  const [revealing, setRevealing] = useState<string | null>(null);
  const [rowError, setRowError] = useState<{ id: string; error: unknown } | null>(null);
  const [revoking, setRevoking] = useState<ApiKey | null>(null);
  const [revokeBusy, setRevokeBusy] = useState(false);
  const [revokeError, setRevokeError] = useState<unknown>(null);
  const sessionKey = currentSession()?.apiKeyId ?? null;

  async function reveal(key: ApiKey) {
    setRevealing(key.id);
    setRowError(null);
    try {
      const all = await request(client.GET("/api/v1/api-keys", { params: { query: { reveal: true } } }));
      const plain = all.api_keys.find((k) => k.id === key.id)?.key;
      if (!plain) throw new Error("The server did not return this key (it may have been revoked).");
      // Only the clicked key is kept, and only until "Hide" or leaving the page.
      setRevealed((r) => ({ ...r, [key.id]: plain }));
      announce(`Key ${key.name} revealed`);
    } catch (err) {
      setRowError({ id: key.id, error: err });
    } finally {
      setRevealing(null);
    }
  }

  async function revoke() {
    if (!revoking) return;
    setRevokeBusy(true);
    setRevokeError(null);
    try {
      await request(client.DELETE("/api/v1/api-keys/{id}", { params: { path: { id: revoking.id } } }));
      announce(`Key ${revoking.name} revoked`);
      setRevoking(null);
      onRevoked(revoking.id);
    } catch (err) {
      setRevokeError(err);
    } finally {
      setRevokeBusy(false);
    }
  }

  return (
    <>
      <div class="table-scroll" tabIndex={0} role="region" aria-label="API keys table">
        <table class="keys cards">
          <caption class="visually-hidden">API keys</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Purpose</th>
              <th scope="col">Key</th>
              <th scope="col">Status</th>
              <th scope="col">Created</th>
              <th scope="col">Last used</th>
              <th scope="col">
                <span class="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {keys.map((k) => {
              const plain = revealed[k.id];
              const nameId = `key-name-${k.id}`;
              return (
                <Fragment key={k.id}>
                  <tr>
                    <th scope="row" id={nameId}>
                      {k.name}
                      {k.id === sessionKey && <span class="tag">this session</span>}
                    </th>
                    <td data-label="Purpose">{k.purpose}</td>
                    <td data-label="Key" class="secret">
                      {plain ? (
                        <>
                          <code>{plain}</code>{" "}
                          <button
                            type="button"
                            class="link"
                            onClick={() => void copy(plain)}
                            aria-describedby={nameId}
                          >
                            Copy
                          </button>
                        </>
                      ) : (
                        <code>{k.prefix}…</code>
                      )}
                    </td>
                    <td data-label="Status">{k.is_active ? "Active" : <span class="muted">Revoked</span>}</td>
                    <td data-label="Created">{formatDateTime(k.created_at)}</td>
                    <td data-label="Last used">
                      {k.last_used_at ? formatDateTime(k.last_used_at) : <span class="muted">Never</span>}
                    </td>
                    <td class="actions">
                      {k.is_active && (
                        <>
                          {plain ? (
                            <button
                              type="button"
                              class="secondary"
                              aria-describedby={nameId}
                              onClick={() => setRevealed(({ [k.id]: _gone, ...rest }) => rest)}
                            >
                              Hide
                            </button>
                          ) : (
                            <button
                              type="button"
                              class="secondary"
                              aria-describedby={nameId}
                              disabled={revealing === k.id}
                              onClick={() => void reveal(k)}
                            >
                              Reveal
                            </button>
                          )}
                          <button
                            type="button"
                            class="danger-outline"
                            aria-describedby={nameId}
                            onClick={() => {
                              setRevokeError(null);
                              setRevoking(k);
                            }}
                          >
                            Revoke
                          </button>
                        </>
                      )}
                      {rowError?.id === k.id && (
                        <p class="error small" role="alert">
                          {errorMessage(rowError.error)}
                        </p>
                      )}
                    </td>
                  </tr>
                  {k.is_active && k.purpose === "custom" && <KeyDevicesRow apiKey={k} nameId={nameId} />}
                </Fragment>
              );
            })}
          </tbody>
        </table>
      </div>
      {revoking && (
        <ConfirmDialog
          title={`Revoke “${revoking.name}”?`}
          confirmLabel="Revoke key"
          busy={revokeBusy}
          onConfirm={() => void revoke()}
          onCancel={() => setRevoking(null)}
        >
          <p>
            Integrations using this key stop working at once, and dashboard sessions opened with it end. This
            cannot be undone.
          </p>
          {revoking.id === sessionKey && (
            <p class="notice">
              You signed in with this key: you will be signed out and need another custom key.
            </p>
          )}
          {revokeError !== null && <ErrorMessage error={revokeError} title="The key was not revoked" />}
        </ConfirmDialog>
      )}
    </>
  );
}
