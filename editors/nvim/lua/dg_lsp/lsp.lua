--- The language client: start/reuse the one dg-lsp server, requests, and position conversion.
local M = {}

M.name = 'dg_lsp'

local has_011 = vim.fn.has('nvim-0.11') == 1

--- Client methods are called with `:` from 0.11 on and with `.` before.
local function call(client, method, ...)
  if has_011 then
    return client[method](client, ...)
  end
  return client[method](...)
end

---@return boolean, integer? request id
function M.request(client, method, params, handler, bufnr)
  return call(client, 'request', method, params, handler, bufnr)
end

function M.request_sync(client, method, params, timeout_ms, bufnr)
  return call(client, 'request_sync', method, params, timeout_ms, bufnr)
end

function M.cancel(client, request_id)
  return call(client, 'cancel_request', request_id)
end

function M.stop(client)
  return call(client, 'stop')
end

---@param bufnr? integer
---@return vim.lsp.Client?
function M.get_client(bufnr)
  return vim.lsp.get_clients({ name = M.name, bufnr = bufnr })[1]
end

---@param cfg dg_lsp.Config
---@param on_attach fun(client: vim.lsp.Client, bufnr: integer)
function M.client_config(cfg, bufnr, on_attach)
  local root = vim.fs.root(bufnr, cfg.root_markers) or vim.fn.getcwd()
  -- An empty Lua table would be sent as a JSON array.
  local settings = next(cfg.settings) and cfg.settings or vim.empty_dict()
  return {
    name = M.name,
    cmd = cfg.cmd,
    cmd_env = cfg.cmd_env,
    root_dir = root,
    init_options = { dgLsp = settings },
    settings = { dgLsp = settings },
    on_attach = on_attach,
  }
end

--- Start the server for `bufnr`, or attach the buffer to the running one: one model in memory
--- serves every project, so clients are reused across roots.
---@return integer? client id
function M.start(cfg, bufnr, on_attach)
  return vim.lsp.start(M.client_config(cfg, bufnr, on_attach), {
    bufnr = bufnr,
    reuse_client = function(client, config)
      return client.name == config.name and not call(client, 'is_stopped')
    end,
  })
end

--- The `dgLsp.status` answer with JSON nulls (vim.NIL) as nil, or nil when it is not a table.
function M.parse_status(result)
  if type(result) ~= 'table' then
    return nil
  end
  local s = {}
  for k, v in pairs(result) do
    if v ~= vim.NIL then
      s[k] = v
    end
  end
  s.model, s.device, s.queue = s.model or '?', s.device or '?', tonumber(s.queue) or 0
  return s
end

--- Byte column `col` of buffer line `row` (0-based) as a character offset in `encoding`.
function M.character(bufnr, row, col, encoding)
  if col == 0 then
    return 0
  end
  return vim.lsp.util.character_offset(bufnr, row, col, encoding)
end

--- Character offset in `encoding` as a byte column of `line`.
function M.byte_col(line, character, encoding)
  if has_011 then
    return vim.str_byteindex(line, encoding, character, false)
  end
  if encoding == 'utf-8' then
    return math.min(character, #line)
  end
  local ok, col = pcall(vim.str_byteindex, line, character, encoding == 'utf-16')
  return ok and col or #line
end

--- The LSP range of a selection given as marks ({1-based row, 0-based byte col}, end inclusive)
--- in `vim.fn.visualmode()` `mode`.
function M.selection_range(bufnr, start_mark, end_mark, mode, encoding)
  local srow, scol = start_mark[1] - 1, start_mark[2]
  local erow, ecol = end_mark[1] - 1, end_mark[2]
  local sline = vim.api.nvim_buf_get_lines(bufnr, srow, srow + 1, true)[1]
  local eline = vim.api.nvim_buf_get_lines(bufnr, erow, erow + 1, true)[1]
  if mode == 'V' then
    scol, ecol = 0, #eline
  elseif ecol >= #eline then
    ecol = #eline
  elseif vim.o.selection ~= 'exclusive' then
    -- '> is the first byte of the last selected character; LSP ends are exclusive.
    ecol = ecol + vim.str_utf_end(eline, ecol + 1) + 1
  end
  scol = math.min(scol, #sline)
  return {
    start = { line = srow, character = M.character(bufnr, srow, scol, encoding) },
    ['end'] = { line = erow, character = M.character(bufnr, erow, ecol, encoding) },
  }
end

return M
