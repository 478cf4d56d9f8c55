// A multipart/form-data body, by hand: the upload suites send exactly the bytes they mean.
import { randomBytes } from "node:crypto";

export type Part =
  | { name: string; value: string }
  | { name: string; filename: string; data: Buffer | string; contentType?: string };

export function multipart(parts: readonly Part[]): { payload: Buffer; contentType: string } {
  const boundary = `----mailprobe-test-${randomBytes(12).toString("hex")}`;
  const chunks: Buffer[] = [];
  for (const p of parts) {
    chunks.push(Buffer.from(`--${boundary}\r\n`, "utf8"));
    if ("filename" in p) {
      chunks.push(
        Buffer.from(
          `Content-Disposition: form-data; name="${p.name}"; filename="${p.filename}"\r\n` +
            `Content-Type: ${p.contentType ?? "application/octet-stream"}\r\n\r\n`,
          "utf8",
        ),
        typeof p.data === "string" ? Buffer.from(p.data, "utf8") : p.data,
      );
    } else {
      chunks.push(Buffer.from(`Content-Disposition: form-data; name="${p.name}"\r\n\r\n${p.value}`, "utf8"));
    }
    chunks.push(Buffer.from("\r\n", "utf8"));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`, "utf8"));
  return { payload: Buffer.concat(chunks), contentType: `multipart/form-data; boundary=${boundary}` };
}
