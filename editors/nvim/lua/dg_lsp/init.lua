--- dg-lsp for Neovim: attach buffers, accept suggestions, fill selections, show status.
--- Configuration lives in `vim.g.dg_lsp` (see `:h dg_lsp-config`); `setup()` is optional.
local config = require('dg_lsp.config')
local lsp = require('dg_lsp.lsp')

local api = vim.api
local M = {}

--- Which renderer each buffer uses: 'native' or 'fallback'.
---@type table<integer, string>
local renderers = {}

--- Automatic suggestions as `:DgToggle` left them; nil: as the configuration says (`automatic`).
---@type boolean?
local automatic_now = nil

local function notify(msg, level)
  vim.notify('dg-lsp: ' .. msg, level or vim.log.levels.INFO)
end

local function resolve(bufnr)
  return (bufnr == nil or bufnr == 0) and api.nvim_get_current_buf() or bufnr
end

--- Insert the shown suggestion in `bufnr` (default: current). Returns false when none is shown.
--- The edit is scheduled, so this can be called from an `<expr>` mapping.
function M.accept(bufnr)
  bufnr = resolve(bufnr)
  if renderers[bufnr] == 'native' then
    return require('dg_lsp.native').accept(bufnr)
  end
  return require('dg_lsp.ghost').accept(bufnr)
end

--- Whether a suggestion that fits the buffer as it is now is shown in `bufnr`.
function M.visible(bufnr)
  bufnr = resolve(bufnr)
  if renderers[bufnr] == 'native' then
    return require('dg_lsp.native').fresh(bufnr)
  end
  return require('dg_lsp.ghost').visible(bufnr)
end

--- Insert the shown suggestion now, if any (not from an `<expr>` mapping): its next word (`unit`
--- 'word') or the rest of its line ('line'), the rest staying shown, or (`unit` nil) all of it. With
--- `key`, type that key instead when there is no suggestion. Used by the mappings.
function M.accept_part_now(bufnr, unit, key)
  bufnr = resolve(bufnr)
  local done
  if renderers[bufnr] == 'native' then
    done = require('dg_lsp.native').accept(bufnr, unit)
  elseif unit then
    done = require('dg_lsp.ghost').accept_part_now(bufnr, unit)
  else
    done = require('dg_lsp.ghost').accept_now(bufnr)
  end
  if not done and key then
    api.nvim_feedkeys(vim.keycode(key), 'nit', false)
  end
  return done
end

--- Insert the whole shown suggestion now (`accept_part_now` with no unit). Used by the accept mapping.
function M.accept_now(bufnr, key)
  return M.accept_part_now(bufnr, nil, key)
end

--- Show the server's next (`delta` 1) or previous (-1) suggestion for the same place instead of the
--- shown one: the server answers with the lines its model weighed against its answer (`maxSuggestions`).
--- Returns false when no suggestion fits the buffer as it is now.
function M.cycle(bufnr, delta)
  bufnr = resolve(bufnr)
  if renderers[bufnr] == 'native' then
    return require('dg_lsp.native').cycle(bufnr, delta)
  end
  return require('dg_lsp.ghost').cycle(bufnr, delta)
end

--- Whether suggestions come while typing (else only when asked, `suggest`).
function M.automatic()
  if automatic_now ~= nil then
    return automatic_now
  end
  return config.get().automatic
end

--- Pause (`on` false) or resume (true) automatic suggestions in every buffer; nil: the other way
--- round. Returns the new state. A shown suggestion stays until the next edit.
function M.toggle(on)
  if on == nil then
    on = not M.automatic()
  end
  automatic_now = on
  require('dg_lsp.ghost').set_automatic(on)
  for bufnr, renderer in pairs(renderers) do
    if renderer == 'native' and api.nvim_buf_is_valid(bufnr) then
      require('dg_lsp.native').set_automatic(bufnr, on)
    end
  end
  notify(on and 'automatic suggestions on' or ('automatic suggestions paused' .. (
    config.get().keymaps.suggest and (' (%s asks)'):format(config.get().keymaps.suggest) or '')))
  return on
