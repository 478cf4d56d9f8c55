// The integrator's flow (./shared.ts) through a client orval generated from our OpenAPI document
// (./client-orval/, made fresh by `npm run test:clients`, never committed): its `fetch` client,
// one function per operation answering `{ status, data, headers }` with `data` typed per status.
// Generated with two options (scripts/generated-client-test.ts): `useRuntimeFetcher`, so each
// call takes the fetch that adds the base URL and the key, and `forceSuccessResponse` for the
// download alone. orval reads a binary operation's body with `res.blob()` whatever the status,
// so a 404 would come back as a Blob typed as the JSON envelope; with `forceSuccessResponse` the
// download resolves to the file and throws on an error status with the envelope parsed from JSON
// (`info`) and the status.
import assert from "node:assert/strict";
import {
  createTask,
  downloadTaskResults,
  getCreditBalance,
  getTask,
  uploadTaskFile,
  type downloadTaskResultsResponseError,
} from "./client-orval/client.ts";
import { apiKey, baseUrl, plan, runFlow, type Refusal } from "./shared.ts";

/** The fetch an orval call runs on: the relative URLs orval builds, against the server, with a key. */
function fetchFor(key: string): typeof fetch {
  return (input, init) => {
    assert.equal(typeof input, "string", "orval passes the URL as a string");
    const headers = new Headers(init?.headers);
    headers.set("authorization", `Bearer ${key}`);
    return fetch(new URL(input as string, baseUrl), { ...init, headers });
  };
}

const own = fetchFor(apiKey);

/** An answer with this status or a failure that shows what came instead. */
function expect<R extends { status: number }, S extends R["status"]>(
  res: R,
  status: S,
  what: string,
): Extract<R, { status: S }> {
  assert.equal(res.status, status, `${what}: ${JSON.stringify(res)}`);
  return res as Extract<R, { status: S }>;
}

/** An error answer; null when the call succeeded. */
function refusalOf(res: { status: number; data: unknown; headers: Headers }): Refusal | null {
  if (res.status >= 200 && res.status < 300) return null;
  const body = res.data as { error?: { code?: string } } | undefined;
  return { status: res.status, code: body?.error?.code, retryAfter: res.headers.get("retry-after") };
}

/** What `forceSuccessResponse` throws: the status and the parsed envelope (typed, as `info`). */
interface OrvalHttpError {
  status?: number;
  info?: downloadTaskResultsResponseError["data"];
}

await runFlow({
  async createTask(emails) {
    return expect(await createTask({ emails }, undefined, own), 201, "create task").data;
  },
  async uploadCsv(file) {
    return expect(await uploadTaskFile({ file }, undefined, own), 202, "upload").data;
  },
  async getTask(id) {
    return expect(await getTask(id, undefined, own), 200, "get task").data;
  },
  async download(id, format) {
    const res = await downloadTaskResults(id, { format }, undefined, own);
    assert.ok(res.data instanceof Blob, `download ${format}: a Blob`);
    return {
      bytes: new Uint8Array(await res.data.arrayBuffer()),
      contentType: res.headers.get("content-type"),
      disposition: res.headers.get("content-disposition"),
    };
  },
  async balance() {
    return expect(await getCreditBalance(undefined, own), 200, "balance").data.balance;
  },
  async downloadRefusal(id) {
    try {
      await downloadTaskResults(id, { format: "csv" }, undefined, own);
      return null;
    } catch (error) {
      const failure = error as OrvalHttpError;
      assert.ok(failure.status !== undefined, `download: not an HTTP error: ${String(error)}`);
      return { status: failure.status, code: failure.info?.error.code, retryAfter: null };
    }
  },
  async createTaskRefusal(emails) {
    return refusalOf(await createTask({ emails }, undefined, fetchFor(plan.poorKey)));
  },
  async balanceRefusal() {
    return refusalOf(await getCreditBalance(undefined, fetchFor(plan.stormKey)));
  },
});
console.log(`integrator (${plan.generator}): every step passed`);
