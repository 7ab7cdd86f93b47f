-- The suggestion keys in a real headless Neovim against the real server, whose answer is scripted:
-- the word and line keys (`keymaps.accept_word`, `keymaps.accept_line`) insert the suggestion a piece
-- at a time and the rest stays shown; the next and previous keys (`keymaps.next`, `keymaps.prev`)
-- show the answer's other items; with automatic suggestions paused, none comes until asked. See
-- test_nvim_partial.py.
--
-- Run as `nvim --headless --clean ... -c 'luafile nvim_partial.lua'`. Inputs (environment):
-- DG_TEST_OUT (JSON path), DG_TEST_FILE (a Python file; the cursor goes to line 3, column 4),
-- DG_TEST_KEYS (JSON list of keys to press one after another), DG_TEST_TIMEOUT_MS; DG_TEST_PAUSE=1:
-- `:DgToggle off` first, then 3 s in insert mode with no key (`quiet_ghost`: what was shown) before the keys.
local api = vim.api
local env = vim.env
local results = { log = {}, steps = {} }
local Harness = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)), 'nvim_harness.lua'))
local H = Harness.new(results)
local log, finish, sleep, wait_for = H.log, H.finish, H.sleep, H.wait_for

--- The ghost text shown in `bufnr` (its inline part and the lines below it), or nil.
local function ghost(bufnr)
  local shown = Harness.ghost(bufnr)
  return shown and table.concat(shown.lines, '\n')
end

local function main()
  results.t0 = vim.uv.now()
  vim.cmd.edit(vim.fn.fnameescape(env.DG_TEST_FILE))
  local bufnr = api.nvim_get_current_buf()
  local attached = wait_for('attached', 90000, function()
    local c = vim.lsp.get_clients({ name = 'dg_lsp', bufnr = bufnr })[1]
    if not c then
      return nil
    end
    local r = c:request_sync('workspace/executeCommand', { command = 'dgLsp.status', arguments = {} }, 2000, bufnr)
    return r and r.result and r.result.state == 'ready'
  end)
  results.attached = attached ~= nil
  results.renderer = require('dg_lsp').renderer(bufnr)
  if env.DG_TEST_PAUSE == '1' then
    vim.cmd('DgToggle off')
    results.automatic = require('dg_lsp').automatic()
  end
  api.nvim_win_set_cursor(0, { 3, 4 })
  vim.cmd('startinsert!')
  wait_for('insert mode', 2000, function()
    return api.nvim_get_mode().mode == 'i'
  end)
  if env.DG_TEST_PAUSE == '1' then
    sleep(3000)
    results.quiet_ghost = ghost(bufnr) or vim.NIL
  else
    results.first_ghost = wait_for('ghost text', 30000, function()
      return ghost(bufnr)
    end)
  end
  for _, key in ipairs(vim.json.decode(env.DG_TEST_KEYS)) do
    local before = table.concat(api.nvim_buf_get_lines(bufnr, 0, -1, true), '\n')
    local shown_before = ghost(bufnr)
    api.nvim_feedkeys(vim.keycode(key), 'm', false)
    wait_for('buffer or ghost text changed by ' .. key, 3000, function()
      return table.concat(api.nvim_buf_get_lines(bufnr, 0, -1, true), '\n') ~= before
        or ghost(bufnr) ~= shown_before
    end)
    -- the rest of the suggestion, shown again (at once, or once the server answers from its cache)
    local shown = wait_for('ghost text after ' .. key, 5000, function()
      return ghost(bufnr)
    end)
    table.insert(results.steps, {
      key = key,
      lines = api.nvim_buf_get_lines(bufnr, 0, -1, true),
      cursor = api.nvim_win_get_cursor(0),
      ghost = shown or vim.NIL,
    })
  end
end

H.run(main, 120000)
