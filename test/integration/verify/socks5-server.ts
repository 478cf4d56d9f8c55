// A minimal SOCKS5 server (RFC 1928 CONNECT, RFC 1929 user/password) for the egress tests.
import net from "node:net";

export interface Socks5Server {
  port: number;
  /** Destinations asked for, as "host:port". */
  requests: string[];
  close(): Promise<void>;
}

export async function startSocks5Server(auth?: { user: string; password: string }): Promise<Socks5Server> {
  const requests: string[] = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    sockets.add(client);
    client.on("close", () => sockets.delete(client));
    client.on("error", () => undefined);
    let buffer = Buffer.alloc(0);
    let stage: "greeting" | "auth" | "request" | "piping" = "greeting";
    const onData = (chunk: Buffer): void => {
      buffer = Buffer.concat([buffer, chunk]);
      for (;;) {
        if (stage === "greeting") {
          if (buffer.length < 2 || buffer.length < 2 + (buffer[1] ?? 0)) return;
          const methods = [...buffer.subarray(2, 2 + (buffer[1] ?? 0))];
          buffer = buffer.subarray(2 + (buffer[1] ?? 0));
          const wanted = auth === undefined ? 0x00 : 0x02;
          if (!methods.includes(wanted)) {
            client.end(Buffer.from([5, 0xff]));
            return;
          }
          client.write(Buffer.from([5, wanted]));
          stage = auth === undefined ? "request" : "auth";
        } else if (stage === "auth") {
          const ulen = buffer[1];
          if (ulen === undefined || buffer.length < 3 + ulen) return;
          const plen = buffer[2 + ulen];
          if (plen === undefined || buffer.length < 3 + ulen + plen) return;
          const user = buffer.subarray(2, 2 + ulen).toString();
          const password = buffer.subarray(3 + ulen, 3 + ulen + plen).toString();
          buffer = buffer.subarray(3 + ulen + plen);
          const ok = user === auth?.user && password === auth.password;
          client.write(Buffer.from([1, ok ? 0 : 1]));
          if (!ok) {
            client.end();
            return;
          }
          stage = "request";
        } else if (stage === "request") {
          if (buffer.length < 10 || buffer[3] !== 0x01) return; // IPv4 destinations only
          const host = [...buffer.subarray(4, 8)].join(".");
          const port = buffer.readUInt16BE(8);
          buffer = buffer.subarray(10);
          requests.push(`${host}:${port.toString()}`);
          stage = "piping";
          client.off("data", onData);
          const upstream = net.connect({ host, port });
          sockets.add(upstream);
          upstream.on("close", () => sockets.delete(upstream));
          upstream.once("connect", () => {
            client.write(Buffer.from([5, 0, 0, 1, 0, 0, 0, 0, 0, 0]));
            if (buffer.length > 0) upstream.write(buffer);
            client.pipe(upstream);
            upstream.pipe(client);
          });
          upstream.once("error", () => {
            // 0x05 = connection refused by the destination
            if (!client.destroyed) client.end(Buffer.from([5, 5, 0, 1, 0, 0, 0, 0, 0, 0]));
          });
          client.once("close", () => upstream.destroy());
          return;
        } else {
          return;
        }
      }
    };
    client.on("data", onData);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    port,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
