/**
 * The read-only virtual documents that show a candidate in the diff editor:
 * `cudalens-candidate:/<path of the file>?<query>` where the query holds the command
 * argument the server's lenses give (`uri`, `kernel`, `candidate`, `version`). Pure.
 */

export const SCHEME = "cudalens-candidate";

/** The argument of the server's candidate commands (see server/cudalens/lsp/commands.py). */
export interface CandidateArgs {
  uri: string;
  kernel: string;
  candidate: string;
  version?: number;
}

/**
 * `value` as CandidateArgs.
 * @throws Error saying which field is missing or of the wrong type
 */
export function parseCandidateArgs(value: unknown): CandidateArgs {
  if (typeof value !== "object" || value === null) {
    throw new Error(`expected an object with uri, kernel and candidate, found ${JSON.stringify(value)}`);
  }
  const v = value as Record<string, unknown>;
  for (const name of ["uri", "kernel", "candidate"]) {
    if (typeof v[name] !== "string" || v[name] === "") {
      throw new Error(`expected a string '${name}' in the candidate argument, found ${JSON.stringify(v[name])}`);
    }
  }
  if (v.version !== undefined && !Number.isInteger(v.version)) {
    throw new Error(`expected an integer 'version', found ${JSON.stringify(v.version)}`);
  }
  const out: CandidateArgs = { uri: v.uri as string, kernel: v.kernel as string, candidate: v.candidate as string };
  if (v.version !== undefined) {
    out.version = v.version as number;
  }
  return out;
}

/** Path and query of the virtual document of `args`; `filePath` is the document's path. */
export function candidateLocation(args: CandidateArgs, filePath: string): { path: string; query: string } {
  const q = new URLSearchParams({ uri: args.uri, kernel: args.kernel, candidate: args.candidate });
  if (args.version !== undefined) {
    q.set("version", String(args.version));
  }
  return { path: filePath, query: q.toString() };
}

/**
 * The CandidateArgs held in a virtual document's query.
 * @throws Error when the query lacks a field or the version is not an integer
 */
export function argsFromQuery(query: string): CandidateArgs {
  const q = new URLSearchParams(query);
  const version = q.get("version");
  const raw: Record<string, unknown> = { uri: q.get("uri"), kernel: q.get("kernel"), candidate: q.get("candidate") };
  if (version !== null) {
    raw.version = /^-?\d+$/.test(version) ? Number(version) : version;
  }
  return parseCandidateArgs(raw);
}
