// The integrator's flow (./shared.ts) through a client openapi-zod-client generated from our
// OpenAPI document (./client-zodios/, made fresh by `npm run test:clients`, never committed): a
// zodios client over axios, with validation on (`validate: "all"`): the parameters sent and every
// JSON body received must parse with the zod schemas made from the document, or the call throws. An
// error status is an axios error; `isErrorFromAlias` narrows it to the operation's declared
// errors, whose bodies the schemas type.
//
// Binary bodies need the integrator's help, as with any axios client. zodios validates only JSON
// bodies, and types the document's binary 200 as `File` (`z.instanceof(File)`); axios in Node
// hands `responseType: "arraybuffer"` back as a Buffer, the error bodies of that call too. So the
// axios instance below turns a downloaded body into the File the type promises (named by its
// Content-Disposition), and an error body that arrived as bytes back into its JSON, which
// `isErrorFromAlias` parses with the declared schema. Axios's own Node adapter, not its fetch
// adapter: axios 1.21's fetch adapter sends a FormData upload as application/x-www-form-urlencoded.
import assert from "node:assert/strict";
import { isErrorFromAlias, type ZodiosOptions } from "@zodios/core";
import axios, { AxiosError, AxiosHeaders } from "axios";
import { createApiClient } from "./client-zodios/client.ts";
import { baseUrl, apiKey, plan, runFlow, type Refusal } from "./shared.ts";

type ZodiosAxios = NonNullable<ZodiosOptions["axiosInstance"]>;

/** The headers each downloaded File arrived with. */
const headersOf = new WeakMap<File, AxiosHeaders>();

/** `filename*=UTF-8''…` if given, else `filename="…"`, else a stand-in. */
function filenameOf(disposition: string | undefined): string {
  const extended = /filename\*=UTF-8''([^;]+)/i.exec(disposition ?? "")?.[1];
  if (extended) return decodeURIComponent(extended);
  return /filename="([^"]+)"/i.exec(disposition ?? "")?.[1] ?? "download";
}

/** A body axios read as bytes (`responseType: "arraybuffer"`), or null when it is something else. */
function bytesOf(data: unknown): Buffer | null {
  if (Buffer.isBuffer(data)) return data;
  return data instanceof ArrayBuffer ? Buffer.from(data) : null;
}

function clientFor(key: string) {
  const http = axios.create({ headers: { authorization: `Bearer ${key}` } });
  http.interceptors.response.use(
    (response) => {
      const bytes = bytesOf(response.data);
      if (bytes) {
        const headers = AxiosHeaders.from(response.headers as AxiosHeaders);
        const type = (headers.get("content-type") as string | undefined) ?? "application/octet-stream";
        const file = new File(
          [new Uint8Array(bytes)],
          filenameOf(headers.get("content-disposition") as string),
          { type },
        );
        headersOf.set(file, headers);
        response.data = file;
      }
      return response;
    },
    (error: unknown) => {
      const response = error instanceof AxiosError ? error.response : undefined;
      const bytes = bytesOf(response?.data);
      if (response && bytes && String(response.headers["content-type"]).includes("json")) {
        response.data = JSON.parse(bytes.toString("utf8")) as unknown;
      }
      throw error;
    },
  );
  // The cast crosses axios's dual-package types only: @zodios/core's CommonJS declarations name
  // axios's index.d.cts, this ES module gets index.d.ts; the object is the same.
  return createApiClient(baseUrl, { axiosInstance: http as unknown as ZodiosAxios, validate: "all" });
}

const client = clientFor(apiKey);
const poor = clientFor(plan.poorKey);
const storm = clientFor(plan.stormKey);

/** A declared error answer, reduced: the status, the envelope's code (typed by the schema), Retry-After. */
function refusalOf(response: {
  status: number;
  data: { error: { code: string } };
  headers: unknown;
}): Refusal {
  const headers = AxiosHeaders.from(response.headers as AxiosHeaders);
  return {
    status: response.status,
    code: response.data.error.code,
    retryAfter: (headers.get("retry-after") as string | undefined) ?? null,
  };
}

await runFlow({
  createTask: (emails) => client.createTask({ emails }),
  uploadCsv: (file) => client.uploadTaskFile({ file }),
  getTask: (id) => client.getTask({ params: { id } }),
  async download(id, format) {
    const file = await client.downloadTaskResults({
      params: { id },
      queries: { format },
      responseType: "arraybuffer",
    });
    const headers = headersOf.get(file);
    assert.ok(headers, `download ${format}: a File made from the response`);
    return {
      bytes: new Uint8Array(await file.arrayBuffer()),
      contentType: (headers.get("content-type") as string | undefined) ?? null,
      disposition: (headers.get("content-disposition") as string | undefined) ?? null,
    };
  },
  balance: async () => (await client.getCreditBalance()).balance,
  downloadRefusal: (id) =>
    client
      .downloadTaskResults({ params: { id }, queries: { format: "xlsx" }, responseType: "arraybuffer" })
      .then(
        () => null,
        (error: unknown) => {
          if (!isErrorFromAlias(client.api, "downloadTaskResults", error)) throw error;
          return refusalOf(error.response);
        },
      ),
  createTaskRefusal: (emails) =>
    poor.createTask({ emails }).then(
      () => null,
      (error: unknown) => {
        if (!isErrorFromAlias(client.api, "createTask", error)) throw error;
        return refusalOf(error.response);
      },
    ),
  balanceRefusal: () =>
    storm.getCreditBalance().then(
      () => null,
      (error: unknown) => {
        if (!isErrorFromAlias(client.api, "getCreditBalance", error)) throw error;
        return refusalOf(error.response);
      },
    ),
});
console.log(`integrator (${plan.generator}): every step passed`);
