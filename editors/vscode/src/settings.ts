/**
 * Map the contributed `dgLsp.*` configuration to what the server and its launcher need.
 *
 * Pure (no `vscode` import) so it runs under node's test runner; callers pass anything
 * with a `get(key)` method, e.g. `vscode.workspace.getConfiguration('dgLsp')`.
 */

export interface ConfigReader {
  get<T>(key: string): T | undefined;
}

/** The `dgLsp` section as the server reads it (initializationOptions, workspace/configuration). */
export interface ServerSettings {
  model?: string;
  device?: string;
  dtype?: string;
  maxSteps?: number;
  temperature?: number;
  prefixTokens?: number;
  suffixTokens?: number;
  deadlineMs?: number;
  maxLines?: number;
  maxSuggestions?: number;
  nameCheck?: boolean;
}

/** How to launch the server process. */
export interface LaunchSettings {
  command: string[];
  pythonPath: string;
  env: Record<string, string>;
}

export interface ExtensionSettings {
  launch: LaunchSettings;
  server: ServerSettings;
}

export const SECTION = 'dgLsp';

const STRING_KEYS = ['model', 'device', 'dtype'] as const;
const NUMBER_KEYS = ['maxSteps', 'temperature', 'prefixTokens', 'suffixTokens', 'deadlineMs', 'maxLines',
  'maxSuggestions'] as const;
// `automaticTrigger` is not sent: the extension applies it itself, per language (`automaticEnabled`), before it
// asks the server, so that a language's own value can turn automatic suggestions on or off there.
const BOOLEAN_KEYS = ['nameCheck'] as const;

/** Settings read when the process starts; changing one of them needs a restart. */
export const RESTART_KEYS = ['server.command', 'server.pythonPath', 'server.env', 'model', 'device', 'dtype'];

/** Server settings with unset values left out, so the server applies its own defaults. */
export function toServerSettings(config: ConfigReader): ServerSettings {
  const out: Record<string, string | number | boolean> = {};
  for (const key of STRING_KEYS) {
    const value = config.get<string>(key);
    if (typeof value === 'string' && value.trim() !== '') {
      out[key] = value.trim();
    }
  }
  for (const key of NUMBER_KEYS) {
    const value = config.get<number>(key);
    if (typeof value === 'number' && Number.isFinite(value)) {
      out[key] = value;
    }
  }
  for (const key of BOOLEAN_KEYS) {
    const value = config.get<boolean>(key);
    if (typeof value === 'boolean') {
      out[key] = value;
    }
  }
  return out as ServerSettings;
}

export function toLaunchSettings(config: ConfigReader): LaunchSettings {
  const command = config.get<unknown>('server.command');
  const env = config.get<unknown>('server.env');
  return {
    command: Array.isArray(command) ? command.filter((part): part is string => typeof part === 'string' && part !== '') : [],
    pythonPath: (config.get<string>('server.pythonPath') ?? '').trim(),
    env: isStringRecord(env) ? env : {},
  };
}

/** Whether to ask the server while typing, given the `dgLsp` section read for a document (its language's value
 * first): anything but `false` is on. */
export function automaticEnabled(config: ConfigReader): boolean {
  return config.get<boolean | null>('automaticTrigger') !== false;
}

/**
 * The value to write to pause (`pause` true) or resume automatic suggestions: everywhere (`globalOn`: the value
 * read without a language), or in one language (`inLanguage`) where the global value is `globalOn`. Resuming writes
 * `undefined` (the setting removed) where that leaves them on, and `true` only to override a global `false`.
 */
export function automaticValue(pause: boolean, inLanguage: boolean, globalOn: boolean): boolean | undefined {
  if (pause) return false;
  return inLanguage && !globalOn ? true : undefined;
}

/** initializationOptions carry the same `dgLsp` settings the server later pulls. */
export function initializationOptions(server: ServerSettings): Record<string, unknown> {
  return { [SECTION]: server };
}

export function readSettings(config: ConfigReader): ExtensionSettings {
  return { launch: toLaunchSettings(config), server: toServerSettings(config) };
}

/** Whether a configuration change (given `affects(section)`) needs the server restarted. */
export function needsRestart(affects: (section: string) => boolean): boolean {
  return RESTART_KEYS.some((key) => affects(`${SECTION}.${key}`));
}

function isStringRecord(value: unknown): value is Record<string, string> {
  return (
    typeof value === 'object' &&
    value !== null &&
    !Array.isArray(value) &&
    Object.values(value).every((v) => typeof v === 'string')
  );
}
