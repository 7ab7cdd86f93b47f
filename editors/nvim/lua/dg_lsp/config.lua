--- Configuration: the defaults below, overridden by the `vim.g.dg_lsp` table.
--- Read on every call, so changing `vim.g.dg_lsp` takes effect for the next buffer.
local M = {}

---@class dg_lsp.Config
---@field cmd string[] Command that starts the server (stdio).
---@field cmd_env? table<string,string> Extra environment for the server.
---@field filetypes string[] Filetypes the server is started for.
---@field root_markers string[] Files that mark a project root.
---@field settings table The `dgLsp` settings section (model, device, dtype, maxSteps, ...).
---@field ghost_text 'auto'|'native'|'fallback' Who renders suggestions.
---@field debounce_ms integer Delay before the fallback renderer asks (ms).
---@field automatic boolean Suggest while typing; false: only when asked (`keymaps.suggest`). `:DgToggle` flips it.
---@field keymaps { accept: string|false, accept_word: string|false, accept_line: string|false, next: string|false, prev: string|false, suggest: string|false, override: boolean }
--- Buffer-local insert-mode keys (the whole suggestion, its next word, its next line, the server's
--- next and previous suggestion for the same place, a suggestion now);
--- `override = false` leaves a key alone in a buffer that already maps it (another plugin).
M.defaults = {
  cmd = { 'dg-lsp', 'serve' },
  cmd_env = nil,
  filetypes = {
    'python', 'javascript', 'javascriptreact', 'typescript', 'typescriptreact',
    'go', 'rust', 'java', 'c', 'cpp', 'cs', 'php', 'ruby', 'lua', 'sh', 'bash',
  },
  root_markers = { '.git', 'pyproject.toml', 'package.json', 'go.mod', 'Cargo.toml' },
  settings = {},
  ghost_text = 'auto',
  debounce_ms = 150,
  automatic = true,
  keymaps = {
    accept = '<Tab>', accept_word = '<M-Right>', accept_line = '<M-C-Right>', next = '<M-]>', prev = '<M-[>',
    suggest = '<M-\\>', override = false,
  },
}

local function is_string_list(v, allow_empty)
  if type(v) ~= 'table' or (not allow_empty and #v == 0) then
    return false
  end
  for k, item in pairs(v) do
    if type(k) ~= 'number' or type(item) ~= 'string' then
      return false
    end
  end
  return true
end

--- key -> (is valid, what was expected)
local checks = {
  cmd = { function(v) return is_string_list(v, false) end, 'a non-empty list of strings' },
  cmd_env = { function(v) return v == nil or type(v) == 'table' end, 'a table of strings' },
  filetypes = { function(v) return is_string_list(v, true) end, 'a list of filetypes' },
  root_markers = { function(v) return is_string_list(v, true) end, 'a list of file names' },
  settings = { function(v) return type(v) == 'table' end, 'a table' },
  ghost_text = {
    function(v) return v == 'auto' or v == 'native' or v == 'fallback' end,
    "'auto', 'native' or 'fallback'",
  },
  debounce_ms = { function(v) return type(v) == 'number' and v >= 0 end, 'a number >= 0' },
  automatic = { function(v) return type(v) == 'boolean' end, 'true or false' },
  keymaps = {
    function(v)
      if type(v) ~= 'table' then
        return false
      end
      for k, item in pairs(v) do
        local ok = ((k == 'accept' or k == 'accept_word' or k == 'accept_line' or k == 'next' or k == 'prev'
              or k == 'suggest')
            and (item == false or (type(item) == 'string' and item ~= '')))
          or (k == 'override' and type(item) == 'boolean')
        if not ok then
          return false
        end
      end
      return true
    end,
    "a table { accept = '<Tab>' or false, accept_word = '<M-Right>' or false, accept_line = '<M-C-Right>' or false,"
      .. " next = '<M-]>' or false, prev = '<M-[>' or false, suggest = '<M-\\>' or false, override = false }",
  },
}

local warned = {}

local function warn_once(msg)
  if not warned[msg] then
    warned[msg] = true
    vim.notify('dg_lsp: ' .. msg, vim.log.levels.WARN)
  end
end

--- The merged configuration and the problems found (invalid values are replaced by defaults).
---@return dg_lsp.Config, string[]
function M.get()
  local user = vim.g.dg_lsp
  local problems = {}
  if user ~= nil and type(user) ~= 'table' then
    table.insert(problems, 'vim.g.dg_lsp must be a table')
    user = {}
  end
  local cfg = vim.deepcopy(M.defaults)
  for key, value in pairs(user or {}) do
    local check = checks[key]
    if not check then
      table.insert(problems, ('unknown option %q'):format(key))
    elseif not check[1](value) then
      table.insert(problems, ('option %q must be %s; using the default'):format(key, check[2]))
    elseif key == 'keymaps' or key == 'settings' then
      -- Tables of named entries merge; lists (cmd, filetypes, ...) replace.
      cfg[key] = vim.tbl_extend('force', cfg[key], value)
    else
      cfg[key] = value
    end
  end
  for _, msg in ipairs(problems) do
    warn_once(msg)
  end
  return cfg, problems
end

function M.wants(filetype)
  return vim.tbl_contains(M.get().filetypes, filetype)
end

--- Whether this Neovim has `vim.lsp.inline_completion` (0.12+).
function M.has_native()
  return vim.fn.has('nvim-0.12') == 1 and pcall(require, 'vim.lsp.inline_completion')
end

--- 'native' or 'fallback': who renders suggestions for `cfg`. 'auto' picks the plugin's own
--- renderer ('fallback'): Neovim 0.12's built-in one keeps an item made for an older cursor while
--- you type, so it needs the guard in native.lua and still hides suggestions more often.
---@param cfg dg_lsp.Config
function M.renderer(cfg)
  if cfg.ghost_text ~= 'native' then
    return 'fallback'
  end
  if M.has_native() then
    return 'native'
  end
  warn_once("ghost_text = 'native' needs Neovim 0.12+; using the plugin's renderer")
  return 'fallback'
end

return M
