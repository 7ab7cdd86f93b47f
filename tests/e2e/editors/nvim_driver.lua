-- Drives the dg_lsp plugin inside a real headless Neovim and writes what it saw as JSON.
--
-- Run by test_nvim.py as `nvim --headless --clean ... -c 'luafile nvim_driver.lua'`.
-- Inputs (environment): DG_TEST_OUT (JSON path), DG_TEST_FILE (a Python file),
-- DG_TEST_INSERT_LINE (1-based line inside a function, cursor goes to its end),
-- DG_TEST_FILL (JSON {line, start_col, end_col}: 1-based line, 0-based byte cols, end exclusive),
-- DG_TEST_LONG_LINES (how many lines to append for a fill the server must refuse as too long),
-- DG_TEST_TIMEOUT_MS. Steps run in a coroutine that sleeps on timers, so Neovim's main loop
-- (insert mode, LSP messages, the renderers' debounce timers) keeps running between them.
local api = vim.api
local env = vim.env
local results = { log = {} }
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)), 'nvim_harness.lua'))
  .new(results, { poll_ms = 50 })
local log, finish, sleep, wait_for = H.log, H.finish, H.sleep, H.wait_for

local function client()
  return vim.lsp.get_clients({ name = 'dg_lsp', bufnr = 0 })[1]
end

local function server_status(c)
  local r = c:request_sync('workspace/executeCommand', { command = 'dgLsp.status', arguments = {} }, 2000, 0)
  return r and r.result
end

local function ghost_marks(bufnr)
  local ns = require('dg_lsp').renderer(bufnr) == 'native'
      and api.nvim_create_namespace('nvim.lsp.inline_completion')
    or require('dg_lsp.ghost').ns
  return api.nvim_buf_get_extmarks(bufnr, ns, 0, -1, { details = true })
end

local function buffer_text(bufnr)
  return table.concat(api.nvim_buf_get_lines(bufnr, 0, -1, true), '\n')
end

-- 1. Open the file; the plugin starts the server and picks a renderer.
local function open_file()
  vim.cmd.edit(vim.fn.fnameescape(env.DG_TEST_FILE))
  results.filetype = vim.bo.filetype
  local c = wait_for('client attached', 60000, client)
  results.attached = c ~= nil
  results.renderer = require('dg_lsp').renderer(0)
  if not c then
    return nil
  end
  results.offset_encoding = c.offset_encoding
  local status = wait_for('server ready', 90000, function()
    local s = server_status(c)
    return s and s.state ~= 'loading' and s.state ~= 'idle' and s
  end)
  results.status = status
  return c
end

-- 2. Insert mode inside a function: wait for ghost text, accept it with the accept key.
local function complete_and_accept(bufnr)
  local row = tonumber(env.DG_TEST_INSERT_LINE)
  api.nvim_win_set_cursor(0, { row, 0 })
  vim.cmd('startinsert!')
  wait_for('insert mode', 2000, function()
    return api.nvim_get_mode().mode == 'i'
  end)
  results.mode = api.nvim_get_mode().mode
  local function shown()
    local m = ghost_marks(bufnr)
    return #m > 0 and m
  end
  local marks = wait_for('ghost text shown', 30000, shown)
  -- No suggestion where the cursor landed: keep typing DG_TEST_TYPE a key at a time, as a person
  -- would, until the server suggests something.
  local typed, i = env.DG_TEST_TYPE or '', 0
  while not marks and i < #typed do
    i = i + 1
    api.nvim_feedkeys(typed:sub(i, i), 'nt', false)
    marks = wait_for('ghost text after typing ' .. typed:sub(1, i), 10000, shown)
  end
  results.typed = typed:sub(1, i)
  local before = buffer_text(bufnr)
  if marks then
    local d = marks[1][4]
    local lines = { table.concat(vim.tbl_map(function(c) return c[1] end, d.virt_text or {})) }
    for _, vl in ipairs(d.virt_lines or {}) do
      table.insert(lines, table.concat(vim.tbl_map(function(c) return c[1] end, vl)))
    end
    results.ghost = { row = marks[1][2], col = marks[1][3], lines = lines, pos = d.virt_text_pos }
    api.nvim_feedkeys(vim.keycode('<Tab>'), 'm', false)
    wait_for('buffer changed by accept', 3000, function()
      return buffer_text(bufnr) ~= before
    end)
  end
  results.before_accept = before
  results.after_accept = buffer_text(bufnr)
  results.cursor_after_accept = api.nvim_win_get_cursor(0)
  -- A real <Esc>: :stopinsert from a timer only takes effect at the next typed key.
  api.nvim_feedkeys(vim.keycode('<Esc>'), 'n', false)
  wait_for('back in normal mode', 2000, function()
    return api.nvim_get_mode().mode == 'n'
  end)
  -- Let requests still in flight settle, as a person would: Neovim 0.12's inline completion
  -- keeps its 200 ms debounce timer running after InsertLeave, and the server lets a newer
  -- request for a document supersede a queued older one, :DgFill included.
  sleep(400)
  wait_for('server idle', 10000, function()
    local s = server_status(client())
    return s and not s.busy and s.queue == 0
  end)
  -- Put the buffer back as it was before the accept: a multi-line suggestion shifts the lines the
  -- :DgFill step below addresses.
  api.nvim_buf_set_lines(bufnr, 0, -1, true, vim.split(before, '\n', { plain = true }))
