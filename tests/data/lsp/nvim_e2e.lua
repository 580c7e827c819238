-- Neovim (0.7+) headless end-to-end run of `cudalens lsp`, driven by tests/test_lsp_neovim.py:
-- open the example, run the "Optimize kernel" code action, wait for the candidate, run
-- "Apply candidate", write the buffers and quit. Any failure writes the reason to
-- $CUDALENS_NVIM_LOG and exits with status 1 (:cquit).
--
-- Environment: CUDALENS_WS (workspace folder), CUDALENS_FILE (the .cu file to open),
-- CUDALENS_PYTHON (the interpreter that runs the server), CUDALENS_NVIM_LOG (log file),
-- CUDALENS_RUNNER_FACTORY (the server's --runner-factory, e.g. model_runner:make_client).

local log_path = vim.env.CUDALENS_NVIM_LOG
local function log(msg)
  local f = io.open(log_path, "a")
  f:write(msg .. "\n")
  f:close()
end

local function fail(msg)
  log("FAIL: " .. msg)
  vim.cmd("cquit 1")
end

local function main()
  vim.cmd("edit " .. vim.fn.fnameescape(vim.env.CUDALENS_FILE))
  local bufnr = vim.api.nvim_get_current_buf()
  local root = vim.env.CUDALENS_WS
  local client_id = vim.lsp.start_client({
    name = "cudalens",
    cmd = { vim.env.CUDALENS_PYTHON, "-m", "cudalens.cli_lsp", "--runner-factory",
            vim.env.CUDALENS_RUNNER_FACTORY },
    root_dir = root,
    workspace_folders = { { uri = vim.uri_from_fname(root), name = "ws" } },
    settings = { cudalens = { check = { enabled = false } } },
  })
  if not client_id then return fail("start_client returned nil") end
  vim.lsp.buf_attach_client(bufnr, client_id)
  local client
  local ok = vim.wait(20000, function()
    client = vim.lsp.get_client_by_id(client_id)
    return client ~= nil and client.initialized == true
  end, 50)
  if not ok then return fail("the server did not initialize") end
  log("initialized")

  local function actions()
    vim.api.nvim_win_set_cursor(0, { 5, 4 })
    local params = vim.lsp.util.make_range_params()
    params.context = { diagnostics = {} }
    local answers = vim.lsp.buf_request_sync(bufnr, "textDocument/codeAction", params, 10000)
    local found = {}
    for _, answer in pairs(answers or {}) do
      for _, action in ipairs(answer.result or {}) do
        table.insert(found, action)
      end
    end
    return found
  end

  local function find(prefix)
    for _, action in ipairs(actions()) do
      if action.title:sub(1, #prefix) == prefix then return action end
    end
    return nil
  end

  local optimize = find("Optimize kernel saxpy")
  if not optimize then return fail("no 'Optimize kernel saxpy' code action") end
  log("action: " .. optimize.title)
  local answer = client.request_sync("workspace/executeCommand", optimize.command, 10000, bufnr)
  if not answer or answer.err then return fail("optimize command failed: " .. vim.inspect(answer)) end

  local apply
  ok = vim.wait(60000, function()
    apply = find("Apply candidate")
    return apply ~= nil
  end, 200)
  if not ok then return fail("no 'Apply candidate' action after optimizing") end
  log("action: " .. apply.title)
  answer = client.request_sync("workspace/executeCommand", apply.command, 10000, bufnr)
  if not answer or answer.err or not answer.result or answer.result.applied ~= true then
    return fail("apply failed: " .. vim.inspect(answer))
  end
  log("applied")
  vim.cmd("silent wall")
  log("written")
  vim.lsp.stop_client(client_id)
  vim.wait(2000, function() return vim.lsp.get_client_by_id(client_id) == nil end, 50)
  vim.cmd("qall!")
end

local ok, err = pcall(main)
if not ok then fail(tostring(err)) end
