--- `:checkhealth dg_lsp`: Neovim version, configuration, server command, running client.
local config = require('dg_lsp.config')
local lsp = require('dg_lsp.lsp')

local health = vim.health
local M = {}

local function check_neovim()
  health.start('dg_lsp: Neovim')
  local v = vim.version()
  local version = ('%d.%d.%d'):format(v.major, v.minor, v.patch)
  if vim.fn.has('nvim-0.10') == 0 then
    health.error(('Neovim %s is too old'):format(version), { 'dg_lsp needs Neovim 0.10 or newer' })
  elseif config.has_native() then
    health.ok(('Neovim %s: vim.lsp.inline_completion is available (used with ghost_text = %q)'):format(
      version, 'native'))
  else
    health.ok(('Neovim %s: suggestions use the plugin\'s ghost-text renderer'):format(version))
  end
end

local function check_config(cfg, problems)
  health.start('dg_lsp: configuration')
  if #problems == 0 then
    health.ok('vim.g.dg_lsp is valid')
  end
  for _, msg in ipairs(problems) do
    health.warn(msg, { 'See :h dg_lsp-config' })
  end
  health.info(('renderer: %s (ghost_text = %q)'):format(config.renderer(cfg), cfg.ghost_text))
  health.info('filetypes: ' .. table.concat(cfg.filetypes, ', '))
  local key = cfg.keymaps.accept
  health.info('accept key: ' .. (key or 'none (map <Plug>(dg-lsp-accept) yourself)')
    .. (key and cfg.keymaps.override and ' (override = true)' or ''))
  health.info(('next word: %s, next line: %s'):format(cfg.keymaps.accept_word or 'none',
    cfg.keymaps.accept_line or 'none'))
  health.info(('next suggestion: %s, previous suggestion: %s'):format(cfg.keymaps.next or 'none',
    cfg.keymaps.prev or 'none'))
  health.info(('automatic suggestions: %s (:DgToggle); a suggestion now: %s'):format(
    require('dg_lsp').automatic() and 'on' or 'paused', cfg.keymaps.suggest or 'none'))
  for bufnr, k in pairs(require('dg_lsp').unmapped) do
    if vim.api.nvim_buf_is_valid(bufnr) then
      health.info(('buffer %d: %s left to the mapping another plugin made there (keymaps.override = true'
        .. " maps it anyway; or call require('dg_lsp').accept() from that mapping)"):format(bufnr, k))
    end
  end
end

local function check_command(cfg)
  health.start('dg_lsp: server command')
  local exe = cfg.cmd[1]
  if vim.fn.executable(exe) == 1 then
    health.ok(('%s (%s)'):format(table.concat(cfg.cmd, ' '), vim.fn.exepath(exe)))
  else
    health.error(('%q is not executable'):format(exe), {
      'Install the server: pip install -e <repo> (provides the dg-lsp script)',
      "Or set vim.g.dg_lsp = { cmd = { '/path/to/python', '-m', 'dg_lsp', 'serve' } }",
    })
  end
end

local function check_status(client)
  local params = { command = 'dgLsp.status', arguments = {} }
  local response = lsp.request_sync(client, 'workspace/executeCommand', params, 2000)
  local s = response and lsp.parse_status(response.result)
  if not response or response.err or not s then
    local why = response and response.err and response.err.message or 'no answer within 2 s'
    health.warn('dgLsp.status: ' .. why)
  elseif s.state == 'error' then
    health.error(('server error: %s'):format(tostring(s.error or 'unknown')), { 'See :DgStatus and :LspLog' })
  elseif s.state == 'loading' then
    health.info(('loading %s on %s'):format(s.model, s.device))
  else
    local latency = type(s.lastLatencyMs) == 'number' and ('%.0f ms'):format(s.lastLatencyMs) or 'none yet'
    health.ok(('ready: %s on %s, last completion %s'):format(s.model, s.device, latency))
  end
end

local function check_clients()
  health.start('dg_lsp: client')
  local clients = vim.lsp.get_clients({ name = lsp.name })
  if #clients == 0 then
    health.warn('no dg_lsp client is running', { 'Open a file of a supported filetype' })
    return
  end
  for _, client in ipairs(clients) do
    local bufs = vim.tbl_keys(client.attached_buffers)
    table.sort(bufs)
    health.ok(('client %d attached to buffer(s) %s'):format(client.id, table.concat(bufs, ', ')))
    check_status(client)
  end
end

function M.check()
  local cfg, problems = config.get()
  check_neovim()
  check_config(cfg, problems)
  check_command(cfg)
  check_clients()
end

return M