end

-- The answers to dgLsp.fillSelection requests, in order: the client's `request` is wrapped so the
-- plugin's own handler still runs.
local fill_answers = {}
local function record_fill_answers(c)
  local request = c.request
  c.request = function(self, method, params, handler, ...)
    if method == 'workspace/executeCommand' and params and params.command == 'dgLsp.fillSelection' then
      local inner = handler
      handler = function(err, result, ...)
        table.insert(fill_answers, { err = err, result = result })
        if inner then
          return inner(err, result, ...)
        end
      end
    end
    return request(self, method, params, handler, ...)
  end
end

-- workspace/applyEdit requests the server sends while `fn` runs (applied by Neovim's own handler).
local function with_apply_edits(fn)
  local edits = {}
  local default = vim.lsp.handlers['workspace/applyEdit']
  vim.lsp.handlers['workspace/applyEdit'] = function(err, params, ctx, config)
    table.insert(edits, params)
    return default(err, params, ctx, config)
  end
  fn(edits) -- no pcall: `fn` sleeps (yields the driver's coroutine); an error ends the run anyway
  vim.lsp.handlers['workspace/applyEdit'] = default
  return edits
end

-- 3. :DgFill on a charwise visual selection; record the edit the server sent back.
local function fill_selection(bufnr)
  local spec = vim.json.decode(env.DG_TEST_FILL)
  local edits = with_apply_edits(function()
    -- Select byte columns [start_col, end_col) of the line: '< and '> are inclusive.
    local line = api.nvim_buf_get_lines(bufnr, spec.line - 1, spec.line, true)[1]
    local last = vim.str_utf_start(line, spec.end_col) + spec.end_col - 1
    api.nvim_win_set_cursor(0, { spec.line, spec.start_col })
    vim.cmd('normal! v')
    api.nvim_win_set_cursor(0, { spec.line, last })
    vim.cmd('normal! ' .. vim.keycode('<Esc>'))
    results.fill_marks = { api.nvim_buf_get_mark(bufnr, '<'), api.nvim_buf_get_mark(bufnr, '>') }
    results.before_fill = buffer_text(bufnr)
    -- The version the server knows the buffer by: Neovim sends pending changes before a request.
    results.fill_version = vim.lsp.util.buf_versions[bufnr]
    local answered = #fill_answers
    vim.cmd("'<,'>DgFill")
    wait_for('fill answered', 30000, function()
      return #fill_answers > answered
    end)
    sleep(100)
  end)
  results.fill_answer = fill_answers[#fill_answers]
  results.fill_edits = edits
  results.after_fill = buffer_text(bufnr)
end

-- 3b. :DgFill on more lines than the model fills at once: the server refuses, nothing changes, and
-- the plugin shows the server's reason.
local function refused_fill(bufnr)
  local count = tonumber(env.DG_TEST_LONG_LINES or '0')
  if count <= 0 then
    return
  end
  local first = api.nvim_buf_line_count(bufnr) + 1
  local long = {}
  for i = 1, count do
    long[i] = ('    value_%d = compute(%d, "%d")'):format(i, i, i)
  end
  api.nvim_buf_set_lines(bufnr, -1, -1, true, long)
  api.nvim_win_set_cursor(0, { first, 0 })
  vim.cmd('normal! V')
  api.nvim_win_set_cursor(0, { first + count - 1, 0 })
  vim.cmd('normal! ' .. vim.keycode('<Esc>'))
  vim.cmd('messages clear')
  results.before_refused = buffer_text(bufnr)
  local answered = #fill_answers
  results.refused_edits = with_apply_edits(function()
    vim.cmd("'<,'>DgFill")
    wait_for('long fill answered', 30000, function()
      return #fill_answers > answered
    end)
    sleep(200)
  end)
  results.refused_answer = fill_answers[#fill_answers]
  results.refused_messages = vim.fn.execute('messages')
  results.after_refused = buffer_text(bufnr)
  api.nvim_buf_set_lines(bufnr, first - 1, -1, true, {})
end

-- 4. :DgStatus reports the server state in the message area.
local function dgstatus()
  vim.cmd('DgStatus')
  results.dgstatus = wait_for('DgStatus message', 5000, function()
    return vim.fn.execute('messages'):match('dg%-lsp: ready[^\n]*')
  end)
end

-- 5. :checkhealth dg_lsp
local function checkhealth()
  vim.cmd('checkhealth dg_lsp')
  sleep(100)
  results.health = api.nvim_buf_get_lines(0, 0, -1, false)
end

local function main()
  results.t0 = vim.uv.now()
  results.nvim = tostring(vim.version())
  local c = open_file()
  if c then
    record_fill_answers(c)
    local bufnr = api.nvim_get_current_buf()
    complete_and_accept(bufnr)
    fill_selection(bufnr)
    refused_fill(bufnr)
    dgstatus()
    checkhealth()
  end
  finish()
end

H.run(main, 120000)
