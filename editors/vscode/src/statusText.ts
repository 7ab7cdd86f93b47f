/**
 * What the status bar item says (pure; tested under node).
 *
 * The view combines three sources: the client's lifecycle, the server's `$/progress`
 * while the model loads, and the last `dgLsp.status` answer.
 */

/** The answer of the `dgLsp.status` command. */
export interface ServerStatus {
  state: 'loading' | 'ready' | 'error';
  model: string;
  device: string;
  busy: boolean;
  queue: number;
  lastLatencyMs: number | null;
  error: string | null;
}

export interface ProgressInfo {
  title: string;
  message?: string;
  percentage?: number;
}

export type Lifecycle = 'starting' | 'running' | 'stopped' | 'failed';

export interface StatusInput {
  lifecycle: Lifecycle;
  progress?: ProgressInfo;
  status?: ServerStatus;
  failure?: string;
  /** Automatic suggestions are paused for the active editor's file (`dgLsp.automaticTrigger` false). */
  paused?: boolean;
}

export type Severity = 'normal' | 'warning' | 'error';

export interface StatusView {
  text: string;
  tooltip: string;
  severity: Severity;
}

const NAME = 'dg-lsp';

export function statusView(input: StatusInput): StatusView {
  const { lifecycle, progress, status } = input;
  if (lifecycle === 'failed') {
    return { text: `$(error) ${NAME}`, tooltip: `${NAME} failed: ${input.failure ?? 'unknown error'}`, severity: 'error' };
  }
  if (lifecycle === 'stopped') {
    return { text: `$(circle-slash) ${NAME}`, tooltip: `${NAME} is stopped`, severity: 'warning' };
  }
  if (status?.state === 'error') {
    return { text: `$(error) ${NAME}`, tooltip: `${NAME}: ${status.error ?? 'error'}`, severity: 'error' };
  }
  if (progress) {
    const pct = progress.percentage !== undefined ? ` ${Math.round(progress.percentage)}%` : '';
    const detail = progress.message ? `: ${progress.message}` : '';
    return { text: `$(sync~spin) ${NAME}${pct}`, tooltip: `${progress.title}${detail}`, severity: 'normal' };
  }
  if (lifecycle === 'starting' || !status) {
    return { text: `$(sync~spin) ${NAME}`, tooltip: `${NAME} is starting`, severity: 'normal' };
  }
  if (status.state === 'loading') {
    return { text: `$(sync~spin) ${NAME}`, tooltip: `${NAME} is loading ${status.model}`, severity: 'normal' };
  }
  const latency = formatLatency(status.lastLatencyMs);
  const tooltip = [
    `${NAME}: ${status.busy ? 'busy' : 'ready'}`,
    `model: ${status.model}`,
    `device: ${status.device}`,
    `queue: ${status.queue}`,
    `last completion: ${latency ?? 'none yet'}`,
  ].join('\n');
  if (status.busy) {
    return { text: `$(loading~spin) ${NAME}${status.queue > 0 ? ` (${status.queue})` : ''}`, tooltip, severity: 'normal' };
  }
  if (input.paused) {
    return {
      text: `$(debug-pause) ${NAME}`,
      tooltip: `${tooltip}\nautomatic suggestions paused for this file: Alt+\\ asks (dg-lsp: Resume Automatic Suggestions)`,
      severity: 'normal',
    };
  }
  return { text: `$(check) ${NAME}${latency ? ` ${latency}` : ''}`, tooltip, severity: 'normal' };
}

export function formatLatency(ms: number | null | undefined): string | undefined {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) {
    return undefined;
  }
  return ms >= 1000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms)} ms`;
}

/** Narrow an untyped command result to a status, or undefined when it is not one. */
export function parseStatus(value: unknown): ServerStatus | undefined {
  if (typeof value !== 'object' || value === null) {
    return undefined;
  }
  const v = value as Record<string, unknown>;
  // 'idle': the server has not started loading yet (before `initialized`).
  const state = v.state === 'idle' ? 'loading' : v.state;
  if (state !== 'loading' && state !== 'ready' && state !== 'error') {
    return undefined;
  }
  return {
    state,
    model: typeof v.model === 'string' ? v.model : '?',
    device: typeof v.device === 'string' ? v.device : '?',
    busy: v.busy === true,
    queue: typeof v.queue === 'number' ? v.queue : 0,
    lastLatencyMs: typeof v.lastLatencyMs === 'number' ? v.lastLatencyMs : null,
    error: typeof v.error === 'string' ? v.error : null,
  };
}

/**
 * Why the server did not apply a `dgLsp.fillSelection` (its answer `{applied: false, reason}`; older
 * servers sent the reason as `error`), or undefined when it applied the fill (or answered nothing known).
 */
export function fillRefusal(result: unknown): string | undefined {
  if (typeof result !== 'object' || result === null) return undefined;
  const r = result as { applied?: unknown; reason?: unknown; error?: unknown };
  if (r.applied !== false) return undefined;
  for (const why of [r.reason, r.error]) {
    if (typeof why === 'string' && why.trim()) return why;
  }
  return 'the edit was not applied';
}
