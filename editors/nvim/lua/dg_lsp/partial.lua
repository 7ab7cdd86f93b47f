--- Partial accept: how much of a suggestion's rest (the text after what is typed) the word and line
--- keys take. Pure functions, shared by both renderers.
local M = {}

--- The part of `rest` that `unit` ('word' or 'line') accepts: for a word, the blanks and line
--- breaks before it and the word (a run of letters, digits and `_`, or of other signs); for a
--- line, the rest of the cursor's line, or, where that is empty, the line break and the next line.
---@param rest string
---@param unit 'word'|'line'
---@return string
function M.take(rest, unit)
  if unit == 'word' then
    return rest:match('^%s*[%w_]+') or rest:match('^%s*[^%w_%s]+') or rest
  end
  local first = rest:match('^[^\n]*')
  if first ~= '' then
    return first
  end
  return rest:match('^\n[^\n]*') or rest
end

return M
