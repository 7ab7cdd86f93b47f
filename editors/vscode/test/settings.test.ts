import assert from 'node:assert/strict';
import { test } from 'node:test';
import { initializationOptions, needsRestart, readSettings, toServerSettings } from '../src/settings';

function config(values: Record<string, unknown>) {
  return { get: <T>(key: string) => values[key] as T | undefined };
}

test('unset and blank settings are left to the server', () => {
  assert.deepEqual(toServerSettings(config({ model: '  ', maxSteps: null, temperature: undefined })), {});
});

test('server settings keep only the server keys, trimmed and typed', () => {
  const settings = toServerSettings(
    config({
      model: ' /models/dg ', device: 'cuda', dtype: 'bfloat16', maxSteps: 8, temperature: 0,
      prefixTokens: 512, suffixTokens: 128, deadlineMs: 250, maxLines: 3, maxSuggestions: 5,
      automaticTrigger: false, nameCheck: false, 'trace.server': 'verbose', 'server.command': ['x'],
    }),
  );
  assert.deepEqual(settings, {
    model: '/models/dg', device: 'cuda', dtype: 'bfloat16', maxSteps: 8, temperature: 0,
    prefixTokens: 512, suffixTokens: 128, deadlineMs: 250, maxLines: 3, maxSuggestions: 5,
    automaticTrigger: false, nameCheck: false,
  });
});

test('non-numeric numbers are dropped', () => {
  assert.deepEqual(toServerSettings(config({ maxSteps: 'eight', deadlineMs: Number.NaN, automaticTrigger: 'yes' })), {});
});

test('launch settings: command parts, python path and env are sanitised', () => {
  const { launch } = readSettings(
    config({ 'server.command': ['dg-lsp', '', 3, 'serve'], 'server.pythonPath': ' /venv/bin/python ', 'server.env': { A: '1' } }),
  );
  assert.deepEqual(launch, { command: ['dg-lsp', 'serve'], pythonPath: '/venv/bin/python', env: { A: '1' } });
  assert.deepEqual(readSettings(config({ 'server.env': { A: 1 } })).launch.env, {});
});

test('initialization options carry the dgLsp section', () => {
  assert.deepEqual(initializationOptions({ maxSteps: 4 }), { dgLsp: { maxSteps: 4 } });
});

test('load-time settings need a restart, runtime ones do not', () => {
  assert.equal(needsRestart((s) => s === 'dgLsp.model'), true);
  assert.equal(needsRestart((s) => s === 'dgLsp.server.pythonPath'), true);
  assert.equal(needsRestart((s) => s === 'dgLsp.temperature'), false);
});
