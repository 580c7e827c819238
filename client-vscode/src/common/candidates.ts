/**
 * A candidate in VS Code's diff editor: the file on the left, a read-only virtual document
 * of the file with the candidate applied on the right (`cudalens-candidate:` scheme, text
 * from the server's `cudalens.candidateSource`); accept and reject in the diff's title bar
 * and in the code lens. Accept asks the server to apply (a versioned workspace edit), then
 * saves what the edit changed, so the file on disk holds the candidate; both close the diff.
 */
import * as path from "node:path";
import * as vscode from "vscode";
import { LanguageClient } from "vscode-languageclient/node";
import { argsFromQuery, CandidateArgs, candidateLocation, parseCandidateArgs, SCHEME } from "./candidateUri";
import { runServerCommand } from "./server";

interface SourceAnswer { ok: boolean; reason?: string; text?: string; label?: string; title?: string }
interface ApplyAnswer { ok: boolean; applied?: boolean; reason?: string }
interface RejectAnswer { ok: boolean; rejected?: string; reason?: string }

/** Texts of the candidate documents shown, by URI. Read-only: VS Code gives no way to save them. */
export class CandidateDocuments implements vscode.TextDocumentContentProvider {
  private readonly texts = new Map<string, string>();
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;

  set(uri: vscode.Uri, text: string): void {
    this.texts.set(uri.toString(), text);
    this.changed.fire(uri);
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.toString()) ??
      "// cudalens: this candidate is no longer shown; run 'show diff' from the code lens again\n";
  }
}

/** The candidate a command is about: its argument (lens), a candidate URI (title bar) or the active diff. */
function candidateOf(arg: unknown): CandidateArgs {
  if (arg instanceof vscode.Uri) {
    if (arg.scheme !== SCHEME) {
      throw new Error(`expected a ${SCHEME}: document, found ${arg.toString()}`);
    }
    return argsFromQuery(arg.query);
  }
  if (arg === undefined) {
    const tab = vscode.window.tabGroups.activeTabGroup.activeTab;
    if (tab?.input instanceof vscode.TabInputTextDiff && tab.input.modified.scheme === SCHEME) {
      return argsFromQuery(tab.input.modified.query);
    }
    throw new Error("no candidate diff is active; use the code lens above the kernel");
  }
  return parseCandidateArgs(arg);
}

async function closeDiffsOf(args: CandidateArgs): Promise<void> {
  const tabs: vscode.Tab[] = [];
  for (const group of vscode.window.tabGroups.all) {
    for (const tab of group.tabs) {
      if (tab.input instanceof vscode.TabInputTextDiff && tab.input.modified.scheme === SCHEME &&
          argsFromQuery(tab.input.modified.query).uri === args.uri) {
        tabs.push(tab);
      }
    }
  }
  if (tabs.length) {
    await vscode.window.tabGroups.close(tabs);
  }
}

export class CandidateCommands {
  constructor(private readonly client: () => LanguageClient | undefined,
    private readonly docs: CandidateDocuments) {}

  private running(): LanguageClient {
    const c = this.client();
    if (!c || !c.isRunning()) {
      throw new Error("the cudalens language server is not running (see the cudalens output)");
    }
    return c;
  }

  /** Opens the diff editor: the file against the file with the candidate applied. */
  async show(arg: unknown): Promise<void> {
    const args = candidateOf(arg);
    const answer = await runServerCommand<SourceAnswer>(this.running(), "cudalens.candidateSource", args);
    if (!answer.ok || answer.text === undefined) {
      void vscode.window.showWarningMessage(`cudalens: no diff: ${answer.reason ?? "no text"}`);
      return;
    }
    const file = vscode.Uri.parse(args.uri);
    const loc = candidateLocation(args, file.path);
    const candidate = vscode.Uri.from({ scheme: SCHEME, path: loc.path, query: loc.query });
    this.docs.set(candidate, answer.text);
    await vscode.commands.executeCommand("vscode.diff", file, candidate,
      `${path.basename(file.path)} ↔ ${answer.label} (candidate, read-only)`, { preview: false });
    if (answer.title) {
      vscode.window.setStatusBarMessage(`cudalens: ${answer.title}`, 10000);
    }
  }

  /** Applies the candidate, saves the documents the edit changed, closes the diff. */
  async accept(arg: unknown): Promise<boolean> {
    const args = candidateOf(arg);
    const dirtyBefore = new Set(vscode.workspace.textDocuments.filter((d) => d.isDirty)
      .map((d) => d.uri.toString()));
    const answer = await runServerCommand<ApplyAnswer>(this.running(), "cudalens.apply", args);
    if (!answer.ok || !answer.applied) {
      return false; // the server said why in a message
    }
    for (const doc of vscode.workspace.textDocuments) {
      if (doc.isDirty && doc.uri.scheme === "file" && !dirtyBefore.has(doc.uri.toString())) {
        if (!(await doc.save())) {
          void vscode.window.showErrorMessage(`cudalens: the candidate was applied but ${doc.uri.fsPath} could not be saved`);
        }
      }
    }
    await closeDiffsOf(args);
    return true;
  }

  /** Rejects the candidate (not offered again for this source); the file is left as it is. */
  async reject(arg: unknown): Promise<boolean> {
    const args = candidateOf(arg);
    const answer = await runServerCommand<RejectAnswer>(this.running(), "cudalens.reject", args);
    if (!answer.ok) {
      return false;
    }
    await closeDiffsOf(args);
    return true;
  }
}
