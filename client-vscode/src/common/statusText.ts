/**
 * The status bar item's text and tooltip from the server's `cudalens.runnerStatus` answer.
 * Pure.
 */

export interface RunnerStatus {
  state: "idle" | "queued" | "running";
  kernel: string | null;
  message: string | null;
  queued: number;
  runner: string;
  device: string | null;
  deviceId: string | null;
}

export interface StatusText {
  text: string;
  tooltip: string;
}

/** Text for a server that is not (yet) running, with the reason. */
export function serverDown(reason: string): StatusText {
  return { text: "$(error) cudalens: server stopped", tooltip: `cudalens language server: ${reason}` };
}

/** Text and tooltip for `status`. */
export function statusText(status: RunnerStatus): StatusText {
  const gpu = status.device ?? "GPU not seen yet";
  let text: string;
  if (status.state === "running") {
    text = `$(sync~spin) cudalens: optimizing ${status.kernel ?? "?"} · ${gpu}`;
  } else if (status.state === "queued") {
    text = `$(watch) cudalens: ${status.queued} queued · ${gpu}`;
  } else {
    text = `$(pulse) cudalens: idle · ${gpu}`;
  }
  const lines = [`Runner: ${status.runner}`, `GPU: ${status.deviceId ?? gpu}`];
  if (status.message) {
    lines.push(`${status.kernel ?? ""}: ${status.message}`);
  }
  if (status.queued && status.state === "running") {
    lines.push(`${status.queued} more queued`);
  }
  return { text, tooltip: lines.join("\n") };
}
