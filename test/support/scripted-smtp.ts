// A tiny scripted SMTP server for conversations the mail-world simulator can't stage (it always
// offers PIPELINING and knows EHLO): it records exactly what the client sent, and how it was
// batched. Listens on 127.0.0.1 only.
import net from "node:net";

export interface Scripted {
  port: number;
  /** Every command line received, in order. */
  commands: string[];
  /** Lines per TCP chunk received: all 1s means the client waited for each reply. */
  batches: number[];
  /** Connections accepted. */
  connections: number;
  close(): Promise<void>;
}

/** Appended to a scripted reply: send it, then close the connection. */
export const HANG_UP = "\u0000hang-up";

export interface ScriptedOptions {
  /**
   * Hold the replies to one received chunk (a pipelined write) until the whole chunk is read,
   * as RFC 2920 servers may; a hang-up inside the chunk then loses the replies before it too.
   */
  holdReplies?: boolean;
}

/** `reply(line)` returns the reply text (lines joined with \r\n) or null to hang up. */
export async function startScripted(
  banner: string,
  reply: (line: string) => string | null,
  options: ScriptedOptions = {},
): Promise<Scripted> {
  const commands: string[] = [];
  const batches: number[] = [];
  const sockets = new Set<net.Socket>();
  const counts = { connections: 0 };
  const server = net.createServer((socket) => {
    counts.connections++;
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => undefined);
    socket.write(`${banner}\r\n`);
    let partial = "";
    socket.on("data", (chunk: Buffer) => {
      const lines = (partial + chunk.toString("utf8")).split("\r\n");
      partial = lines.pop() ?? "";
      batches.push(lines.length);
      let held = "";
      const send = (text: string): void => {
        if (options.holdReplies === true) held += text;
        else socket.write(text);
      };
      for (const line of lines) {
        commands.push(line);
        const answer = line.toUpperCase() === "QUIT" ? "221 2.0.0 Bye" : reply(line);
        if (answer === null) {
          // A hang-up: what was held for this chunk is lost with the connection.
          if (options.holdReplies === true) socket.destroy();
          else socket.end();
          return;
        }
        // After QUIT's 221 or a 421 a server closes the connection; a script can ask for it too.
        if (answer.endsWith(HANG_UP)) {
          socket.end(`${held}${answer.slice(0, -HANG_UP.length)}\r\n`);
          return;
        }
        if (line.toUpperCase() === "QUIT" || answer.startsWith("421")) {
          socket.end(`${held}${answer}\r\n`);
          return;
        }
        send(`${answer}\r\n`);
      }
      if (held !== "") socket.write(held);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    commands,
    batches,
    get connections() {
      return counts.connections;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
