-- Run after the README's Neovim snippet (the init file) by tests/test_lsp_neovim.py: open two
-- CUDA files, wait for the cudalens client on each, ask for the first one's code lenses, log
-- what was seen to $CUDALENS_NVIM_LOG and quit (:cquit 1 with the reason on a failure).
-- Environment: CUDALENS_FILE, CUDALENS_SECOND (two .cu files), CUDALENS_NVIM_LOG.

local log_path = vim.env.CUDALENS_NVIM_LOG
local function log(msg)
  local f = io.open(log_path, "a")
  f:write(msg .. "\n")
  f:close()
end

local function clients_of(bufnr)
  if vim.lsp.get_clients then return vim.lsp.get_clients({ bufnr = bufnr }) end
  return vim.lsp.buf_get_clients(bufnr)
end

local function attached(bufnr)
  local found
  local ok = vim.wait(30000, function()
    for _, c in pairs(clients_of(bufnr)) do
      if c.name == "cudalens" and c.initialized then found = c return true end
    end
    return false
  end, 50)
  return ok and found or nil
end

local function main()
  vim.cmd("edit " .. vim.fn.fnameescape(vim.env.CUDALENS_FILE))
  local bufnr = vim.api.nvim_get_current_buf()
  log("filetype: " .. vim.bo.filetype)
  local first = attached(bufnr)
  if not first then log("FAIL: no initialized cudalens client on the buffer") return vim.cmd("cquit 1") end
  local params = { textDocument = vim.lsp.util.make_text_document_params() }
  local answers = vim.lsp.buf_request_sync(bufnr, "textDocument/codeLens", params, 20000)
  for _, answer in pairs(answers or {}) do
    for _, lens in ipairs(answer.result or {}) do
      log("lens: line " .. lens.range.start.line .. ": " .. (lens.command and lens.command.title or "?"))
    end
  end
  vim.cmd("edit " .. vim.fn.fnameescape(vim.env.CUDALENS_SECOND))
  local second = attached(vim.api.nvim_get_current_buf())
  if not second then log("FAIL: no cudalens client on the second buffer") return vim.cmd("cquit 1") end
  log(second.id == first.id and "second buffer: same client" or "second buffer: another client")
  vim.cmd("qall!")
end

local ok, err = pcall(main)
if not ok then
  log("FAIL: " .. tostring(err))
  vim.cmd("cquit 1")
end
