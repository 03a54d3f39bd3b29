import { describe, expect, it } from "vitest";
import { logLines, stripAnsi } from "./ansi";

describe("stripAnsi", () => {
  it("drops colour and cursor sequences", () => {
    expect(stripAnsi("\u001b[36m(RolloutWorker pid=12)\u001b[0m started\u001b[2K")).toBe("(RolloutWorker pid=12) started");
  });
  it("keeps the last redraw of a carriage-return progress line", () => {
    expect(stripAnsi("loading 10%\rloading 55%\rloading 100%\nnext")).toBe("loading 100%\nnext");
  });
  it("drops OSC titles", () => {
    expect(stripAnsi("\u001b]0;title\u0007text")).toBe("text");
  });
});

describe("logLines", () => {
  const log = "\u001b[32mINFO\u001b[0m start\nValueError: bad config\nINFO done\n";
  it("marks error lines and drops the trailing empty line", () => {
    expect(logLines(log)).toEqual([
      { text: "INFO start", error: false },
      { text: "ValueError: bad config", error: true },
      { text: "INFO done", error: false },
    ]);
  });
  it("filters case-insensitively", () => {
    expect(logLines(log, "info").map((l) => l.text)).toEqual(["INFO start", "INFO done"]);
    expect(logLines(log, "nothing")).toEqual([]);
  });
});
