/**
 * The server's work-done progress (an optimization) as a VS Code notification with a Cancel
 * button. vscode-languageclient shows server progress in the status bar, where it cannot be
 * cancelled; this handler of `window/workDoneProgress/create` replaces it: begin opens the
 * notification, report updates its message and bar (percent), end closes it, and Cancel
 * sends `window/workDoneProgress/cancel` (the server stops the job).
 */
import * as vscode from "vscode";
import {
  LanguageClient, ProgressToken, WorkDoneProgress, WorkDoneProgressBegin,
  WorkDoneProgressCancelNotification, WorkDoneProgressCreateRequest, WorkDoneProgressEnd,
  WorkDoneProgressReport,
} from "vscode-languageclient/node";

type Value = WorkDoneProgressBegin | WorkDoneProgressReport | WorkDoneProgressEnd;

class NotificationProgress {
  private report?: vscode.Progress<{ message?: string; increment?: number }>;
  private percent = 0;
  private finish?: () => void;
  private readonly listener: vscode.Disposable;

  constructor(private readonly client: LanguageClient, private readonly token: ProgressToken,
    private readonly onDone: (ended: string | undefined) => void) {
    this.listener = client.onProgress(WorkDoneProgress.type, token, (value: Value) => this.on(value));
  }

  private on(value: Value): void {
    if (value.kind === "begin") {
      void vscode.window.withProgress({
        location: vscode.ProgressLocation.Notification, title: value.title,
        cancellable: value.cancellable ?? false,
      }, (progress, cancel) => {
        this.report = progress;
        this.update(value.message, value.percentage);
        cancel.onCancellationRequested(() => {
          void this.client.sendNotification(WorkDoneProgressCancelNotification.type, { token: this.token });
        });
        return new Promise<void>((resolve) => (this.finish = resolve));
      });
    } else if (value.kind === "report") {
      this.update(value.message, value.percentage);
    } else {
      this.listener.dispose();
      this.finish?.();
      this.onDone(value.message);
    }
  }

  private update(message: string | undefined, percentage: number | undefined): void {
    let increment: number | undefined;
    if (percentage !== undefined && percentage > this.percent) {
      increment = percentage - this.percent;
      this.percent = percentage;
    }
    this.report?.report({ message, increment });
  }
}

/**
 * Handles the server's progress from now on (call after the client started).
 * @param ended called with each progress's end message
 */
export function showProgressAsNotifications(client: LanguageClient,
  ended: (message: string | undefined) => void): vscode.Disposable {
  return client.onRequest(WorkDoneProgressCreateRequest.type, (params) => {
    new NotificationProgress(client, params.token, ended);
  });
}
