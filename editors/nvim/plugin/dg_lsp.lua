-- dg-lsp: inline completions from a block-diffusion language server. See `:h dg_lsp`.
-- Only cheap wiring here; everything else loads on first use from lua/dg_lsp/.
if vim.g.loaded_dg_lsp or vim.fn.has('nvim-0.10') == 0 then
  return
end
vim.g.loaded_dg_lsp = true

vim.api.nvim_create_autocmd('FileType', {
  group = vim.api.nvim_create_augroup('dg_lsp', { clear = true }),
  desc = 'Start dg-lsp for supported filetypes',
  callback = function(args)
    if require('dg_lsp.config').wants(vim.bo[args.buf].filetype) then
      require('dg_lsp').attach(args.buf)
    end
  end,
})

vim.api.nvim_create_user_command('DgFill', function(opts)
  require('dg_lsp').fill({ line1 = opts.line1, line2 = opts.line2, range = opts.range })
end, { range = true, desc = 'dg-lsp: regenerate the visual selection (or the given lines)' })

vim.api.nvim_create_user_command('DgStatus', function()
  require('dg_lsp').status()
end, { desc = 'dg-lsp: show the server status' })

vim.api.nvim_create_user_command('DgToggle', function(opts)
  local on = ({ on = true, off = false })[opts.args]
  if on == nil and opts.args ~= '' then
    vim.notify('dg-lsp: :DgToggle takes on, off or nothing', vim.log.levels.ERROR)
    return
  end
  require('dg_lsp').toggle(on)
end, {
  nargs = '?',
  complete = function() return { 'on', 'off' } end,
  desc = 'dg-lsp: pause or resume automatic suggestions (on/off)',
})

vim.api.nvim_create_user_command('DgRestart', function()
  require('dg_lsp').restart()
end, { desc = 'dg-lsp: restart the server' })

vim.keymap.set('i', '<Plug>(dg-lsp-accept)', function()
  require('dg_lsp').accept_now()
end, { desc = 'dg-lsp: accept the suggestion' })
vim.keymap.set('i', '<Plug>(dg-lsp-accept-word)', function()
  require('dg_lsp').accept_part_now(nil, 'word')
end, { desc = 'dg-lsp: accept the next word of the suggestion' })
vim.keymap.set('i', '<Plug>(dg-lsp-accept-line)', function()
  require('dg_lsp').accept_part_now(nil, 'line')
end, { desc = 'dg-lsp: accept the next line of the suggestion' })
vim.keymap.set('i', '<Plug>(dg-lsp-next)', function()
  require('dg_lsp').cycle(nil, 1)
end, { desc = "dg-lsp: show the server's next suggestion" })
vim.keymap.set('i', '<Plug>(dg-lsp-prev)', function()
  require('dg_lsp').cycle(nil, -1)
end, { desc = "dg-lsp: show the server's previous suggestion" })
vim.keymap.set('i', '<Plug>(dg-lsp-suggest)', function()
  require('dg_lsp').suggest()
end, { desc = 'dg-lsp: a suggestion now' })
vim.keymap.set('x', '<Plug>(dg-lsp-fill)', ':DgFill<CR>', { silent = true, desc = 'dg-lsp: fill the selection' })
