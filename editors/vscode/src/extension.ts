/** Entry point: wires the output channel, status bar, client and commands together. */

import * as vscode from 'vscode';
import { DgLspClient } from './client';
import { needsRestart, SECTION } from './settings';
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
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (!event.affectsConfiguration(SECTION)) return;
      if (needsRestart((section) => event.affectsConfiguration(section))) {
        void dg.restart();
      } else {
        dg.notifyConfigurationChanged();
      }
    }),
  );

  await dg.start();
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
