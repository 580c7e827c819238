/**
 * The server's "Capture a real launch" lens (server/cudalens/lsp/capture_action.py) from the
 * command palette, and where the spec it drafts opens. Pure (no `vscode`).
 */

/** The server command the capture lens runs. */
export const CAPTURE_COMMAND = "cudalens.captureLaunch";

export interface LensLike {
  range: { start: { line: number } };
  command?: { command: string; arguments?: unknown[] };
}

/**
 * The argument of the capture lens of the kernel holding `line`: the capture lens nearest
 * above it or on it (each kernel's lenses sit on its first line); undefined when the line is
 * above every kernel.
 */
export function captureArgsAt(lenses: readonly LensLike[], line: number): object | undefined {
  let best: LensLike | undefined;
  for (const lens of lenses) {
    if (lens.command?.command !== CAPTURE_COMMAND || lens.range.start.line > line) {
      continue;
    }
    if (!best || lens.range.start.line > best.range.start.line) {
      best = lens;
    }
  }
  return (best?.command?.arguments ?? [])[0] as object | undefined;
}

/**
 * Whether a `window/showDocument` request opens beside the active editor: the server asks so
 * without taking focus when a capture has drafted a spec, which belongs next to the kernel;
 * a document the user asked for (`takeFocus` true, e.g. "open the spec") opens as usual.
 */
export function opensBeside(params: { takeFocus?: boolean; external?: boolean }): boolean {
  return params.takeFocus === false && params.external !== true;
}
