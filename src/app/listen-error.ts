/**
 * The HTTP port could not be opened for a reason the operator fixes with PORT or HOST: main.ts
 * prints the message as one line and exits 1 (a stack trace here only buried the one fact).
 */
export class ListenError extends Error {
  override name = "ListenError";
}

/** The one-line explanation of a failed listen, or null when it is not the operator's to fix. */
export function explainListenError(err: unknown, host: string, port: number): ListenError | null {
  const code = (err as { code?: unknown } | null)?.code;
  switch (code) {
    case "EADDRINUSE":
      return new ListenError(`port ${port} is in use; set PORT`);
    case "EACCES":
      return new ListenError(`not allowed to listen on port ${port} (below 1024 needs privileges); set PORT`);
    case "EADDRNOTAVAIL":
      return new ListenError(`HOST ${host} is not an address of this machine; set HOST`);
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return new ListenError(`HOST ${host} does not resolve to an address; set HOST`);
    default:
      return null;
  }
}