end

--- Ask the server for a suggestion at the cursor now (an explicit request: a longer answer may come
--- than while typing), with the plugin's renderer. Returns false where the buffer uses Neovim's
--- built-in renderer, which only asks while typing.
function M.suggest(bufnr)
  bufnr = resolve(bufnr)
  if renderers[bufnr] ~= 'fallback' then
    return false
  end
  return require('dg_lsp.ghost').suggest_now(bufnr)
end

--- The mappings, in the order they are made: the `keymaps` key, the description (which also tells this
--- plugin's own mappings from another's), and what it runs (`require("dg_lsp").` + this, for `bufnr`).
local MAPS = {
  { 'accept', 'dg-lsp: accept the suggestion', 'accept_now(%d)' },
  { 'accept_word', 'dg-lsp: accept the next word', 'accept_part_now(%d, "word")' },
  { 'accept_line', 'dg-lsp: accept the next line', 'accept_part_now(%d, "line")' },
  { 'next', 'dg-lsp: the next suggestion', 'cycle(%d, 1)' },
  { 'prev', 'dg-lsp: the previous suggestion', 'cycle(%d, -1)' },
  { 'suggest', 'dg-lsp: a suggestion now', 'suggest(%d)' },
}
local OWN = {}
for _, map in ipairs(MAPS) do
  OWN[map[2]] = true
end

--- Buffers where the accept key was left alone because another mapping had it: bufnr -> key.
---@type table<integer, string>
M.unmapped = {}

--- The buffer-local insert-mode mapping of `key` in `bufnr` made by someone else, or nil.
local function foreign_mapping(bufnr, key)
  local want = vim.keycode(key)
  for _, m in ipairs(api.nvim_buf_get_keymap(bufnr, 'i')) do
    if vim.keycode(m.lhs) == want and not OWN[m.desc] then
      return m
    end
  end
end

local function set_keymaps(bufnr, cfg)
  M.unmapped[bufnr] = nil
  for _, map in ipairs(MAPS) do
    local name, desc, call = map[1], map[2], map[3]:format(bufnr)
    local key = cfg.keymaps[name]
    if key and not cfg.keymaps.override and foreign_mapping(bufnr, key) then
      M.unmapped[bufnr] = M.unmapped[bufnr] or key -- the first such key, for :checkhealth
    elseif key then
      -- The edit runs from <Cmd>, in order with the keys typed after the accept key; a plain `key`
      -- when no suggestion fits the buffer as it is now.
      vim.keymap.set('i', key, function()
        -- `suggest` asks whenever the plugin's renderer draws; the others act on a shown suggestion
        if (name == 'suggest' and renderers[bufnr] == 'fallback') or (name ~= 'suggest' and M.visible(bufnr)) then
          return ('<Cmd>lua require("dg_lsp").%s<CR>'):format(call)
        end
        return key
      end, { buffer = bufnr, expr = true, desc = desc })
    end
  end
end

local function on_attach(client, bufnr)
  local cfg = config.get()
  local renderer = config.renderer(cfg)
  renderers[bufnr] = renderer
  if renderer == 'native' then
    require('dg_lsp.native').enable(bufnr, M.automatic())
  else
    require('dg_lsp.ghost').set_automatic(M.automatic())
    require('dg_lsp.ghost').enable(bufnr, cfg)
  end
  set_keymaps(bufnr, cfg)
end

