// WebSocket with automatic reconnect and backoff.
import type { SocketMessage } from "./types";

export interface SocketHandlers {
  /** Called for every parsed JSON message. */
  message: (msg: SocketMessage) => void;
  /** Called each time the socket (re)opens. */
  open?: () => void;
}

/** Absolute ws:// or wss:// URL for a same-origin path. */
export function wsUrl(path: string): string {
  return (location.protocol === "https:" ? "wss://" : "ws://") + location.host + path;
}

/**
 * Keep a WebSocket to `url` open: on close, retry after 1s, 2s, 4s, ...
 * capped at 10s (reset once a connection opens). Mirrors the state into
 * `document.body.dataset.ws` ("connecting" until the first
 * attempt settles, then "open" / "closed").
 */
export function connectSocket(url: string, handlers: SocketHandlers): void {
  let attempt = 0;

  const connect = () => {
    const ws = new WebSocket(url);
    ws.onopen = () => {
      attempt = 0;
      document.body.dataset.ws = "open";
      handlers.open?.();
    };
    ws.onmessage = (event) => {
      let msg: SocketMessage;
      try {
        msg = JSON.parse(event.data as string);
      } catch {
        console.warn("dashboard: ignoring non-JSON message");
        return;
      }
      handlers.message(msg);
    };
    ws.onclose = () => {
      document.body.dataset.ws = "closed";
      const delay = Math.min(1000 * 2 ** attempt, 10_000);
      attempt += 1;
      setTimeout(connect, delay);
    };
  };

  document.body.dataset.ws = "connecting";
  connect();
}
