/**
 * The kernel report in a webview: the page the server renders from the stored run
 * (`cudalens.kernelReport`: a roofline chart as inline SVG, the candidates, the search's
 * history; the same page `cudalens report` writes). The page loads nothing (its content
 * security policy is `default-src 'none'`; no scripts), takes the editor theme's colours from
 * the `--vscode-*` CSS variables, and is rendered again when the server says a new run of the
 * kernel was stored (`cudalens/runStored`).
 */
import * as vscode from "vscode";
import { LanguageClient } from "vscode-languageclient/node";
import { panelKey, parseReportArgs, ReportArgs } from "./reportLens";
import { runServerCommand } from "./server";

interface ReportAnswer { ok: boolean; reason?: string; html?: string; title?: string; key?: string }

export const RUN_STORED = "cudalens/runStored";

export class ReportPanels implements vscode.Disposable {
  private readonly panels = new Map<string, { panel: vscode.WebviewPanel; args: ReportArgs; key?: string }>();

  constructor(private readonly client: () => LanguageClient | undefined) {}

  private running(): LanguageClient {
    const c = this.client();
    if (!c || !c.isRunning()) {
      throw new Error("the cudalens language server is not running (see the cudalens output)");
    }
    return c;
  }

  /** Opens (or reveals and renders again) the report of the kernel `arg` names. */
  async show(arg: unknown): Promise<void> {
    const args = parseReportArgs(arg);
    const answer = await runServerCommand<ReportAnswer>(this.running(), "cudalens.kernelReport", args);
    if (!answer.ok || answer.html === undefined) {
      void vscode.window.showWarningMessage(`cudalens: no report: ${answer.reason ?? "no page"}`);
      return;
    }
    const id = panelKey(args);
    let entry = this.panels.get(id);
    if (!entry) {
      const panel = vscode.window.createWebviewPanel("cudalens.report", answer.title ?? args.kernel,
        { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true },
        { enableScripts: false, localResourceRoots: [], retainContextWhenHidden: false });
      entry = { panel, args };
      this.panels.set(id, entry);
      panel.onDidDispose(() => this.panels.delete(id));
    } else {
      entry.panel.reveal(undefined, true);
    }
    entry.key = answer.key;
    entry.panel.title = answer.title ?? args.kernel;
    entry.panel.webview.html = answer.html;
  }

  /** A run was stored: renders the report of that kernel again where one is open. */
  async runStored(params: { uri?: string; kernel?: string; key?: string }): Promise<void> {
    if (typeof params?.uri !== "string" || typeof params?.kernel !== "string") {
      return;
    }
    const entry = this.panels.get(panelKey({ uri: params.uri, kernel: params.kernel }));
    if (!entry || entry.key === params.key) {
      return;
    }
    const answer = await runServerCommand<ReportAnswer>(this.running(), "cudalens.kernelReport", entry.args);
    if (answer.ok && answer.html !== undefined) {
      entry.key = answer.key;
      entry.panel.webview.html = answer.html;
    }
  }

  dispose(): void {
    for (const { panel } of this.panels.values()) {
      panel.dispose();
    }
    this.panels.clear();
  }
}