--- Start the server for `bufnr` (or attach it to the running server).
function M.attach(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and api.nvim_get_current_buf() or bufnr
  if vim.bo[bufnr].buftype ~= '' then
    return nil
  end
  return lsp.start(config.get(), bufnr, on_attach)
end

--- The renderer a buffer uses ('native', 'fallback'), or nil when not attached.
function M.renderer(bufnr)
  return renderers[resolve(bufnr)]
end

--- Regenerate a range with the text around it as context; the server applies the edit.
--- `opts.range == 2` with the `'<`/`'>` marks on `line1`/`line2` uses the visual selection;
--- otherwise whole lines `line1`..`line2`.
---@param opts { bufnr?: integer, line1: integer, line2: integer, range?: integer, on_done?: fun(err, result) }
function M.fill(opts)
  local bufnr = opts.bufnr or api.nvim_get_current_buf()
  local client = lsp.get_client(bufnr)
  if not client then
    notify('no dg-lsp server is attached to this buffer', vim.log.levels.WARN)
    return
  end
  local s, e = api.nvim_buf_get_mark(bufnr, '<'), api.nvim_buf_get_mark(bufnr, '>')
  local mode = 'V'
  if opts.range == 2 and s[1] == opts.line1 and e[1] == opts.line2 then
    mode = vim.fn.visualmode()
  else
    s, e = { opts.line1, 0 }, { opts.line2, 0 }
  end
  local range = lsp.selection_range(bufnr, s, e, mode, client.offset_encoding)
  local params = {
    command = 'dgLsp.fillSelection',
    arguments = { { uri = vim.uri_from_bufnr(bufnr), range = range } },
  }
  lsp.request(client, 'workspace/executeCommand', params, function(err, result)
    if err then
      notify('fill failed: ' .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
    elseif type(result) == 'table' and result.applied == false then
      local why = result.error ~= vim.NIL and result.error or 'the edit was not applied'
      notify('nothing filled: ' .. tostring(why), vim.log.levels.WARN)
    end
    if opts.on_done then
      opts.on_done(err, result)
    end
  end, bufnr)
end

--- Show the server status (`dgLsp.status`) in the message area.
function M.status()
  local client = lsp.get_client()
  if not client then
    notify('no dg-lsp server is attached to this buffer', vim.log.levels.WARN)
    return
  end
  local params = { command = 'dgLsp.status', arguments = {} }
  lsp.request(client, 'workspace/executeCommand', params, function(err, result)
    local s = lsp.parse_status(result)
    if err or not s then
      notify('status failed: ' .. (err and err.message or 'no answer'), vim.log.levels.ERROR)
      return
    end
    local latency = type(s.lastLatencyMs) == 'number' and ('%.0f ms'):format(s.lastLatencyMs) or 'none yet'
    local state = (s.state == 'ready' and s.busy) and 'busy' or s.state
    notify(('%s: %s on %s, queue %d, last completion %s%s'):format(
      state, s.model, s.device, s.queue, latency, s.error and (' — ' .. tostring(s.error)) or ''))
  end)
end

--- Stop the server and start it again for every buffer it served.
function M.restart()
  local client = lsp.get_client()
  if not client then
    return M.attach(0)
  end
  local attached = vim.tbl_keys(client.attached_buffers)
  lsp.stop(client)
  local timer = assert(vim.uv.new_timer())
  -- vim.lsp.start would reuse the client until it has fully exited.
  timer:start(100, 100, vim.schedule_wrap(function()
    if not timer:is_closing() and not vim.lsp.get_client_by_id(client.id) then
      timer:close()
      for _, bufnr in ipairs(attached) do
        if api.nvim_buf_is_loaded(bufnr) then
          M.attach(bufnr)
        end
      end
    end
  end))
end

--- Optional: merge `opts` into `vim.g.dg_lsp` and attach already-open buffers.
function M.setup(opts)
  vim.g.dg_lsp = vim.tbl_extend('force', vim.g.dg_lsp or {}, opts or {})
  for _, bufnr in ipairs(api.nvim_list_bufs()) do
    if api.nvim_buf_is_loaded(bufnr) and config.wants(vim.bo[bufnr].filetype) then
      M.attach(bufnr)
    end
  end
end

return M
