/**
 * The status bar item: the runner's state (idle, queued, optimizing KERNEL) and the GPU last
 * seen, from the server's `cudalens.runnerStatus`, asked every 2 s while the server runs.
 */
import * as vscode from "vscode";
import { LanguageClient } from "vscode-languageclient/node";
import { runServerCommand } from "./server";
import { RunnerStatus, serverDown, statusText } from "./statusText";

const POLL_MS = 2000;

export class RunnerStatusItem implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem("cudalens.runner", vscode.StatusBarAlignment.Left, 50);
  private readonly timer: NodeJS.Timeout;
  private busy = false;

  constructor(private readonly client: () => LanguageClient | undefined) {
    this.item.name = "cudalens runner";
    this.item.command = "cudalens.showOutput";
    this.show(serverDown("starting"));
    this.item.show();
    this.timer = setInterval(() => void this.refresh(), POLL_MS);
  }

  private show(t: { text: string; tooltip: string }): void {
    this.item.text = t.text;
    this.item.tooltip = t.tooltip;
  }

  /** Asks the server for the runner's state now. */
  async refresh(): Promise<void> {
    const c = this.client();
    if (this.busy) {
      return;
    }
    if (!c || !c.isRunning()) {
      this.show(serverDown("not running; see the cudalens output"));
      return;
    }
    this.busy = true;
    try {
      this.show(statusText(await runServerCommand<RunnerStatus>(c, "cudalens.runnerStatus")));
    } catch (err) {
      this.show(serverDown(String(err)));
    } finally {
      this.busy = false;
    }
  }

  dispose(): void {
    clearInterval(this.timer);
    this.item.dispose();
  }
}
