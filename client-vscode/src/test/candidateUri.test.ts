import { test } from "node:test";
import * as assert from "node:assert/strict";
import { argsFromQuery, candidateLocation, parseCandidateArgs } from "../common/candidateUri";

const ARGS = { uri: "file:///w/a%20b/saxpy.cu", kernel: "saxpy", candidate: "c3", version: 4 };

test("the candidate argument survives the virtual document's query", () => {
  const loc = candidateLocation(ARGS, "/w/a b/saxpy.cu");
  assert.equal(loc.path, "/w/a b/saxpy.cu");
  assert.deepEqual(argsFromQuery(loc.query), ARGS);
  const { version: _v, ...noVersion } = ARGS;
  assert.deepEqual(argsFromQuery(candidateLocation(noVersion, "/x").query), noVersion);
});

test("missing fields and bad versions are refused, naming the field", () => {
  assert.throws(() => parseCandidateArgs({ uri: "u", kernel: "k" }),
    { message: "expected a string 'candidate' in the candidate argument, found undefined" });
  assert.throws(() => parseCandidateArgs({ uri: "u", kernel: "", candidate: "c" }),
    { message: "expected a string 'kernel' in the candidate argument, found \"\"" });
  assert.throws(() => argsFromQuery("uri=u&kernel=k&candidate=c&version=two"),
    { message: "expected an integer 'version', found \"two\"" });
  assert.throws(() => parseCandidateArgs("saxpy"),
    { message: "expected an object with uri, kernel and candidate, found \"saxpy\"" });
});
