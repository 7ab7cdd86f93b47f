/**
 * Owns the language client: start, stop, restart, and the two server commands.
 *
 * Inline completions come from vscode-languageclient's own inline completion feature;
 * this module only adds settings plumbing, progress tracking and status polling.
 */

import * as vscode from 'vscode';
import {
  DidChangeConfigurationNotification,
  ExecuteCommandRequest,
  LanguageClient,
  LanguageClientOptions,
  ServerOptions,
  State,
  WorkDoneProgress,
  WorkDoneProgressCreateRequest,
} from 'vscode-languageclient/node';
import { buildServerCommand, describeCommand } from './serverCommand';
import { automaticEnabled, initializationOptions, readSettings, SECTION, toServerSettings } from './settings';
import { fillRefusal, parseStatus, ServerStatus } from './statusText';
import { StatusBar } from './statusBar';

export const LANGUAGES = [
  'python', 'javascript', 'javascriptreact', 'typescript', 'typescriptreact',
  'go', 'rust', 'java', 'c', 'cpp', 'csharp', 'php', 'ruby', 'lua', 'shellscript',
];

const POLL_ACTIVE_MS = 1000;
const POLL_IDLE_MS = 10000;

export class DgLspClient implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private pollTimer: NodeJS.Timeout | undefined;
  private subscriptions: vscode.Disposable[] = [];

  constructor(private readonly output: vscode.LogOutputChannel, private readonly statusBar: StatusBar) {}

  async start(): Promise<void> {
    const settings = readSettings(vscode.workspace.getConfiguration(SECTION));
    const server = buildServerCommand(settings.launch, settings.server);
    this.output.info(`Starting ${describeCommand(server)}`);
    const serverOptions: ServerOptions = {
      command: server.command,
      args: server.args,
      // stdio, with no `transport` key: `TransportKind.stdio` would append `--stdio` to the
      // command line, which `dg-lsp serve` rejects (found by the code-server test).
      options: { env: { ...process.env, ...settings.launch.env } },
    };
    const client = new LanguageClient('dgLsp', 'dg-lsp', serverOptions, this.clientOptions(settings.server));
    this.client = client;
    this.statusBar.update({ lifecycle: 'starting', status: undefined, progress: undefined });
    try {
      await client.start();
    } catch (error) {
      this.client = undefined;
      const message = error instanceof Error ? error.message : String(error);
      this.statusBar.update({ lifecycle: 'failed', failure: message });
      this.output.error(`Could not start the server: ${message}`);
      void vscode.window.showErrorMessage(`dg-lsp could not start: ${message}`, 'Open Settings').then((choice) => {
        if (choice) void vscode.commands.executeCommand('workbench.action.openSettings', SECTION);
      });
      return;
    }
    this.subscriptions.push(
      this.trackProgress(client),
      // The client restarts a crashed server by itself; follow it so polling resumes.
      client.onDidChangeState(({ newState }) => {
        if (newState === State.Running) {
          this.statusBar.update({ lifecycle: 'running', status: undefined });
          this.schedulePoll(0);
        } else if (newState === State.Stopped && this.client === client) {
          this.statusBar.update({ lifecycle: 'stopped', progress: undefined });
        }
      }),
    );
    this.statusBar.update({ lifecycle: 'running' });
    this.schedulePoll(0);
  }

  async stop(): Promise<void> {
    clearTimeout(this.pollTimer);
    this.subscriptions.forEach((d) => d.dispose());
    this.subscriptions = [];
    const client = this.client;
    this.client = undefined;
    if (client?.isRunning()) {
      try {
        await client.stop();
      } catch (error) {
        this.output.warn(`Stopping the server failed: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
    this.statusBar.update({ lifecycle: 'stopped', progress: undefined });
  }

  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  /** Push changed runtime settings; the server pulls `dgLsp` again or reads them here. */
  notifyConfigurationChanged(): void {
    const settings = toServerSettings(vscode.workspace.getConfiguration(SECTION));
    void this.client?.sendNotification(DidChangeConfigurationNotification.type, { settings: { [SECTION]: settings } });
  }

  async fillSelection(editor: vscode.TextEditor | undefined): Promise<void> {
    const client = this.client;
    if (!editor || editor.selection.isEmpty) {
      void vscode.window.showInformationMessage('dg-lsp: select the text to fill first.');
      return;
    }
    if (!client?.isRunning()) {
      void vscode.window.showWarningMessage('dg-lsp: the server is not running.');
      return;
    }
    const c2p = client.code2ProtocolConverter;
    const target = { uri: c2p.asUri(editor.document.uri), range: c2p.asRange(editor.selection) };
    // The server answers by sending workspace/applyEdit, which the client applies; or it refuses (an empty
    // fill, a selection longer than the model fills at once, a document changed meanwhile) and says why.
    const result = await client.sendRequest(ExecuteCommandRequest.type, { command: 'dgLsp.fillSelection', arguments: [target] });
    const why = fillRefusal(result);
    if (why) void vscode.window.showWarningMessage(`dg-lsp: nothing filled: ${why}`);
    this.schedulePoll(0);
  }

  async status(): Promise<ServerStatus | undefined> {
    if (!this.client?.isRunning()) {
      return undefined;
    }
    const result = await this.client.sendRequest(ExecuteCommandRequest.type, { command: 'dgLsp.status', arguments: [] });
    return parseStatus(result);
  }

  dispose(): void {
    void this.stop();
  }

  private clientOptions(server: ReturnType<typeof toServerSettings>): LanguageClientOptions {
    return {
      // Notebook cells too: the server syncs whole notebooks (notebookDocument/*) and reads a cell inside its notebook.
      documentSelector: LANGUAGES.flatMap((language) => [
        { scheme: 'file', language },
        { scheme: 'untitled', language },
        { scheme: 'vscode-notebook-cell', language },
      ]),
      initializationOptions: initializationOptions(server),
      outputChannel: this.output,
      middleware: {
        provideInlineCompletionItems: async (document, position, context, token, next) => {
          // automatic suggestions paused for the document's language (or everywhere): the server is not asked
          if (context.triggerKind === vscode.InlineCompletionTriggerKind.Automatic
            && !automaticEnabled(vscode.workspace.getConfiguration(SECTION, document))) {
            return null;
          }
          this.schedulePoll(POLL_ACTIVE_MS);
          return next(document, position, context, token);
        },
        workspace: {
          // Answer `dgLsp` with the server's keys only (not the launcher's `server.*`, `trace`).
          configuration: async (params, token, next) => {
            const result = await next(params, token);
            if (!Array.isArray(result)) return result;
            return params.items.map((item, i) =>
              item.section === SECTION
                ? toServerSettings(vscode.workspace.getConfiguration(SECTION, item.scopeUri ? vscode.Uri.parse(item.scopeUri) : undefined))
                : result[i],
            );
          },
        },
      },
    };
  }

  /** Show the server's work-done progress (model load, warm-up) in the status bar. */
  private trackProgress(client: LanguageClient): vscode.Disposable {
    return client.onRequest(WorkDoneProgressCreateRequest.type, ({ token }) => {
      const subscription = client.onProgress(WorkDoneProgress.type, token, (value) => {
        if (value.kind === 'begin') {
          this.statusBar.update({ progress: { title: value.title, message: value.message, percentage: value.percentage } });
        } else if (value.kind === 'report') {
          const previous = this.statusBar.current.progress;
          this.statusBar.update({ progress: { title: previous?.title ?? 'dg-lsp', message: value.message, percentage: value.percentage } });
        } else {
          this.statusBar.update({ progress: undefined });
          subscription.dispose();
          this.schedulePoll(0);
        }
      });
    });
  }

  private schedulePoll(delayMs: number): void {
    clearTimeout(this.pollTimer);
    this.pollTimer = setTimeout(() => void this.poll(), delayMs);
  }

  private async poll(): Promise<void> {
    let status: ServerStatus | undefined;
    try {
      status = await this.status();
    } catch (error) {
      this.output.warn(`dgLsp.status failed: ${error instanceof Error ? error.message : String(error)}`);
    }
    if (!this.client?.isRunning()) {
      return;
    }
    this.statusBar.update({ status });
    const active = !status || status.state === 'loading' || status.busy;
    this.schedulePoll(active ? POLL_ACTIVE_MS : POLL_IDLE_MS);
  }
}
