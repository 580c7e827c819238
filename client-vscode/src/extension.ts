/**
 * The cudalens extension: starts the language server for CUDA files, swaps its candidate
 * commands for a diff editor with accept/reject, keeps secrets in SecretStorage, shows the
 * runner's state in the status bar. Progress notifications (with cancel) come from the
 * server's work-done progress.
 */
import * as vscode from "vscode";
import { LanguageClient } from "vscode-languageclient/node";
import { CandidateCommands, CandidateDocuments } from "./common/candidates";
import { SCHEME } from "./common/candidateUri";
import { missingServerHelp } from "./common/interpreter";
import { onPythonInterpreterChange, resolveInterpreter } from "./common/python";
import { CAPTURE_COMMAND } from "./common/captureLens";
import {
  captureArgsAtLine, optimizeArgsAt, runServerCommand, settingsChanged, startServer,
} from "./common/server";
import { SECRET_LLM_API_KEY, SECRET_RUNNER_TOKEN } from "./common/serverSettings";
import { RESTART_SETTINGS, SECTION, Secrets } from "./common/settings";
import { ReportPanels, RUN_STORED } from "./common/report";
import { SHOW_REPORT } from "./common/reportLens";
import { RunnerStatusItem } from "./common/status";

let client: LanguageClient | undefined;
let starting: Promise<void> | undefined;

async function restart(secrets: Secrets, log: vscode.LogOutputChannel, status: RunnerStatusItem,
  reports: ReportPanels): Promise<void> {
  const old = client;
  client = undefined;
  if (old) {
    try {
      await old.stop();
    } catch (err) {
      log.warn(`stopping the server: ${String(err)}`);
    }
  }
  const interpreter = await resolveInterpreter(log);
  try {
    client = await startServer(interpreter, secrets, log);
    client.onNotification(RUN_STORED, (params) => {
      reports.runStored(params).catch((err) => log.warn(`refreshing a kernel report: ${String(err)}`));
    });
  } catch (err) {
    const message = missingServerHelp(interpreter, err instanceof Error ? err.message : String(err));
    log.error(message);
    void vscode.window.showErrorMessage(message, "Show Output").then((pick) => {
      if (pick) {
        log.show();
      }
    });
  }
  await status.refresh();
}

function report(err: unknown): void {
  void vscode.window.showErrorMessage(`cudalens: ${err instanceof Error ? err.message : String(err)}`);
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const log = vscode.window.createOutputChannel("cudalens", { log: true });
  const secrets = new Secrets(context.secrets);
  const docs = new CandidateDocuments();
  const status = new RunnerStatusItem(() => client);
  const candidates = new CandidateCommands(() => client, docs);
  const reports = new ReportPanels(() => client);
  const restartNow = () => (starting = restart(secrets, log, status, reports));
  const guarded = (f: (arg: unknown) => Promise<unknown>) => async (arg: unknown) => {
    try {
      await f(arg);
    } catch (err) {
      report(err);
    }
  };

  context.subscriptions.push(
    log, status, reports,
    vscode.workspace.registerTextDocumentContentProvider(SCHEME, docs),
    vscode.commands.registerCommand("cudalens.diff.show", guarded((a) => candidates.show(a))),
    vscode.commands.registerCommand("cudalens.diff.accept", guarded((a) => candidates.accept(a))),
    vscode.commands.registerCommand("cudalens.diff.reject", guarded((a) => candidates.reject(a))),
    vscode.commands.registerCommand(SHOW_REPORT, guarded(async (a) => {
      if (a !== undefined) {
        return reports.show(a);
      }
      const editor = vscode.window.activeTextEditor;
      if (!editor || editor.document.languageId !== "cuda-cpp") {
        throw new Error("open a CUDA file and put the cursor in a kernel");
      }
      if (!client?.isRunning()) {
        throw new Error("the cudalens language server is not running (see the cudalens output)");
      }
      const args = await optimizeArgsAt(client, editor.document, editor.selection);
      if (!args) {
        throw new Error("no kernel with a harness spec at the cursor");
      }
      return reports.show(args);
    })),
    vscode.commands.registerCommand("cudalens.restart", () => restartNow()),
    vscode.commands.registerCommand("cudalens.showOutput", () => log.show()),
    vscode.commands.registerCommand("cudalens.optimizeAtCursor", guarded(async () => {
      const editor = vscode.window.activeTextEditor;
      if (!editor || editor.document.languageId !== "cuda-cpp") {
        throw new Error("open a CUDA file and put the cursor in a kernel");
      }
      if (!client?.isRunning()) {
        throw new Error("the cudalens language server is not running (see the cudalens output)");
      }
      const args = await optimizeArgsAt(client, editor.document, editor.selection);
      if (!args) {
        throw new Error("no kernel with a harness spec at the cursor");
      }
      await runServerCommand(client, "cudalens.optimize", args);
      await status.refresh();
    })),
    vscode.commands.registerCommand("cudalens.captureAtCursor", guarded(async () => {
      const editor = vscode.window.activeTextEditor;
      if (!editor || editor.document.languageId !== "cuda-cpp") {
        throw new Error("open a CUDA file and put the cursor in a kernel");
      }
      if (!client?.isRunning()) {
        throw new Error("the cudalens language server is not running (see the cudalens output)");
      }
      const args = await captureArgsAtLine(client, editor.document, editor.selection.active.line);
      if (!args) {
        throw new Error("no kernel at the cursor");
      }
      await runServerCommand(client, CAPTURE_COMMAND, args);
    })),
    vscode.commands.registerCommand("cudalens.setRunnerToken", guarded(async () => {
      await secrets.prompt(SECRET_RUNNER_TOKEN, "runner token");
    })),
    vscode.commands.registerCommand("cudalens.setLlmApiKey", guarded(async () => {
      await secrets.prompt(SECRET_LLM_API_KEY, "LLM API key");
    })),
    vscode.commands.registerCommand("cudalens.clearSecrets", guarded(() => secrets.clear())),
    secrets.onDidChange((key) => {
      if (key === SECRET_LLM_API_KEY) {
        void restartNow(); // the key is in the server's environment
      } else if (key === SECRET_RUNNER_TOKEN && client?.isRunning()) {
        void settingsChanged(client);
      }
    }),
    vscode.workspace.onDidGrantWorkspaceTrust(() => {
      if (client?.isRunning()) {
        void settingsChanged(client); // the server reads workspaceTrusted again
      }
    }),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (RESTART_SETTINGS.some((s) => e.affectsConfiguration(s))) {
        void restartNow();
      } else if (e.affectsConfiguration(SECTION) && client?.isRunning()) {
        void settingsChanged(client);
      }
    }),
  );
  const pythonWatch = await onPythonInterpreterChange(log, () => void restartNow());
  if (pythonWatch) {
    context.subscriptions.push(pythonWatch);
  }
  await restartNow();
}

export async function deactivate(): Promise<void> {
  await starting;
  await client?.stop();
}
