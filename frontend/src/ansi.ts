// The job log as a reader wants it (ours): ANSI escape sequences (colours, cursor moves)
// removed, and the lines that match a search.

// CSI sequences (ESC [ ... final byte), OSC sequences (ESC ] ... BEL or ESC \), other
// two-byte escapes, and carriage-return progress redraws.
const ANSI = /\u001b\[[0-?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)|\u001b[@-Z\\-_]/g;

/** `text` without ANSI escapes; a line redrawn with `\r` keeps only its last version. */
export function stripAnsi(text: string): string {
  return text
    .replace(ANSI, "")
    .split("\n")
    .map((line) => {
      const parts = line.split("\r").filter((p) => p !== "");
      return parts.length ? parts[parts.length - 1] : "";
    })
    .join("\n");
}

/** A line of the log and whether it is an error line (Error, Exception, Traceback, Killed, OOM). */
export interface LogLine {
  text: string;
  error: boolean;
}

const ERROR = /(Error|Exception|Traceback|Killed|OOM)\b/;

/** The lines of the cleaned log, or only those containing `query` (case-insensitive) when given. */
export function logLines(text: string, query = ""): LogLine[] {
  const q = query.trim().toLowerCase();
  const lines = stripAnsi(text).replace(/\n+$/, "").split("\n");
  return lines
    .filter((line) => !q || line.toLowerCase().includes(q))
    .map((line) => ({ text: line, error: ERROR.test(line) }));
}
