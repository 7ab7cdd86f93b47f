-- Pure parts of the plugin (range conversion, configuration, status parsing) in a headless
-- Neovim without a server. Run as `nvim --headless --clean -l nvim_units.lua PLUGIN_DIR OUT`;
-- writes {"passed": [...], "failed": [...]} to OUT.
local plugin, out_path = arg[1], arg[2]
vim.opt.rtp:prepend(plugin)
local lsp = require('dg_lsp.lsp')
local config = require('dg_lsp.config')

local passed, failed = {}, {}
local function check(name, got, want)
  if vim.deep_equal(got, want) then
    table.insert(passed, name)
  else
    table.insert(failed, ('%s: got %s, want %s'):format(name, vim.inspect(got), vim.inspect(want)))
  end
end

local function range(sl, sc, el, ec)
  return { start = { line = sl, character = sc }, ['end'] = { line = el, character = ec } }
end

-- Selections -> LSP ranges. Line 2 has 2-, 3- and 2-byte characters before/inside `café`.
local buf = vim.api.nvim_create_buf(false, true)
vim.api.nvim_buf_set_lines(buf, 0, -1, true, { 'def f():', '    msg = "naïve ☕ café"', 'x' })
local line = vim.api.nvim_buf_get_lines(buf, 1, 2, true)[1]
local s = line:find('café', 1, true) - 1 -- byte col of c
local e_first = s + 3 -- byte col of é ('> marks the first byte of the last character)
check('charwise utf-8', lsp.selection_range(buf, { 2, s }, { 2, e_first }, 'v', 'utf-8'), range(1, 22, 1, 27))
check('charwise utf-16', lsp.selection_range(buf, { 2, s }, { 2, e_first }, 'v', 'utf-16'), range(1, 19, 1, 23))
check('charwise utf-32', lsp.selection_range(buf, { 2, s }, { 2, e_first }, 'v', 'utf-32'), range(1, 19, 1, 23))
check('linewise', lsp.selection_range(buf, { 1, 3 }, { 2, 5 }, 'V', 'utf-16'), range(0, 0, 1, 24))
check('past end of line', lsp.selection_range(buf, { 1, 0 }, { 1, 2147483647 }, 'v', 'utf-16'), range(0, 0, 0, 8))
vim.o.selection = 'exclusive'
check('selection=exclusive', lsp.selection_range(buf, { 2, s }, { 2, s + 5 }, 'v', 'utf-16'), range(1, 19, 1, 23))
vim.o.selection = 'inclusive'
check('byte_col utf-16', lsp.byte_col(line, 23, 'utf-16'), #line - 1)
check('byte_col utf-8', lsp.byte_col(line, 22, 'utf-8'), 22)

-- Configuration: lists replace, tables merge, invalid values fall back with a problem.
vim.notify = function() end
vim.g.dg_lsp = { filetypes = { 'lua' }, settings = { maxSteps = 4 }, keymaps = { accept = false } }
local cfg, problems = config.get()
check('filetypes replace', cfg.filetypes, { 'lua' })
check('settings merge', cfg.settings, { maxSteps = 4 })
check('keymap off', cfg.keymaps.accept, false)
check('no problems', problems, {})
check('keymap override default', cfg.keymaps.override, false)
vim.g.dg_lsp = { keymaps = { accept = '<C-l>', override = true } }
cfg, problems = config.get()
check('keymap set', cfg.keymaps, { accept = '<C-l>', accept_word = '<M-Right>', accept_line = '<M-C-Right>',
  next = '<M-]>', prev = '<M-[>', suggest = '<M-\\>', override = true })
check('keymap no problems', problems, {})
local default_keys = { accept = '<Tab>', accept_word = '<M-Right>', accept_line = '<M-C-Right>', next = '<M-]>',
  prev = '<M-[>', suggest = '<M-\\>', override = false }
for _, bad in ipairs({ { accept = 1 }, { accept = '' }, { override = 'yes' }, { tab = '<Tab>' }, { accept_word = 2 },
  { next = '' }, { prev = true }, { suggest = 1 } }) do
  vim.g.dg_lsp = { keymaps = bad }
  cfg, problems = config.get()
  check('bad keymaps ' .. vim.inspect(bad), { cfg.keymaps, #problems }, { default_keys, 1 })
end
vim.g.dg_lsp = { keymaps = { accept_word = false, accept_line = '<C-j>' } }
cfg, problems = config.get()
check('partial keys set', { cfg.keymaps.accept_word, cfg.keymaps.accept_line, #problems }, { false, '<C-j>', 0 })
vim.g.dg_lsp = { keymaps = { next = '<C-n>', prev = false } }
cfg, problems = config.get()
check('cycle keys set', { cfg.keymaps.next, cfg.keymaps.prev, #problems }, { '<C-n>', false, 0 })
check('automatic by default', config.get().automatic, true)
vim.g.dg_lsp = { automatic = false }
check('automatic off', config.get().automatic, false)
vim.g.dg_lsp = { automatic = 'no' }
cfg, problems = config.get()
check('automatic must be a boolean', { cfg.automatic, #problems }, { true, 1 })

-- Partial accept: what the word and line keys take of a suggestion's rest.
local take = require('dg_lsp.partial').take
check('word', take('total = r * r', 'word'), 'total')
check('word after blanks', take(' = r * r', 'word'), ' =')
check('word of signs', take('(a, b)', 'word'), '(')
check('word across a line break', take('\n    return total', 'word'), '\n    return')
check('word of blanks only', take('   ', 'word'), '   ')
check('line', take(' r * r\n    return total', 'line'), ' r * r')
check('line after a line break', take('\n    return total\nx', 'line'), '\n    return total')
check('last line', take('x = 1', 'line'), 'x = 1')
vim.g.dg_lsp = { cmd = 'dg-lsp serve', ghost_text = 'ghost', colour = 1 }
cfg, problems = config.get()
check('bad cmd -> default', cfg.cmd, { 'dg-lsp', 'serve' })
check('bad ghost_text -> default', cfg.ghost_text, 'auto')
check('three problems', #problems, 3)
vim.g.dg_lsp = { ghost_text = 'fallback' }
check('fallback forced', config.renderer(config.get()), 'fallback')
vim.g.dg_lsp = nil
check('auto is the plugin renderer', config.renderer(config.get()), 'fallback')
vim.g.dg_lsp = { ghost_text = 'native' }
check('native on this Neovim', config.renderer(config.get()), config.has_native() and 'native' or 'fallback')
vim.g.dg_lsp = nil
check('wants python', config.wants('python'), true)
check('not markdown', config.wants('markdown'), false)

-- dgLsp.status with JSON nulls.
local st = lsp.parse_status({ state = 'loading', model = vim.NIL, device = vim.NIL, queue = vim.NIL, error = vim.NIL })
check('status nulls', st, { state = 'loading', model = '?', device = '?', queue = 0 })
check('status not a table', lsp.parse_status(vim.NIL), nil)

local f = assert(io.open(out_path, 'w'))
f:write(vim.json.encode({ passed = passed, failed = failed }))
f:close()
