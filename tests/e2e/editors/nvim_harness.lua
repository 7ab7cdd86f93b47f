-- The frame the Neovim test drivers here run in (nvim_driver.lua, nvim_keymaps.lua, nvim_typing.lua,
-- nvim_partial.lua): a log, `finish` (write `results` as JSON to DG_TEST_OUT and quit, once), and a
-- coroutine whose `sleep` waits on a timer, so Neovim's main loop (insert mode, LSP messages, the
-- renderers' timers) keeps running between steps. A driver loads it with
--   local H = dofile(vim.fs.joinpath(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)), 'nvim_harness.lua'))
--     .new(results, { poll_ms = 20 })
-- and ends with `H.run(main, default_timeout_ms)`. `ghost(bufnr)` (the module's, not a frame's) reads the ghost text
-- either renderer shows.
local M = {}

---@param results table written as the driver's output; needs a `log` list (and `t0`, set by the driver)
---@param opts? { poll_ms?: integer } how often `wait_for` asks (default 20 ms)
function M.new(results, opts)
  local poll_ms = (opts or {}).poll_ms or 20
  local h = {}
  local finished, co = false, nil

  function h.log(msg)
    table.insert(results.log, ('%6d ms  %s'):format(vim.uv.now() - results.t0, msg))
  end

  function h.finish()
    if finished then
      return
    end
    finished = true
    local f = assert(io.open(vim.env.DG_TEST_OUT, 'w'))
    f:write(vim.json.encode(results))
    f:close()
    vim.cmd('qa!')
  end

  function h.sleep(ms)
    vim.defer_fn(function()
      local ok, err = coroutine.resume(co)
      if not ok then
        results.error = debug.traceback(co, err)
        h.finish()
      end
    end, ms)
    coroutine.yield()
  end

  --- The first truthy value of `pred()`, asked every `poll_ms` until `timeout_ms`; nil after it.
  function h.wait_for(what, timeout_ms, pred)
    local start = vim.uv.now()
    while true do
      local value = pred()
      if value then
        h.log(what .. ': yes')
        return value
      end
      if vim.uv.now() - start > timeout_ms then
        h.log(what .. ': timed out')
        return nil
      end
      h.sleep(poll_ms)
    end
  end

  --- Run `main` in the coroutine, then finish; finish with an error after DG_TEST_TIMEOUT_MS
  --- (default `timeout_ms`) whatever happens.
  function h.run(main, timeout_ms)
    vim.defer_fn(function()
      results.error = results.error or 'driver timed out'
      h.finish()
    end, tonumber(vim.env.DG_TEST_TIMEOUT_MS or tostring(timeout_ms)))
    co = coroutine.create(function()
      local ok, err = xpcall(main, debug.traceback)
      if not ok then
        results.error = err
      end
      h.finish()
    end)
    vim.schedule(function()
      coroutine.resume(co)
    end)
  end

  return h
end

--- The ghost text shown in `bufnr` by either renderer: {row, col, lines} (0-based row, byte col;
--- the inline part and the lines below it), or nil.
function M.ghost(bufnr)
  local api = vim.api
  local ns = require('dg_lsp').renderer(bufnr) == 'native'
      and api.nvim_create_namespace('nvim.lsp.inline_completion')
    or require('dg_lsp.ghost').ns
  local marks = api.nvim_buf_get_extmarks(bufnr, ns, 0, -1, { details = true })
  if #marks == 0 then
    return nil
  end
  local d = marks[1][4]
  local lines = { table.concat(vim.tbl_map(function(c) return c[1] end, d.virt_text or {})) }
  for _, vl in ipairs(d.virt_lines or {}) do
    table.insert(lines, table.concat(vim.tbl_map(function(c) return c[1] end, vl)))
  end
  return { row = marks[1][2], col = marks[1][3], lines = lines }
end

return M
