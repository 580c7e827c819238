import { test } from "node:test";
import * as assert from "node:assert/strict";
import { RunnerStatus, serverDown, statusText } from "../common/statusText";

const IDLE: RunnerStatus = { state: "idle", kernel: null, message: null, queued: 0,
  runner: "local GPU", device: null, deviceId: null };

test("idle before any run says the GPU is not seen yet", () => {
  assert.deepEqual(statusText(IDLE), { text: "$(pulse) cudalens: idle · GPU not seen yet",
    tooltip: "Runner: local GPU\nGPU: GPU not seen yet" });
});

test("running names the kernel, the GPU, the progress and the queue", () => {
  const s = statusText({ ...IDLE, state: "running", kernel: "saxpy", queued: 2,
    message: "candidate 3/24: timing", runner: "http://gpu:8765", device: "NVIDIA H200",
    deviceId: "NVIDIA H200/sm_90/132" });
  assert.equal(s.text, "$(sync~spin) cudalens: optimizing saxpy · NVIDIA H200");
  assert.equal(s.tooltip, "Runner: http://gpu:8765\nGPU: NVIDIA H200/sm_90/132\n" +
    "saxpy: candidate 3/24: timing\n2 more queued");
});

test("queued and stopped states", () => {
  assert.equal(statusText({ ...IDLE, state: "queued", queued: 1, device: "NVIDIA H200" }).text,
    "$(watch) cudalens: 1 queued · NVIDIA H200");
  assert.deepEqual(serverDown("exited with code 1"), { text: "$(error) cudalens: server stopped",
    tooltip: "cudalens language server: exited with code 1" });
});
