--- The plugin's own ghost-text renderer: the default ('auto' and 'fallback'), and the only one
--- on Neovim 0.10/0.11.
---
--- In insert mode, every cursor move or edit hides the suggestion, cancels the request in
--- flight and, after `debounce_ms`, asks `textDocument/inlineCompletion` again. An answer
--- is shown only if the buffer and cursor are still where the request was made.
local lsp = require('dg_lsp.lsp')

local api = vim.api
local M = {}

M.ns = api.nvim_create_namespace('dg_lsp.ghost')
api.nvim_set_hl(0, 'DgLspGhost', { link = 'Comment', default = true })
api.nvim_set_hl(0, 'DgLspGhostIndex', { link = 'DgLspGhost', default = true })

local TRIGGER_INVOKED = 1 -- lsp.InlineCompletionTriggerKind.Invoked
local TRIGGER_AUTOMATIC = 2 -- lsp.InlineCompletionTriggerKind.Automatic

--- Whether to ask while typing (`require('dg_lsp').toggle()` sets it).
local automatic = true

---@class (private) dg_lsp.Suggestion
---@field client_id integer
---@field lines string[] Text that replaces the range.
---@field range integer[] {start_row, start_col, end_row, end_col}, bytes, 0-based.
---@field command? lsp.Command
---@field tick integer Buffer changedtick it was made for.

---@class (private) dg_lsp.GhostState
---@field timer uv.uv_timer_t
---@field debounce_ms integer
---@field pending? { client_id: integer, id: integer }
---@field suggestion? dg_lsp.Suggestion The one shown.
---@field items? dg_lsp.Suggestion[] The answer's items that fit (`cycle` goes through them).
---@field index? integer Which of `items` is shown.

---@type table<integer, dg_lsp.GhostState>
local buffers = {}

local function cancel(state)
  local pending = state.pending
  state.pending = nil
  local client = pending and vim.lsp.get_client_by_id(pending.client_id)
  if client then
    lsp.cancel(client, pending.id)
  end
end

--- Hide the suggestion of `bufnr` and cancel its request.
function M.dismiss(bufnr)
  local state = buffers[bufnr]
  if state then
    state.timer:stop()
    cancel(state)
    state.suggestion, state.items, state.index = nil, nil, nil
  end
  if api.nvim_buf_is_valid(bufnr) then
    api.nvim_buf_clear_namespace(bufnr, M.ns, 0, -1)
  end
end

