/** Entry point: wires the output channel, status bar, client and commands together. */

import * as vscode from 'vscode';
import { DgLspClient } from './client';
import { automaticEnabled, automaticValue, needsRestart, SECTION } from './settings';
import { formatLatency } from './statusText';
import { StatusBar } from './statusBar';

let client: DgLspClient | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const output = vscode.window.createOutputChannel('dg-lsp', { log: true });
  const statusBar = new StatusBar('dg-lsp.showStatus');
  client = new DgLspClient(output, statusBar);
  const dg = client;

  context.subscriptions.push(
    output,
    statusBar,
    dg,
    vscode.commands.registerCommand('dg-lsp.fillSelection', () => dg.fillSelection(vscode.window.activeTextEditor)),
    vscode.commands.registerCommand('dg-lsp.restart', () => dg.restart()),
    vscode.commands.registerCommand('dg-lsp.showOutput', () => output.show(true)),
    vscode.commands.registerCommand('dg-lsp.showStatus', () => showStatus(dg, output)),
    vscode.commands.registerCommand('dg-lsp.toggleAutomatic', () => toggleAutomatic(false, statusBar)),
    vscode.commands.registerCommand('dg-lsp.toggleAutomaticForLanguage', () => toggleAutomatic(true, statusBar)),
    vscode.window.onDidChangeActiveTextEditor(() => showPaused(statusBar)),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (!event.affectsConfiguration(SECTION)) return;
      showPaused(statusBar);
      if (needsRestart((section) => event.affectsConfiguration(section))) {
        void dg.restart();
      } else {
        dg.notifyConfigurationChanged();
      }
    }),
  );

  await dg.start();
  showPaused(statusBar);
}

/** The `dgLsp` section as read for the active editor's file (its language's values first), if there is one. */
function activeConfig(): { config: vscode.WorkspaceConfiguration; languageId?: string } {
  const document = vscode.window.activeTextEditor?.document;
  return document
    ? { config: vscode.workspace.getConfiguration(SECTION, document), languageId: document.languageId }
    : { config: vscode.workspace.getConfiguration(SECTION) };
}

function showPaused(statusBar: StatusBar): void {
  statusBar.update({ paused: !automaticEnabled(activeConfig().config) });
}

/**
 * Pause automatic suggestions where they are on, or resume them where paused: everywhere (the user setting
 * `dgLsp.automaticTrigger`), or (`inLanguage`) in the active editor's language (`"[python]": {...}`). Explicit
 * requests (Alt+\) still ask the server.
 */
async function toggleAutomatic(inLanguage: boolean, statusBar: StatusBar): Promise<void> {
  const { config, languageId } = activeConfig();
  if (inLanguage && !languageId) {
    void vscode.window.showInformationMessage('dg-lsp: open a file first.');
    return;
  }
  const pause = automaticEnabled(inLanguage ? config : vscode.workspace.getConfiguration(SECTION));
  const globalOn = automaticEnabled(vscode.workspace.getConfiguration(SECTION));
  const target = inLanguage
    ? vscode.workspace.getConfiguration(SECTION, { languageId: languageId! })
    : vscode.workspace.getConfiguration(SECTION);
  const value = automaticValue(pause, inLanguage, globalOn);
  await target.update('automaticTrigger', value, vscode.ConfigurationTarget.Global, inLanguage);
  showPaused(statusBar);
  const where = inLanguage ? ` in ${languageId} files` : '';
  void vscode.window.showInformationMessage(pause
    ? `dg-lsp: automatic suggestions paused${where} (Alt+\\ still asks).`
    : `dg-lsp: automatic suggestions resumed${where}.`);
}

export async function deactivate(): Promise<void> {
  await client?.stop();
  client = undefined;
}

async function showStatus(dg: DgLspClient, output: vscode.LogOutputChannel): Promise<void> {
  const status = await dg.status().catch(() => undefined);
  if (!status) {
    const choice = await vscode.window.showWarningMessage('dg-lsp is not running.', 'Restart', 'Show Output');
    if (choice === 'Restart') await dg.restart();
    if (choice === 'Show Output') output.show(true);
    return;
  }
  const latency = formatLatency(status.lastLatencyMs) ?? 'none yet';
  const state = status.state === 'ready' && status.busy ? 'busy' : status.state;
  const detail = status.error ? ` — ${status.error}` : '';
  void vscode.window.showInformationMessage(
    `dg-lsp ${state}: ${status.model} on ${status.device}, queue ${status.queue}, last completion ${latency}${detail}`,
  );
}
