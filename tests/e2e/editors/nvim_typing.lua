-- Types into a real headless Neovim as fast as a person while a suggestion is shown, presses the
-- accept key, and writes what the buffer became as JSON (see test_nvim_typing.py).
--
-- Run as `nvim --headless --clean ... -c 'luafile nvim_typing.lua'`. Inputs (environment):
-- DG_TEST_OUT (JSON path), DG_TEST_FILE (a Python file), DG_TEST_LINE (1-based line; the cursor
-- goes to its end), DG_TEST_KEYS (JSON list of keys to type, e.g. ["_", "q"]), DG_TEST_TRIALS
-- (JSON list of trials, each a list of gaps in ms: before each key and before the accept key; a
-- negative last gap waits for a suggestion of the new text instead),
-- DG_TEST_TIMEOUT_MS. Keys go through `nvim_input`, the same queue an attached UI or RPC client
-- types into, so mappings and autocmds run as for real typing. Every wait has a deadline.
local api = vim.api
local env = vim.env
local results = { log = {}, trials = {} }
local Harness = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)), 'nvim_harness.lua'))
local H = Harness.new(results)
local log, finish, sleep, wait_for = H.log, H.finish, H.sleep, H.wait_for

local function client()
  return vim.lsp.get_clients({ name = 'dg_lsp', bufnr = 0 })[1]
end

local function server_status(c)
  local r = c and c:request_sync('workspace/executeCommand', { command = 'dgLsp.status', arguments = {} }, 2000, 0)
  return r and r.result
end

local ghost = Harness.ghost

--- Every textDocument/inlineCompletion request the client sends (by either renderer), with the
--- buffer line it was made for and the items that came back.
local requests = {}
local function record_requests(c)
  local request = c.request
  c.request = function(self, method, params, handler, ...)
    if method ~= 'textDocument/inlineCompletion' or type(handler) ~= 'function' then
      return request(self, method, params, handler, ...)
    end
    local b = vim.uri_to_bufnr(params.textDocument.uri)
    local pos = params.position
    local rec = {
      line = pos.line,
      character = pos.character,
      text = api.nvim_buf_get_lines(b, pos.line, pos.line + 1, false)[1],
    }
    table.insert(requests, rec)
    return request(self, method, params, function(err, result, ...)
      rec.answered = true
      rec.items = {}
      for _, item in ipairs(type(result) == 'table' and (result.items or result) or {}) do
        local text = type(item.insertText) == 'table' and item.insertText.value or item.insertText
        table.insert(rec.items, { insertText = text, range = item.range })
      end
      return handler(err, result, ...)
    end, ...)
  end
end

local function lines_of(bufnr)
  return api.nvim_buf_get_lines(bufnr, 0, -1, true)
end

local function server_idle()
  return wait_for('server idle', 20000, function()
    local s = server_status(client())
    return s and not s.busy and s.queue == 0
  end)
end

local function trial(bufnr, source, keys, gaps)
  local t = { gaps = gaps, requests = {} }
  requests = t.requests
  api.nvim_buf_set_lines(bufnr, 0, -1, true, source)
  local row = tonumber(env.DG_TEST_LINE)
  api.nvim_win_set_cursor(0, { row, #source[row] })
  vim.cmd('startinsert!')
  t.mode = wait_for('insert mode', 2000, function()
    return api.nvim_get_mode().mode == 'i' and 'i'
  end)
  t.first = wait_for('ghost text shown', 40000, function()
    return ghost(bufnr)
  end)
  if t.first then
    for i, key in ipairs(keys) do
      sleep(gaps[i])
      api.nvim_input(key)
    end
    if gaps[#keys + 1] < 0 then
      -- A pause: wait until a suggestion for the new text is shown.
      t.settled = wait_for('ghost text after typing', 30000, function()
        return ghost(bufnr) ~= nil and require('dg_lsp').visible(bufnr)
      end) or false
    else
      sleep(gaps[#keys + 1])
    end
    -- What the user sees the moment they press the accept key.
    t.before_accept = lines_of(bufnr)
    t.cursor_before_accept = api.nvim_win_get_cursor(0)
    t.shown_at_accept = ghost(bufnr)
    api.nvim_input('<Tab>')
    sleep(300) -- both renderers apply the accepted item from a scheduled callback
    t.after = lines_of(bufnr)
    t.cursor_after = api.nvim_win_get_cursor(0)
  end
  api.nvim_input('<Esc>')
  wait_for('back in normal mode', 2000, function()
    return api.nvim_get_mode().mode == 'n'
  end)
  -- Neovim 0.12's inline completion keeps its debounce timer running after InsertLeave.
  sleep(400)
  server_idle()
  return t
end

local function main()
  results.t0 = vim.uv.now()
  results.nvim = tostring(vim.version())
  vim.cmd.edit(vim.fn.fnameescape(env.DG_TEST_FILE))
  local bufnr = api.nvim_get_current_buf()
  local c = wait_for('client attached', 60000, client)
  results.renderer = require('dg_lsp').renderer(bufnr)
  if not c then
    return
  end
  record_requests(c)
  results.status = wait_for('server ready', 120000, function()
    local s = server_status(c)
    return s and s.state ~= 'loading' and s.state ~= 'idle' and s
  end)
  -- What a plain <Tab> inserts here (the python ftplugin sets expandtab, softtabstop=4).
  results.tab = {
    expandtab = vim.bo[bufnr].expandtab,
    softtabstop = vim.bo[bufnr].softtabstop,
    shiftwidth = vim.fn.shiftwidth(),
    tabstop = vim.bo[bufnr].tabstop,
  }
  local source = lines_of(bufnr)
  results.source = source
  local keys = vim.json.decode(env.DG_TEST_KEYS)
  for _, gaps in ipairs(vim.json.decode(env.DG_TEST_TRIALS)) do
    table.insert(results.trials, trial(bufnr, source, keys, gaps))
  end
end

H.run(main, 240000)
