import pg from "pg";
import { assertChannelName, type ChannelHandlers, type Subscription } from "./client.ts";

/** How long to wait before re-opening a listening connection that dropped (a restart, a failover). */
const RECONNECT_DELAY_MS = 500;

/**
 * LISTEN on a connection of its own (a pooled one would be handed to other work between queries,
 * and its notifications lost). When that connection drops, the subscription reports `connected:
 * false` until a new one is listening, then tells the handlers about the gap, since anything
 * sent in between was missed. The socket is unref'd: a subscription never keeps a process alive.
 */
export async function listenOnPostgres(
  connectionString: string,
  channel: string,
  handlers: ChannelHandlers,
  onError: (e: Error) => void,
): Promise<Subscription> {
  assertChannelName(channel);
  let client: pg.Client | null = null;
  let connected = false;
  let closed = false;
  let retry: NodeJS.Timeout | undefined;

  const scheduleReconnect = (): void => {
    if (closed || retry) return;
    retry = setTimeout(() => {
      retry = undefined;
      void connect();
    }, RECONNECT_DELAY_MS);
    retry.unref();
  };

  const lost = (c: pg.Client): void => {
    if (client !== c) return;
    client = null;
    connected = false;
    scheduleReconnect();
  };

  async function connect(): Promise<void> {
    const c = new pg.Client({ connectionString, application_name: "mailprobe-listen" });
    c.on("error", (e: Error) => {
      onError(e);
      lost(c);
    });
    c.on("end", () => lost(c));
    c.on("notification", (n) => {
      if (n.channel === channel) handlers.message(n.payload ?? "");
    });
    client = c;
    try {
      await c.connect();
      (c as unknown as { connection?: { stream?: { unref?: () => void } } }).connection?.stream?.unref?.();
      await c.query(`listen ${channel}`);
    } catch (e) {
      onError(e instanceof Error ? e : new Error(String(e)));
      lost(c);
      await c.end().catch(() => {});
      return;
    }
    if (closed || client !== c) {
      await c.end().catch(() => {});
      return;
    }
    connected = true;
    handlers.gap();
  }

  await connect();
  return {
    get connected() {
      return connected;
    },
    async close() {
      closed = true;
      connected = false;
      clearTimeout(retry);
      const c = client;
      client = null;
      await c?.end().catch(() => {});
    },
  };
}
