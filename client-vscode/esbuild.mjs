// Builds the extension (dist/extension.js, one CommonJS bundle; `vscode` is provided by the
// editor) or, with --tests, the unit tests (out/test/*.test.js, run with `node --test`).
import * as esbuild from "esbuild";
import { readdirSync } from "node:fs";

const production = process.argv.includes("--production");
const tests = process.argv.includes("--tests");

const common = {
  bundle: true,
  platform: "node",
  format: "cjs",
  target: "node20",
  external: ["vscode"],
  sourcemap: !production,
  minify: production,
  logLevel: "warning",
};

if (tests) {
  const entries = readdirSync("src/test").filter((f) => f.endsWith(".test.ts"))
    .map((f) => `src/test/${f}`);
  await esbuild.build({ ...common, entryPoints: entries, outdir: "out/test" });
} else {
  await esbuild.build({ ...common, entryPoints: ["src/extension.ts"], outfile: "dist/extension.js" });
}
