// SMTP replies as they come off the wire: multi-line assembly (RFC 5321 §4.2.1) and RFC 3463
// enhanced status codes. Pure: bytes in, replies out.
import { StringDecoder } from "node:string_decoder";

export interface SmtpReply {
  /** Three-digit reply code, e.g. 550. */
  code: number;
  /** RFC 3463 enhanced status code of the first line, e.g. "5.1.1"; null when absent. */
  enhanced: string | null;
  /** Line texts (after "550-" / "550 "), joined with "\n". */
  text: string;
}

/** The server spoke something that is not SMTP (or far too much of it). */
export class SmtpProtocolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "SmtpProtocolError";
  }
}

// RFC 5321 §4.5.3.1.5 caps a reply line at 512 octets; real servers overshoot (long Gmail
// help URLs), so allow some slack but stop a hostile peer from filling memory.
const MAX_LINE_CHARS = 4096;
const MAX_REPLY_LINES = 100;
const REPLY_LINE = /^([2-5]\d\d)(?:([ -])(.*))?$/s;
const ENHANCED = /^([245])\.(\d{1,3})\.(\d{1,3})(?=\s|$)/;

/** Parses the enhanced code at the start of a line's text, when its class matches the reply code. */
export function parseEnhancedCode(code: number, text: string): string | null {
  const m = ENHANCED.exec(text);
  if (m === null || Number(m[1]) !== Math.floor(code / 100)) return null;
  return `${m[1]}.${m[2]}.${m[3]}`;
}

/**
 * Incremental reply reader. Feed it socket chunks, get whole replies back:
 * "250-mx.example\r\n250-PIPELINING\r\n250 SIZE\r\n" is one reply of three lines.
 * Tolerates bare LF line ends (seen from broken middleboxes).
 */
export class ReplyReader {
  private decoder = new StringDecoder("utf8");
  private partial = "";
  private lines: { code: number; text: string }[] = [];

  push(chunk: Buffer | string): SmtpReply[] {
    this.partial += typeof chunk === "string" ? chunk : this.decoder.write(chunk);
    const replies: SmtpReply[] = [];
    let newline = this.partial.indexOf("\n");
    while (newline >= 0) {
      const line = this.partial.slice(0, newline).replace(/\r$/, "");
      this.partial = this.partial.slice(newline + 1);
      const reply = this.acceptLine(line);
      if (reply !== null) replies.push(reply);
      newline = this.partial.indexOf("\n");
    }
    if (this.partial.length > MAX_LINE_CHARS) throw new SmtpProtocolError("reply line too long");
    return replies;
  }

  /** Forget buffered bytes (after STARTTLS the plaintext stream must not leak into TLS). */
  reset(): void {
    this.decoder = new StringDecoder("utf8");
    this.partial = "";
    this.lines = [];
  }

  private acceptLine(line: string): SmtpReply | null {
    if (line.length > MAX_LINE_CHARS) throw new SmtpProtocolError("reply line too long");
    const m = REPLY_LINE.exec(line);
    if (m === null)
      throw new SmtpProtocolError(`not an SMTP reply line: ${JSON.stringify(line.slice(0, 80))}`);
    const code = Number(m[1]);
    this.lines.push({ code, text: m[3] ?? "" });
    if (this.lines.length > MAX_REPLY_LINES) throw new SmtpProtocolError("reply has too many lines");
    if (m[2] === "-") return null;
    const lines = this.lines;
    this.lines = [];
    // The code of the first line is the reply's code (RFC 5321 §4.2.1: all lines carry the same).
    const first = lines[0] ?? { code, text: "" };
    return {
      code: first.code,
      enhanced: parseEnhancedCode(first.code, first.text),
      text: lines.map((l) => l.text).join("\n"),
    };
  }
}
