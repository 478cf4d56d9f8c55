// What the doctor's unit tests share: a scripted SMTP server on loopback, DNS answer helpers and
// the options of a run.
import net from "node:net";
import type { DoctorOptions } from "../../../src/doctor/doctor.ts";
import type { DnsAnswer } from "../../../src/verify/ports.ts";

const servers: net.Server[] = [];

/** Closes every server scriptedSmtp started (call it from the file's `after`). */
export async function closeScriptedSmtp(): Promise<void> {
  await Promise.all(servers.splice(0).map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
}

/**
 * A one-conversation-at-a-time SMTP server: fixed replies per verb. The EHLO reply may depend on
 * the client address the server sees, as Postfix's "Hello [ip]" does.
 */
export async function scriptedSmtp(replies: {
  ehlo?: string | ((client: string) => string);
  mail?: string;
  rcpt?: string;
}): Promise<number> {
  const server = net.createServer((socket) => {
    socket.on("error", () => undefined);
    socket.write("220 mx.example.net ESMTP\r\n");
    const client = (socket.remoteAddress ?? "").replace(/^::ffff:/, "");
    const ehlo = typeof replies.ehlo === "function" ? replies.ehlo(client) : replies.ehlo;
    let partial = "";
    socket.on("data", (chunk: Buffer) => {
      const lines = (partial + chunk.toString()).split("\r\n");
      partial = lines.pop() ?? "";
      for (const line of lines) {
        const verb = line.slice(0, 4).toUpperCase();
        if (verb === "QUIT") socket.end("221 2.0.0 Bye\r\n");
        else if (verb === "EHLO") socket.write(`${ehlo ?? "250 mx.example.net"}\r\n`);
        else if (verb === "MAIL") socket.write(`${replies.mail ?? "250 2.1.0 Ok"}\r\n`);
        else if (verb === "RCPT") socket.write(`${replies.rcpt ?? "250 2.1.5 Ok"}\r\n`);
        else socket.write("502 5.5.2 Error: command not recognized\r\n");
      }
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return (server.address() as net.AddressInfo).port;
}

export const found = <T>(records: T): DnsAnswer<T> => ({ kind: "found", records });
export const NX = { kind: "nxdomain" } as const;

/** The options of a doctor run against the scripted server on `port`. */
export function doctorOptions(port: number, over: Partial<DoctorOptions> = {}): DoctorOptions {
  return {
    heloName: "mail.example.com",
    heloNameSource: "configured",
    mailFrom: "verify@example.com",
    dnsServers: ["192.0.2.53"],
    smtpPort: port,
    mxTarget: null,
    viaProxy: false,
    dnsTimeoutMs: 500,
    smtpConnectTimeoutMs: 1000,
    smtpGreetingTimeoutMs: 1000,
    smtpCommandTimeoutMs: 1000,
    ...over,
  };
}
