-- The accept-key option (`keymaps`) in a real headless Neovim against the real server: which
-- buffer-local insert mappings the plugin makes, and what the keys do. See test_nvim_keymaps.py.
--
-- Run as `nvim --headless --clean ... -c 'luafile nvim_keymaps.lua'`. Inputs (environment):
-- DG_TEST_OUT (JSON path), DG_TEST_DIR (a directory to create Python files in), DG_TEST_CMD (JSON
-- server command), DG_TEST_TIMEOUT_MS. Every wait has a deadline.
local api = vim.api
local env = vim.env
local results = { log = {}, buffers = {} }
local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)), 'nvim_harness.lua'))
  .new(results)
local log, finish, sleep, wait_for = H.log, H.finish, H.sleep, H.wait_for

--- Insert-mode buffer-local mappings of `bufnr`: lhs (keycodes as typed) -> desc.
local function insert_maps(bufnr)
  local maps = vim.empty_dict()
  for _, m in ipairs(api.nvim_buf_get_keymap(bufnr, 'i')) do
    maps[vim.fn.keytrans(vim.keycode(m.lhs))] = m.desc or m.rhs or ''
  end
  return maps
end

--- Another plugin's buffer-local <Tab> (it inserts a marker), set when the buffer is read.
local function other_plugin_maps_tab(pattern)
  api.nvim_create_autocmd('BufReadPre', {
    callback = function(args)
      if api.nvim_buf_get_name(args.buf):match(pattern) then
        vim.keymap.set('i', '<Tab>', 'OTHER', { buffer = args.buf, desc = 'other plugin' })
      end
    end,
  })
end

--- Open `name` with `opts` as vim.g.dg_lsp, wait for the plugin to attach, then, in insert mode
--- on an empty line, press `key` before any suggestion can show and record what it typed.
local function case(name, opts, key)
  vim.g.dg_lsp = vim.tbl_extend('force', { cmd = vim.json.decode(env.DG_TEST_CMD) }, opts)
  local path = env.DG_TEST_DIR .. '/' .. name .. '.py'
  local f = assert(io.open(path, 'w'))
  f:write('def f():\n    \n')
  f:close()
  vim.cmd.edit(vim.fn.fnameescape(path))
  local bufnr = api.nvim_get_current_buf()
  local r = { name = name }
  results.buffers[name] = r
  r.attached = wait_for(name .. ' attached', 90000, function()
    return require('dg_lsp').renderer(bufnr) ~= nil
  end) ~= nil
  r.maps = insert_maps(bufnr)
  r.unmapped = require('dg_lsp').unmapped[bufnr]
  if key then
    api.nvim_win_set_cursor(0, { 2, 4 })
    vim.cmd('startinsert!')
    wait_for('insert mode', 2000, function()
      return api.nvim_get_mode().mode == 'i'
    end)
    -- At once: the plugin's renderer waits debounce_ms (here 5 s) before it asks for anything.
    api.nvim_input(key)
    sleep(200)
    r.line = api.nvim_buf_get_lines(bufnr, 1, 2, true)[1]
    r.ghost_shown = require('dg_lsp').visible(bufnr)
    api.nvim_input('<Esc>')
    wait_for('normal mode', 2000, function()
      return api.nvim_get_mode().mode == 'n'
    end)
  end
end

local function main()
  results.t0 = vim.uv.now()
  other_plugin_maps_tab('/taken%.py$')
  other_plugin_maps_tab('/forced%.py$')
  local slow = { debounce_ms = 5000, ghost_text = 'fallback' }
  case('default', slow, '<Tab>')
  case('taken', slow, '<Tab>')
  case('forced', vim.tbl_extend('force', slow, { keymaps = { override = true } }), '<Tab>')
  case('ctrl_l', vim.tbl_extend('force', slow, { keymaps = { accept = '<C-l>' } }), '<Tab>')
  case('none', vim.tbl_extend('force', slow, { keymaps = { accept = false } }), '<Tab>')
end

H.run(main, 120000)
