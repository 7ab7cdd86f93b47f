--- A guard around Neovim 0.12's built-in `vim.lsp.inline_completion` (`ghost_text = 'native'`).
---
--- The built-in renderer keeps its current item while you type, until its 200 ms debounce sends
--- a new request, and it takes any answer, even one made for text you have typed over since.
--- Accepting such an item inserts it where the cursor was and pushes what you typed after it.
--- This module remembers the changedtick and cursor each inline request was sent for (from the
--- `LspRequest` autocmd, which fires before the answer's handler), and accepts the built-in item
--- only when the latest answer was made for the buffer and cursor as they are now.
local api = vim.api
local M = {}

local METHOD = 'textDocument/inlineCompletion'
M.ns = api.nvim_create_namespace('nvim.lsp.inline_completion') -- the built-in renderer's

---@class (private) dg_lsp.NativeState
---@field sent table<string, { tick: integer, cursor: integer[] }> request key -> where it was sent
---@field answered? { tick: integer, cursor: integer[] } what the item on screen was made for

---@type table<integer, dg_lsp.NativeState>
local buffers = {}

local function cursor_of(bufnr)
  local win = vim.fn.bufwinid(bufnr)
  return win ~= -1 and api.nvim_win_get_cursor(win) or nil
end

--- Start the built-in renderer in `bufnr` (`automatic` false: attached, but not asking; see `set_automatic`).
function M.enable(bufnr, automatic)
  vim.lsp.inline_completion.enable(automatic ~= false, { bufnr = bufnr })
  if buffers[bufnr] then
    return
  end
  local state = { sent = {} }
  buffers[bufnr] = state
  local group = api.nvim_create_augroup('dg_lsp.native.' .. bufnr, { clear = true })
  api.nvim_create_autocmd('LspRequest', {
    group = group,
    buffer = bufnr,
    callback = function(args)
      local data = args.data or {}
      local req = data.request or {}
      if req.method ~= METHOD then
        return
      end
      local key = data.client_id .. ':' .. data.request_id
      if req.type == 'pending' then
        state.sent[key] = { tick = api.nvim_buf_get_changedtick(bufnr), cursor = cursor_of(bufnr) }
      elseif req.type == 'complete' then
        -- The built-in handler runs next and replaces its item with this answer's.
        state.answered = state.sent[key] or { tick = -1 }
        state.sent[key] = nil
      end
    end,
  })
  -- The built-in renderer re-shows its old item on every keystroke; hide it until an answer for
  -- the new text arrives (scheduled, so it runs after the built-in CursorMovedI handler).
  api.nvim_create_autocmd({ 'TextChangedI', 'CursorMovedI' }, {
    group = group,
    buffer = bufnr,
    callback = function()
      vim.schedule(function()
        if api.nvim_buf_is_valid(bufnr) and not M.fresh(bufnr) then
          api.nvim_buf_clear_namespace(bufnr, M.ns, 0, -1)
        end
      end)
    end,
  })
  api.nvim_create_autocmd({ 'InsertLeave', 'BufUnload' }, {
    group = group,
    buffer = bufnr,
    callback = function()
      state.answered = nil
    end,
  })
end

--- Whether the built-in item on screen was made for `bufnr` as it is now.
function M.fresh(bufnr)
  local state = buffers[bufnr]
  local a = state and state.answered
  if not a or a.tick ~= api.nvim_buf_get_changedtick(bufnr) or not a.cursor then
    return false
  end
  local now = cursor_of(bufnr)
  return now ~= nil and now[1] == a.cursor[1] and now[2] == a.cursor[2]
end

--- Apply a built-in item the way `vim.lsp.inline_completion` does.
---@param item vim.lsp.inline_completion.Item
local function apply(bufnr, item)
  local text = item.insert_text
  if type(text) == 'table' then
    if text.kind == 'snippet' then
      vim.snippet.expand(text.value)
      return
    end
    text = text.value
  end
  local lines = vim.split(text, '\n', { plain = true })
  local win = vim.fn.bufwinid(bufnr)
  local r = item.range
  local srow, scol, erow, ecol
  if r then
    srow, scol, erow, ecol = r.start.row, r.start.col, r.end_.row, r.end_.col
  else
    local c = api.nvim_win_get_cursor(win)
    srow, scol, erow, ecol = c[1] - 1, c[2], c[1] - 1, c[2]
  end
  api.nvim_buf_set_text(bufnr, srow, scol, erow, ecol, lines)
  api.nvim_win_set_cursor(win, { srow + #lines, (#lines == 1 and scol or 0) + #lines[#lines] })
  if item.command then
    local client = vim.lsp.get_client_by_id(item.client_id)
    if client then
      client:exec_cmd(item.command, { bufnr = bufnr })
    end
  end
end

--- Insert the part of the item that comes next, after what is typed (`partial.take`'s word or line, placed
--- at the cursor), or the whole item where that is all of it, or it is a snippet, or its range runs
--- past the cursor. The built-in renderer asks again for the rest (the server answers it from its
--- cache of the suggestion being typed through).
local function apply_part(bufnr, item, unit, c)
  local text, r = item.insert_text, item.range
  local row, col = c[1] - 1, c[2]
  if type(text) ~= 'string' or (r and r.end_.col ~= col) then
    return apply(bufnr, item)
  end
  local line = api.nvim_buf_get_lines(bufnr, row, row + 1, true)[1]
  local typed = r and line:sub(r.start.col + 1, col) or ''
  if text:sub(1, #typed) ~= typed then
    return
  end
  local rest = text:sub(#typed + 1)
  local part = require('dg_lsp.partial').take(rest, unit)
  if #part >= #rest then
    return apply(bufnr, item)
  end
  local lines = vim.split(part, '\n', { plain = true })
  api.nvim_buf_set_text(bufnr, row, col, row, col, lines)
  api.nvim_win_set_cursor(vim.fn.bufwinid(bufnr), { row + #lines, (#lines == 1 and col or 0) + #lines[#lines] })
end

--- Accept the built-in item if it is fresh: whole, or (`unit` 'word' or 'line') the part of it that
--- comes next (`apply_part`). Returns false (and changes nothing) otherwise. The built-in `get()`
--- applies from a scheduled callback; the item is dropped if the buffer changed in between.
---@param unit? 'word'|'line'
function M.accept(bufnr, unit)
  if not M.fresh(bufnr) then
    return false
  end
  local tick = api.nvim_buf_get_changedtick(bufnr)
  return vim.lsp.inline_completion.get({
    bufnr = bufnr,
    on_accept = function(item)
      if not api.nvim_buf_is_valid(bufnr) or api.nvim_buf_get_changedtick(bufnr) ~= tick then
        return
      end
      -- The item's range must hold the cursor (dg-lsp's is empty, at the cursor it answered for).
      local r, c = item.range, cursor_of(bufnr)
      if r then
        local row, col = c and c[1] - 1, c and c[2]
        local inside = c ~= nil and r.start.row == row and r.end_.row == row
          and r.start.col <= col and col <= r.end_.col
        if not inside then
          return
        end
      end
      if unit == nil then
        apply(bufnr, item)
      elseif c then
        apply_part(bufnr, item, unit, c)
      end
    end,
  })
end

--- Turn the built-in renderer on or off in `bufnr`: it only asks while typing, so off means no suggestions.
function M.set_automatic(bufnr, on)
  vim.lsp.inline_completion.enable(on, { bufnr = bufnr })
  if not on and buffers[bufnr] then
    buffers[bufnr].answered = nil
  end
end

--- Show the built-in renderer's next (`delta` 1) or previous (-1) item of the answer, if it is fresh.
function M.cycle(bufnr, delta)
  if not M.fresh(bufnr) then
    return false
  end
  vim.lsp.inline_completion.select({ bufnr = bufnr, count = delta })
  return true
end

function M.disable(bufnr)
  buffers[bufnr] = nil
  pcall(api.nvim_del_augroup_by_name, 'dg_lsp.native.' .. bufnr)
end

return M
