import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  automaticEnabled, automaticValue, initializationOptions, needsRestart, readSettings, toServerSettings,
} from '../src/settings';

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
    nameCheck: false,
  });
});

test('automatic suggestions: the extension decides per language and never sends the setting', () => {
  assert.equal(automaticEnabled(config({})), true);
  assert.equal(automaticEnabled(config({ automaticTrigger: null })), true);
  assert.equal(automaticEnabled(config({ automaticTrigger: false })), false);
  assert.equal(automaticEnabled(config({ automaticTrigger: true })), true);
  // pause writes false; resume removes the value, or overrides a global false for one language
  assert.equal(automaticValue(true, false, true), false);
  assert.equal(automaticValue(true, true, true), false);
  assert.equal(automaticValue(false, false, false), undefined);
  assert.equal(automaticValue(false, true, true), undefined);
  assert.equal(automaticValue(false, true, false), true);
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
