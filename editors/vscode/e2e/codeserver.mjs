// End-to-end test of the extension in a real VS Code: code-server in headless Chromium, driven
// by playwright-core. Run by tests/e2e/editors/test_vscode_codeserver.py; by hand:
//
//   node editors/vscode/e2e/codeserver.mjs '{"cache": "~/.cache/dg-lsp/vscode-e2e",
//     "vsix": "editors/vscode/dg-lsp.vsix", "serverCommand": [".venv/bin/python", "-m", "dg_lsp",
//     "serve", "--device", "cpu"], "work": "/tmp/cs", "screenshot": "/tmp/cs.png"}'
//
// Steps: install the .vsix into a fresh extensions dir, start code-server on a free loopback
// port, open a workspace with a Python file in Chromium, wait for the server to be ready (the
// status bar item), type at the end of a line, wait for ghost text, take a screenshot, press Tab,
// save, and check that the editor and the file on disk hold the accepted text. Prints one line
// `RESULT {json}` and exits 0 on success; any failure prints `FAIL ...` and exits 1. code-server
// and Chromium are stopped on every path. With `"notebook": true` the same lines are the last code
// cell of demo.ipynb (a markdown cell and a code cell above it), typed in VS Code's notebook editor;
// the result's texts are that cell's, and `file` is its source in the saved notebook (`cellLines`:
// that cell's lines instead; `typed`: what is typed instead of `a`). With `"cycle": true`, once ghost text is
// shown, Alt+] (editor.action.inlineSuggest.showNext) must show another of the server's items, which Tab then
// accepts; the result's `cycled` holds the first and the next. With `"pauseCommand": TITLE`, that command is run
// from the command palette before typing: no ghost text may appear for `quietS` seconds after typing (the result's
// `automaticGhost`), then the palette's Trigger Inline Suggestion (the command Alt+\ runs) asks; `userSettings` is
// the settings file the command wrote, `pausedSign` whether the status item shows the pause sign.

