/** The status bar item: renders `statusView` and opens the status details on click. */

import * as vscode from 'vscode';
import { StatusInput, statusView } from './statusText';

export class StatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem('dgLsp.status', vscode.StatusBarAlignment.Right, 100);
  private input: StatusInput = { lifecycle: 'stopped' };

  constructor(command: string) {
    this.item.name = 'dg-lsp';
    this.item.command = command;
    this.render();
    this.item.show();
  }

  get current(): StatusInput {
    return this.input;
  }

  update(patch: Partial<StatusInput>): void {
    this.input = { ...this.input, ...patch };
    this.render();
  }

  dispose(): void {
    this.item.dispose();
  }

  private render(): void {
    const view = statusView(this.input);
    this.item.text = view.text;
    this.item.tooltip = view.tooltip;
    this.item.backgroundColor =
      view.severity === 'error'
        ? new vscode.ThemeColor('statusBarItem.errorBackground')
        : view.severity === 'warning'
          ? new vscode.ThemeColor('statusBarItem.warningBackground')
          : undefined;
  }
}