--- Turn the item into a suggestion at `cursor` ({row 1-based, byte col}), or nil if it
--- adds nothing there.
local function to_suggestion(bufnr, client, item, cursor)
  local text = type(item.insertText) == 'table' and item.insertText.value or item.insertText
  if type(text) ~= 'string' or text == '' then
    return nil
  end
  local row, col = cursor[1] - 1, cursor[2]
  local line = api.nvim_buf_get_lines(bufnr, row, row + 1, true)[1]
  local range = { row, col, row, col }
  if type(item.range) == 'table' then
    local s, e = item.range.start, item.range['end']
    local eline = api.nvim_buf_get_lines(bufnr, e.line, e.line + 1, true)[1] or ''
    range = {
      s.line,
      lsp.byte_col(line, s.character, client.offset_encoding),
      e.line,
      lsp.byte_col(eline, e.character, client.offset_encoding),
    }
  end
  if range[1] ~= row or range[2] > col then
    return nil -- the range must start on the cursor line, at or before the cursor
  end
  -- What was typed between the range start and the cursor must match the suggestion.
  local typed = line:sub(range[2] + 1, col)
  if text:sub(1, #typed) ~= typed or #text == #typed then
    return nil
  end
  return {
    client_id = client.id,
    lines = vim.split(text, '\n', { plain = true }),
    range = range,
    command = type(item.command) == 'table' and item.command or nil,
    tick = api.nvim_buf_get_changedtick(bufnr),
    ghost = vim.split(text:sub(#typed + 1), '\n', { plain = true }),
  }
end

--- Draw `suggestion` at `cursor`; `hint` (which of the answer's items it is) after its last line.
local function show(bufnr, suggestion, cursor, hint)
  api.nvim_buf_clear_namespace(bufnr, M.ns, 0, -1)
  local ghost = suggestion.ghost
  local virt_text = { { ghost[1], 'DgLspGhost' } }
  local virt_lines = {}
  for i = 2, #ghost do
    virt_lines[#virt_lines + 1] = { { ghost[i], 'DgLspGhost' } }
  end
  if hint then
    table.insert(#virt_lines > 0 and virt_lines[#virt_lines] or virt_text, { hint, 'DgLspGhostIndex' })
  end
  api.nvim_buf_set_extmark(bufnr, M.ns, cursor[1] - 1, cursor[2], {
    virt_text = virt_text,
    virt_text_pos = 'inline',
    virt_lines = #virt_lines > 0 and virt_lines or nil,
    hl_mode = 'combine',
  })
end

---@param kind? integer the trigger kind (default: automatic)
local function request(bufnr, kind)
  local state = buffers[bufnr]
  local client = lsp.get_client(bufnr)
  if not state or not client or api.nvim_get_current_buf() ~= bufnr then
    return
  end
  if not api.nvim_get_mode().mode:match('^i') then
    return
  end
  cancel(state)
  local cursor = api.nvim_win_get_cursor(0)
  local tick = api.nvim_buf_get_changedtick(bufnr)
  local params = vim.lsp.util.make_position_params(0, client.offset_encoding)
  params.context = { triggerKind = kind or TRIGGER_AUTOMATIC }
  local id
  local function on_result(err, result)
    if not state.pending or state.pending.id ~= id then
      return -- superseded or cancelled
    end
    state.pending = nil
    if err or not result or not api.nvim_buf_is_valid(bufnr) then
      return
    end
    local now = api.nvim_win_get_cursor(0)
    local stale = api.nvim_get_current_buf() ~= bufnr
      or api.nvim_buf_get_changedtick(bufnr) ~= tick
      or now[1] ~= cursor[1]
      or now[2] ~= cursor[2]
      or not api.nvim_get_mode().mode:match('^i')
    if stale then
      return
    end
    local items = {}
    for _, item in ipairs(result.items or result) do
      items[#items + 1] = to_suggestion(bufnr, client, item, cursor)
    end
    if #items > 0 then
      state.suggestion, state.items, state.index = items[1], items, 1
      show(bufnr, items[1], cursor)
    end
  end
  local ok
  ok, id = lsp.request(client, 'textDocument/inlineCompletion', params, on_result, bufnr)
  if ok and id then
    state.pending = { client_id = client.id, id = id }
  end
end

--- Hide the current suggestion and ask again once the user pauses; a suggestion made for the
--- buffer and cursor as they are now (the rest after a partial accept) stays.
local function on_change(bufnr)
  local state = buffers[bufnr]
  local s = state.suggestion
  if s and s.tick == api.nvim_buf_get_changedtick(bufnr) and api.nvim_get_current_buf() == bufnr then
    local cursor = api.nvim_win_get_cursor(0)
    if cursor[1] - 1 == s.range[1] and cursor[2] == s.range[2] and s.range[1] == s.range[3]
      and s.range[2] == s.range[4] then
      return
    end
  end
  M.dismiss(bufnr)
  if not automatic then
    return
  end
  state.timer:start(state.debounce_ms, 0, vim.schedule_wrap(function()
    request(bufnr)
  end))
end

--- Ask while typing (`on` true) or only when asked (`suggest_now`).
function M.set_automatic(on)
  automatic = on
end

--- Ask now, explicitly (the server's invoked trigger), in insert mode in the current buffer.
--- Returns false where the plugin does not draw in `bufnr`.
function M.suggest_now(bufnr)
  if not buffers[bufnr] or api.nvim_get_current_buf() ~= bufnr then
    return false
  end
  M.dismiss(bufnr)
  request(bufnr, TRIGGER_INVOKED)
  return true
end

function M.is_enabled(bufnr)
  return buffers[bufnr] ~= nil
end

--- Whether a suggestion is shown in `bufnr`.
function M.visible(bufnr)
  local state = buffers[bufnr]
  return state ~= nil
    and state.suggestion ~= nil
    and state.suggestion.tick == api.nvim_buf_get_changedtick(bufnr)
end

local function apply(bufnr, s)
  local r = s.range
  api.nvim_buf_set_text(bufnr, r[1], r[2], r[3], r[4], s.lines)
  local last = s.lines[#s.lines]
  local col = (#s.lines == 1 and r[2] or 0) + #last
  if api.nvim_get_current_buf() == bufnr then
    api.nvim_win_set_cursor(0, { r[1] + #s.lines, col })
  end
  local client = s.command and vim.lsp.get_client_by_id(s.client_id)
  if client then
    lsp.request(client, 'workspace/executeCommand', s.command, nil, bufnr)
  end
end

--- Insert the word or the line (`unit`) of the shown suggestion that comes next, now; the rest
--- stays shown (a suggestion whose range ends after the cursor is inserted whole). Returns false
--- when there is none.
---@param unit 'word'|'line'
function M.accept_part_now(bufnr, unit)
  if not M.visible(bufnr) or api.nvim_get_current_buf() ~= bufnr then
    return false
  end
  local state = buffers[bufnr]
  local s = state.suggestion
  local cursor = api.nvim_win_get_cursor(0)
  local at_cursor = s.range[1] == s.range[3] and s.range[4] == cursor[2] and s.range[1] == cursor[1] - 1
  local rest = table.concat(s.ghost, '\n')
  local part = require('dg_lsp.partial').take(rest, unit)
  if not at_cursor or #part >= #rest then
    return M.accept_now(bufnr)
  end
  local lines = vim.split(part, '\n', { plain = true })
  local row, col = cursor[1] - 1, cursor[2]
  api.nvim_buf_set_text(bufnr, row, col, row, col, lines)
  local new_row = row + #lines - 1
  local new_col = (#lines == 1 and col or 0) + #lines[#lines]
  api.nvim_win_set_cursor(0, { new_row + 1, new_col })
  -- the rest, at the new cursor: shown at once, kept through the cursor and text events of this edit
  local left = rest:sub(#part + 1)
  state.suggestion = {
    client_id = s.client_id,
    lines = vim.split(left, '\n', { plain = true }),
    range = { new_row, new_col, new_row, new_col },
    command = s.command,
    tick = api.nvim_buf_get_changedtick(bufnr),
    ghost = vim.split(left, '\n', { plain = true }),
  }
  state.items, state.index = { state.suggestion }, 1
  show(bufnr, state.suggestion, { new_row + 1, new_col })
  return true
end

--- Show the answer's next (`delta` 1) or previous (-1) item instead of the shown one, with its place
--- among them (`(2/3)`), wrapping around. Returns false when none is shown; true (changing nothing)
--- where the answer had one item.
function M.cycle(bufnr, delta)
  if not M.visible(bufnr) or api.nvim_get_current_buf() ~= bufnr then
    return false
  end
  local state = buffers[bufnr]
  local items = state.items or { state.suggestion }
  if #items > 1 then
    state.index = ((state.index or 1) - 1 + delta) % #items + 1
    state.suggestion = items[state.index]
    show(bufnr, state.suggestion, api.nvim_win_get_cursor(0), (' (%d/%d)'):format(state.index, #items))
  end
  return true
end

--- Insert the shown suggestion now (not allowed inside an `<expr>` mapping). Returns false when
--- there is none.
function M.accept_now(bufnr)
  if not M.visible(bufnr) then
    return false
  end
  local s = buffers[bufnr].suggestion
  M.dismiss(bufnr)
  apply(bufnr, s)
  return true
end

--- Insert the shown suggestion. Returns false when there is none. The edit is scheduled, so
--- this can run inside an `<expr>` mapping; it is dropped if the buffer changes in between.
function M.accept(bufnr)
  if not M.visible(bufnr) then
    return false
  end
  local s = buffers[bufnr].suggestion
  M.dismiss(bufnr)
  vim.schedule(function()
    if api.nvim_buf_is_valid(bufnr) and api.nvim_buf_get_changedtick(bufnr) == s.tick then
      apply(bufnr, s)
    end
  end)
  return true
end

---@param cfg dg_lsp.Config
function M.enable(bufnr, cfg)
  if buffers[bufnr] then
    buffers[bufnr].debounce_ms = cfg.debounce_ms
    return
  end
  buffers[bufnr] = { timer = assert(vim.uv.new_timer()), debounce_ms = cfg.debounce_ms }
  local group = api.nvim_create_augroup('dg_lsp.ghost.' .. bufnr, { clear = true })
  api.nvim_create_autocmd({ 'InsertEnter', 'CursorMovedI', 'TextChangedI' }, {
    group = group,
    buffer = bufnr,
    callback = function()
      on_change(bufnr)
    end,
  })
  api.nvim_create_autocmd({ 'InsertLeave', 'BufLeave' }, {
    group = group,
    buffer = bufnr,
    callback = function()
      M.dismiss(bufnr)
    end,
  })
  api.nvim_create_autocmd({ 'BufUnload', 'BufWipeout' }, {
    group = group,
    buffer = bufnr,
    callback = function()
      M.disable(bufnr)
    end,
  })
end

function M.disable(bufnr)
  local state = buffers[bufnr]
  if not state then
    return
  end
  M.dismiss(bufnr)
  state.timer:close()
  buffers[bufnr] = nil
  pcall(api.nvim_del_augroup_by_name, 'dg_lsp.ghost.' .. bufnr)
end

return M
