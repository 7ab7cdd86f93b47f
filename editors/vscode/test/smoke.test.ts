/**
 * Protocol smoke test against the real server, speaking LSP the way vscode-languageclient does.
 *
 * Runs when DG_LSP_SERVER_CMD holds the server command as a JSON array, e.g.
 * '["../../.venv/bin/python", "-m", "dg_lsp", "serve", "--model", "/tmp/tiny", "--device", "cpu"]'
 * (the pytest in tests/e2e/editors sets it up with a tiny random model). The tiny model never writes a pad,
 * so a pad-fill of its is refused as possibly cut: the session fills with `lengthStrategy: "search"`.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { test } from 'node:test';
import {
  ApplyWorkspaceEditParams,
  createProtocolConnection,
  ExecuteCommandRequest,
  InitializeRequest,
  InlineCompletionRequest,
  InlineCompletionTriggerKind,
  ProtocolConnection,
  StreamMessageReader,
  StreamMessageWriter,
  TextDocumentEdit,
} from 'vscode-languageserver-protocol/node';

const serverCmd = process.env.DG_LSP_SERVER_CMD;
const URI = 'file:///tmp/dg_lsp_smoke/example.py';
const TEXT = 'def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    \n';
const SETTINGS = { maxSteps: 4, lengthStrategy: 'search' };
const LONG_URI = 'file:///tmp/dg_lsp_smoke/long.py';
const LONG_LINES = 60; // far more tokens than the model fills at once
const LONG_TEXT = Array.from({ length: LONG_LINES }, (_, i) => `value_${i} = compute(${i}, "${i}")\n`).join('');

test('real server: initialize, inline completion, fill selection, status', { skip: serverCmd ? false : 'set DG_LSP_SERVER_CMD to run', timeout: 180_000 }, async () => {
  const argv = JSON.parse(serverCmd!) as string[];
  const proc = spawn(argv[0], argv.slice(1), { stdio: ['pipe', 'pipe', 'inherit'] });
  const connection = createProtocolConnection(new StreamMessageReader(proc.stdout!), new StreamMessageWriter(proc.stdin!));
  const edits: ApplyWorkspaceEditParams[] = [];
  const progressTitles: string[] = [];
  connection.onRequest('workspace/configuration', (params: { items: unknown[] }) => params.items.map(() => SETTINGS));
  connection.onRequest('window/workDoneProgress/create', () => null);
  connection.onRequest('client/registerCapability', () => null);
  connection.onRequest('workspace/applyEdit', (params: ApplyWorkspaceEditParams) => {
    edits.push(params);
    return { applied: true };
  });
  connection.onNotification('$/progress', (params: { value: { kind: string; title?: string } }) => {
    if (params.value.kind === 'begin' && params.value.title) progressTitles.push(params.value.title);
  });
  connection.listen();
  try {
    await exercise(connection, edits, progressTitles);
  } finally {
    connection.dispose();
    proc.kill();
  }
});

async function exercise(connection: ProtocolConnection, edits: ApplyWorkspaceEditParams[], progressTitles: string[]) {
  const init = await connection.sendRequest(InitializeRequest.type, {
    processId: process.pid,
    rootUri: null,
    capabilities: {
      workspace: { configuration: true, applyEdit: true },
      window: { workDoneProgress: true },
      general: { positionEncodings: ['utf-16'] },
      textDocument: { inlineCompletion: { dynamicRegistration: false } },
    },
    initializationOptions: { dgLsp: SETTINGS },
  });
  assert.ok(init.capabilities.inlineCompletionProvider, 'inlineCompletionProvider');
  assert.deepEqual([...(init.capabilities.executeCommandProvider?.commands ?? [])].sort(), ['dgLsp.fillSelection', 'dgLsp.status']);
  await connection.sendNotification('initialized', {});
  await connection.sendNotification('textDocument/didOpen', {
    textDocument: { uri: URI, languageId: 'python', version: 1, text: TEXT },
  });

  const status = await waitReady(connection);
  assert.equal(typeof status.model, 'string');
  assert.equal(typeof status.device, 'string');

  const result = await connection.sendRequest(InlineCompletionRequest.type, {
    textDocument: { uri: URI },
    position: { line: 5, character: 4 },
    context: { triggerKind: InlineCompletionTriggerKind.Invoked },
  });
  const items = result === null ? [] : Array.isArray(result) ? result : result.items;
  for (const item of items) {
    assert.equal(typeof item.insertText, 'string');
    if (item.range) assert.equal(item.range.start.line, item.range.end.line, 'item range on one line');
  }

  const range = { start: { line: 1, character: 11 }, end: { line: 1, character: 16 } };
  const fill = (await connection.sendRequest(ExecuteCommandRequest.type, { command: 'dgLsp.fillSelection', arguments: [{ uri: URI, range }] })) as FillAnswer;
  assert.equal(fill.applied, true, `the fill was not applied: ${fill.reason}`);
  assert.equal(edits.length, 1, 'fillSelection sends one workspace/applyEdit');
  assert.equal(edits[0].edit.changes, undefined, 'a versioned edit (documentChanges), not changes');
  const docs = (edits[0].edit.documentChanges ?? []) as TextDocumentEdit[];
  assert.equal(docs.length, 1, 'one document edit');
  assert.deepEqual(docs[0].textDocument, { uri: URI, version: 1 }, 'the edit is for the version the fill was asked on');
  assert.deepEqual(docs[0].edits.map((e) => e.range), [range], 'the edit replaces exactly the selection');
  assert.equal((docs[0].edits[0] as { newText?: string }).newText, fill.text);

  // A selection longer than the model fills at once is refused with the reason, and nothing is edited.
  await connection.sendNotification('textDocument/didOpen', {
    textDocument: { uri: LONG_URI, languageId: 'python', version: 3, text: LONG_TEXT },
  });
  const whole = { start: { line: 0, character: 0 }, end: { line: LONG_LINES, character: 0 } };
  const refused = (await connection.sendRequest(ExecuteCommandRequest.type, { command: 'dgLsp.fillSelection', arguments: [{ uri: LONG_URI, range: whole }] })) as FillAnswer;
  assert.equal(refused.applied, false);
  assert.match(refused.reason ?? '', /^the selection is \d+ tokens, more than the model fills at once/);
  assert.equal(edits.length, 1, 'a refused fill sends no workspace/applyEdit');

  const after = (await connection.sendRequest(ExecuteCommandRequest.type, { command: 'dgLsp.status', arguments: [] })) as Status;
  assert.equal(after.state, 'ready');
  assert.equal(typeof after.lastLatencyMs, 'number');
  assert.ok(progressTitles.every((t) => t.startsWith('dg-lsp')), `progress titles: ${progressTitles.join(', ')}`);

  await connection.sendRequest('shutdown');
  await connection.sendNotification('exit');
}

interface Status { state: string; model: string; device: string; busy: boolean; queue: number; lastLatencyMs: number | null; error: string | null }

async function waitReady(connection: ProtocolConnection): Promise<Status> {
  for (;;) {
    const status = (await connection.sendRequest(ExecuteCommandRequest.type, { command: 'dgLsp.status', arguments: [] })) as Status;
    assert.notEqual(status.state, 'error', `server error: ${status.error}`);
    if (status.state === 'ready') return status;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

interface FillAnswer { applied: boolean; reason?: string; text?: string }
