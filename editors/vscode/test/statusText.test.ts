import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fillRefusal, formatLatency, parseStatus, ServerStatus, statusView } from '../src/statusText';

const ready: ServerStatus = {
  state: 'ready', model: 'default', device: 'cuda', busy: false, queue: 0, lastLatencyMs: 84.4, error: null,
};

test('ready shows a check and the last latency', () => {
  const view = statusView({ lifecycle: 'running', status: ready });
  assert.equal(view.text, '$(check) dg-lsp 84 ms');
  assert.match(view.tooltip, /model: default/);
  assert.equal(view.severity, 'normal');
});

test('busy shows a spinner and the queue', () => {
  assert.equal(statusView({ lifecycle: 'running', status: { ...ready, busy: true, queue: 2 } }).text, '$(loading~spin) dg-lsp (2)');
});

test('progress shows its percentage and message', () => {
  const view = statusView({ lifecycle: 'running', progress: { title: 'dg-lsp: loading model', message: 'warm-up', percentage: 41.6 } });
  assert.equal(view.text, '$(sync~spin) dg-lsp 42%');
  assert.equal(view.tooltip, 'dg-lsp: loading model: warm-up');
});

test('server error and start failure are errors', () => {
  assert.equal(statusView({ lifecycle: 'running', status: { ...ready, state: 'error', error: 'out of memory' } }).tooltip, 'dg-lsp: out of memory');
  const failed = statusView({ lifecycle: 'failed', failure: 'spawn dg-lsp ENOENT' });
  assert.equal(failed.severity, 'error');
  assert.match(failed.tooltip, /ENOENT/);
});

test('paused automatic suggestions show a pause sign when ready, and busy still shows the spinner', () => {
  const view = statusView({ lifecycle: 'running', status: ready, paused: true });
  assert.equal(view.text, '$(debug-pause) dg-lsp');
  assert.match(view.tooltip, /automatic suggestions paused for this file/);
  assert.equal(statusView({ lifecycle: 'running', status: { ...ready, busy: true }, paused: true }).text, '$(loading~spin) dg-lsp');
});

test('starting, loading and stopped', () => {
  assert.equal(statusView({ lifecycle: 'starting' }).tooltip, 'dg-lsp is starting');
  assert.match(statusView({ lifecycle: 'running', status: { ...ready, state: 'loading' } }).tooltip, /loading default/);
  assert.equal(statusView({ lifecycle: 'stopped' }).severity, 'warning');
});

test('latency formatting', () => {
  assert.equal(formatLatency(null), undefined);
  assert.equal(formatLatency(999.6), '1000 ms');
  assert.equal(formatLatency(1530), '1.5 s');
});

test('parseStatus narrows command results', () => {
  assert.equal(parseStatus(null), undefined);
  assert.equal(parseStatus({ state: 'weird' }), undefined);
  assert.equal(parseStatus({ state: 'idle', model: null })?.state, 'loading');
  assert.deepEqual(parseStatus({ state: 'ready', busy: 1, queue: 'x' }), {
    state: 'ready', model: '?', device: '?', busy: false, queue: 0, lastLatencyMs: null, error: null,
  });
});

test('a refused fill gives the server reason; an applied one none', () => {
  assert.equal(fillRefusal({ applied: true, text: 'x' }), undefined);
  assert.equal(fillRefusal(null), undefined);
  assert.equal(fillRefusal({ applied: false, reason: 'no fill', error: 'no fill' }), 'no fill');
  assert.equal(fillRefusal({ applied: false, error: 'stale' }), 'stale');
  assert.equal(fillRefusal({ applied: false }), 'the edit was not applied');
});