import { spawn, spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';

const cfg = JSON.parse(process.argv[2] ?? '{}');
const cache = cfg.cache;
const work = cfg.work;
const timeoutMs = (cfg.timeoutS ?? 300) * 1000;
const started = Date.now();
const timings = {};
const mark = (key, detail = '') => { timings[key] = Math.round((Date.now() - started) / 100) / 10; log(`${key} ${detail}`); };
function log(msg) { process.stderr.write(`[${((Date.now() - started) / 1000).toFixed(1)}s] ${msg}\n`); }

const require = createRequire(path.join(cache, 'node_modules', 'x.js'));
const { chromium } = require('playwright-core');
const codeServerBin = path.join(cache, 'node_modules', '.bin', 'code-server');
const node24 = path.join(cache, 'node', 'bin');
const env = { ...process.env, PATH: `${node24}:${process.env.PATH}` };

const dirs = {
  userData: path.join(work, 'user-data'),
  extensions: path.join(work, 'extensions'),
  workspace: path.join(work, 'workspace'),
  browser: path.join(work, 'chromium-profile'),
};
for (const d of Object.values(dirs)) fs.mkdirSync(d, { recursive: true });

// The line the test types after; the model continues it. The last line is a comment: there the
// default model's continuation passes the server's syntax gate (after `    return ` its junk is
// hidden, rightly), and it may span several lines, which ghostText() reads whole.
const PREFIX = [
  'def add(a, b):',
  '    """Return the sum of a and b."""',
  '    return a + b',
  '',
  '',
  'def multiply(a, b):',
  '    """Return the product of a and b."""',
  '    # ',
];
const TYPED = cfg.typed ?? 'a';
const notebook = Boolean(cfg.notebook);
const demo = path.join(dirs.workspace, notebook ? 'demo.ipynb' : 'demo.py');
// A notebook: the first function in a cell of its own, the rest (the typed cell, or `cellLines`) in the last one.
const CELL = cfg.cellLines ?? PREFIX.slice(5);
const source = (lines) => lines.map((line, i) => (i < lines.length - 1 ? `${line}\n` : line));
const NOTEBOOK = JSON.stringify({
  cells: [
    { cell_type: 'markdown', metadata: {}, source: ['# Arithmetic'] },
    { cell_type: 'code', execution_count: null, metadata: {}, outputs: [], source: source(PREFIX.slice(0, 3)) },
    { cell_type: 'code', execution_count: null, metadata: {}, outputs: [], source: source(CELL) },
  ],
  metadata: { kernelspec: { display_name: 'Python 3', language: 'python', name: 'python3' },
    language_info: { name: 'python' } },
  nbformat: 4,
  nbformat_minor: 5,
}, null, 1);
const original = notebook ? NOTEBOOK : PREFIX.join('\n');
fs.writeFileSync(demo, original);
// what the test reads as "the file": the typed cell's source in the saved notebook, or the file
const fileText = () => {
  const text = fs.readFileSync(demo, 'utf8');
  if (!notebook) return text;
  const cells = JSON.parse(text).cells;
  const last = cells[cells.length - 1].source;
  return Array.isArray(last) ? last.join('') : last;
};
// where the texts are read: the last code cell's editor in a notebook, else any editor
const ROOT = notebook ? '.notebook-editor .cell-editor-container .monaco-editor' : '.monaco-editor';
fs.mkdirSync(path.join(dirs.userData, 'User'), { recursive: true });
fs.writeFileSync(path.join(dirs.userData, 'User', 'settings.json'), JSON.stringify({
  'dgLsp.server.command': cfg.serverCommand,
  'dgLsp.server.env': cfg.serverEnv ?? {},
  'editor.inlineSuggest.enabled': true,
  // Nothing else may take Tab or draw over the ghost text.
  'editor.quickSuggestions': { other: false, comments: false, strings: false },
  'editor.suggestOnTriggerCharacters': false,
  'editor.wordBasedSuggestions': 'off',
  'editor.parameterHints.enabled': false,
  'editor.minimap.enabled': false,
  'files.autoSave': 'off',
  'files.insertFinalNewline': false,
  'files.trimTrailingWhitespace': false,
  'security.workspace.trust.enabled': false,
  'telemetry.telemetryLevel': 'off',
  'update.mode': 'none',
  'extensions.autoCheckUpdates': false,
  'extensions.autoUpdate': false,
  'extensions.ignoreRecommendations': true,
  'workbench.startupEditor': 'none',
  'workbench.tips.enabled': false,
  'workbench.enableExperiments': false,
  'chat.disableAIFeatures': true,
  'window.commandCenter': false,
  'workbench.secondarySideBar.defaultVisibility': 'hidden',
  // .ipynb in the notebook editor (opened before the notebook extension is up, it may come up as JSON)
  'workbench.editorAssociations': { '*.ipynb': 'jupyter-notebook' },
}, null, 2));

const csArgs = ['--user-data-dir', dirs.userData, '--extensions-dir', dirs.extensions];
let codeServer;
let context;

async function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => { const { port } = srv.address(); srv.close(() => resolve(port)); });
  });
}

function editorText(page) {
  // The model's lines as VS Code renders them (non-breaking spaces back to spaces), ghost text
  // excluded; the file is short enough to be on screen whole.
  return page.evaluate((root) => {
    const editors = root ? [...document.querySelectorAll(root)] : [document];
    const editor = editors[editors.length - 1];
    if (!editor) return '';
    const lines = [...editor.querySelectorAll('.monaco-editor .view-lines .view-line')];
    lines.sort((a, b) => parseFloat(a.style.top) - parseFloat(b.style.top));
    return lines.map((line) => {
      const clone = line.cloneNode(true);
      clone.querySelectorAll('[class*="ghost-text"]').forEach((n) => n.remove());
      return clone.textContent.replace(/\u00a0/g, ' ');
    }).join('\n');
  }, notebook ? ROOT : null);
}

function ghostText(page) {
  // The first line of a suggestion is drawn inline at the cursor (`ghost-text-decoration` spans);
  // the lines after it in a view zone below, one `.view-line` element per line inside
  // `.suggest-preview-text` (an empty line is an element with no text, so it is counted too).
  return page.evaluate((root) => {
    const editors = root ? [...document.querySelectorAll(root)] : [document];
    const editor = editors[editors.length - 1];
    if (!editor) return '';
    const plain = (nodes) => nodes.map((n) => n.textContent).join('').replace(/\u00a0/g, ' ');
    const first = plain([...editor.querySelectorAll('.monaco-editor .ghost-text-decoration')]);
    const below = [...editor.querySelectorAll('.monaco-editor .suggest-preview-text .view-line')];
    below.sort((a, b) => parseFloat(a.style.top) - parseFloat(b.style.top));
    return [first, ...below.map((line) => plain([line]))].join('\n');
  }, notebook ? ROOT : null);
}

async function until(what, fn, ms) {
  const deadline = Date.now() + ms;
  let last;
  while (Date.now() < deadline) {
    last = await fn();
    if (last) return last;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`timed out after ${ms / 1000}s waiting for ${what}`);
}

