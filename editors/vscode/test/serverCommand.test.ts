import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildServerCommand, describeCommand } from '../src/serverCommand';

const launch = { command: [] as string[], pythonPath: '', env: {} };

test('default is the dg-lsp console script', () => {
  assert.deepEqual(buildServerCommand(launch, {}), { command: 'dg-lsp', args: ['serve'] });
});

test('a python interpreter runs the module', () => {
  assert.deepEqual(buildServerCommand({ ...launch, pythonPath: '/venv/bin/python' }, {}), {
    command: '/venv/bin/python',
    args: ['-m', 'dg_lsp', 'serve'],
  });
});

test('an explicit command wins over the python path', () => {
  const cmd = buildServerCommand({ ...launch, command: ['/opt/dg', 'serve', '--tcp', '9000'], pythonPath: '/py' }, {});
  assert.deepEqual(cmd, { command: '/opt/dg', args: ['serve', '--tcp', '9000'] });
});

test('model, device and dtype become flags; auto is omitted', () => {
  const cmd = buildServerCommand(launch, { model: '/m', device: 'auto', dtype: 'bfloat16', maxSteps: 4 });
  assert.deepEqual(cmd.args, ['serve', '--model', '/m', '--dtype', 'bfloat16']);
});

test('flags already in the user command are not repeated', () => {
  const cmd = buildServerCommand({ ...launch, command: ['dg-lsp', 'serve', '--model=/x'] }, { model: '/m', device: 'cpu' });
  assert.deepEqual(cmd.args, ['serve', '--model=/x', '--device', 'cpu']);
});

test('description quotes arguments with spaces', () => {
  assert.equal(describeCommand({ command: 'dg-lsp', args: ['serve', '--model', '/my models/x'] }), 'dg-lsp serve --model "/my models/x"');
});