// Run a command from the command palette by its title.
async function palette(page, title) {
  await page.keyboard.press('Control+Shift+P');
  await page.waitForSelector('.quick-input-widget', { state: 'visible', timeout: 10_000 });
  await page.keyboard.type(title, { delay: 10 });
  await until(`"${title}" in the command palette`, async () =>
    (await page.locator('.quick-input-list .monaco-list-row', { hasText: title }).count()) > 0, 10_000);
  await page.keyboard.press('Enter');
}

async function main() {
  // 1. Install the extension.
  const install = spawnSync(codeServerBin, [...csArgs, '--install-extension', cfg.vsix], { env, encoding: 'utf8' });
  if (install.status !== 0) throw new Error(`--install-extension failed (${install.status}):\n${install.stdout}${install.stderr}`);
  const installed = fs.readdirSync(dirs.extensions).filter((n) => n.startsWith('dg-lsp.dg-lsp'));
  if (installed.length !== 1) throw new Error(`extension not in ${dirs.extensions}: ${fs.readdirSync(dirs.extensions)}`);
  mark('installed', installed[0]);

  // 2. Start code-server.
  const port = await freePort();
  const csLog = fs.openSync(path.join(work, 'code-server.log'), 'w');
  codeServer = spawn(codeServerBin, [...csArgs, '--auth', 'none', '--disable-workspace-trust', '--disable-telemetry',
    '--disable-update-check', '--disable-getting-started-override', '--bind-addr', `127.0.0.1:${port}`, dirs.workspace],
  { env, detached: true, stdio: ['ignore', csLog, csLog] });
  await until('code-server to listen', () => new Promise((resolve) => {
    const sock = net.connect(port, '127.0.0.1', () => { sock.destroy(); resolve(true); });
    sock.on('error', () => resolve(false));
  }), 60_000);
  mark('listening', `code-server on 127.0.0.1:${port}`);

  // 3. Open the workspace in Chromium.
  context = await chromium.launchPersistentContext(dirs.browser, {
    executablePath: cfg.chromium ?? '/usr/bin/chromium',
    headless: true,
    viewport: { width: 1100, height: 560 },
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
  const page = context.pages()[0] ?? await context.newPage();
  await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(dirs.workspace)}`);
  await page.waitForSelector('.monaco-workbench', { timeout: 60_000 });
  mark('workbench');

  // 4. Open demo.py (demo.ipynb) from the explorer (Quick Open as a fallback).
  const name = path.basename(demo);
  try {
    const row = page.locator('.explorer-folders-view .monaco-list-row', { hasText: name });
    await row.first().click({ timeout: 20_000 });
  } catch {
    await page.keyboard.press('Control+P');
    await page.keyboard.type(name);
    await page.keyboard.press('Enter');
  }
  await until(`${name} in the editor`, async () => (await editorText(page)).includes('def multiply'), 60_000);
  mark('opened', name);
  // In a notebook the status item belongs to the cell's text editor: edit the last cell first.
  if (notebook) await page.locator(`${ROOT} .view-lines`).last().click();

  // 5. Wait for the extension's status item to say ready: $(check) dg-lsp.
  const status = page.locator('.statusbar-item', { hasText: 'dg-lsp' });
  await until('the dg-lsp status item', async () => (await status.count()) > 0, 60_000);
  await until('the server to be ready ($(check) in the status bar)',
    async () => (await status.locator('.codicon-check').count()) > 0, 180_000);
  mark('ready', 'dg-lsp status item: $(check)');

  // 6. Put the cursor at the end of the file, type, and wait for ghost text.
  const lines = page.locator(`${ROOT} .view-lines`);
  await (notebook ? lines.last() : lines.first()).click();
  let pausedSign = false;
  if (cfg.pauseCommand) {
    await palette(page, cfg.pauseCommand);
    pausedSign = Boolean(await until('the pause sign in the status item',
      async () => (await status.locator('.codicon-debug-pause').count()) > 0, 10_000));
    mark('paused', cfg.pauseCommand);
    await (notebook ? lines.last() : lines.first()).click();
  }
  await page.keyboard.press('Control+End');
  const before = await editorText(page);
  await page.keyboard.type(TYPED, { delay: 50 });
  let automaticGhost;
  if (cfg.pauseCommand) {
    await new Promise((r) => setTimeout(r, (cfg.quietS ?? 5) * 1000));
    automaticGhost = await ghostText(page);
    mark('quiet', JSON.stringify(automaticGhost));
  }
  let ghost = '';
  for (let attempt = cfg.pauseCommand ? 1 : 0; attempt < 4 && !ghost; attempt++) {
    if (attempt > 0 && cfg.pauseCommand) {
      // the command Alt+\ runs, from the palette: in headless Chromium the key did not reach VS Code's keybinding
      log('no ghost text yet: Trigger Inline Suggestion (editor.action.inlineSuggest.trigger)');
      await palette(page, 'Trigger Inline Suggestion');
    } else if (attempt > 0) {
      log('no ghost text yet: editor.action.inlineSuggest.trigger (Alt+\\)');
      await page.keyboard.press('Alt+Backslash');
    }
    try {
      ghost = await until('ghost text', async () => (await ghostText(page)).trim() ? ghostText(page) : '', 20_000);
    } catch { /* next attempt */ }
  }
  if (!ghost) throw new Error('no ghost text appeared');
  await new Promise((r) => setTimeout(r, 300)); // let the ghost text settle (and be drawn whole)
  ghost = await ghostText(page);
  if (!ghost.trim()) throw new Error('the ghost text went away before Tab');
  let cycled;
  if (cfg.cycle) {
    const first = ghost;
    await page.keyboard.press('Alt+BracketRight');
    await until('another suggestion after Alt+]', async () => {
      const now = await ghostText(page);
      return now.trim() && now !== first ? now : '';
    }, 60_000);
    await new Promise((r) => setTimeout(r, 300));
    ghost = await ghostText(page);
    cycled = [first, ghost];
    mark('cycled', JSON.stringify(cycled));
  }
  const typed = await editorText(page);
  mark('ghost', JSON.stringify(ghost));
  if (cfg.screenshot) await page.screenshot({ path: cfg.screenshot });

  // 7. Tab accepts; save; read the editor and the file.
  await page.keyboard.press('Tab');
  await until('the ghost text to be accepted', async () => (await editorText(page)) !== typed, 10_000);
  const after = await editorText(page);
  await page.keyboard.press('Control+S');
  await until('the saved file to change', () => fs.readFileSync(demo, 'utf8') !== original, 10_000);
  const file = fileText();
  mark('accepted', 'Tab, then saved');

  // The status item shows the server's last latency once it has answered a completion (paused: its pause sign).
  const statusText = cfg.pauseCommand ? (await status.first().innerText()).trim()
    : await until('a latency in the dg-lsp status item', async () => {
      const text = (await status.first().innerText()).trim();
      return /\d+ ms/.test(text) ? text : '';
    }, 15_000);
  const userSettings = fs.readFileSync(path.join(dirs.userData, 'User', 'settings.json'), 'utf8');

  const result = { ghost, before, typed, after, file, statusText, timings, cycled, automaticGhost, pausedSign,
    userSettings };
  process.stdout.write(`RESULT ${JSON.stringify(result)}\n`);
}

async function cleanup() {
  try { await context?.close(); } catch { /* already gone */ }
  if (codeServer?.pid) {
    try { process.kill(-codeServer.pid, 'SIGTERM'); } catch { /* already gone */ }
    await new Promise((r) => setTimeout(r, 500));
    try { process.kill(-codeServer.pid, 'SIGKILL'); } catch { /* already gone */ }
  }
}

const timer = setTimeout(() => { log(`FAIL overall timeout ${timeoutMs / 1000}s`); void cleanup().then(() => process.exit(1)); }, timeoutMs);
try {
  await main();
  await cleanup();
  clearTimeout(timer);
  process.exit(0);
} catch (error) {
  process.stdout.write(`FAIL ${error?.stack ?? error}\n`);
  // The extension's output channel says why the server did not start or answer.
  try {
    const logs = path.join(dirs.userData, 'logs');
    for (const session of fs.readdirSync(logs)) {
      const channel = path.join(logs, session, 'exthost1', 'dg-lsp.dg-lsp', 'dg-lsp.log');
      if (fs.existsSync(channel)) process.stdout.write(`--- ${channel} (last 40 lines)\n${fs.readFileSync(channel, 'utf8').split('\n').slice(-40).join('\n')}\n`);
    }
  } catch { /* best effort */ }
  try {
    const page = context?.pages()[0];
    if (page && cfg.failureScreenshot) await page.screenshot({ path: cfg.failureScreenshot });
  } catch { /* best effort */ }
  await cleanup();
  clearTimeout(timer);
  process.exit(1);
}
