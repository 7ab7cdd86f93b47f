/**
 * Build the command line that starts `dg-lsp serve` (pure; tested under node).
 *
 * Precedence: an explicit `dgLsp.server.command`, else `<pythonPath> -m dg_lsp serve`,
 * else the `dg-lsp` console script on PATH. Load-time settings (model, device, dtype)
 * become flags so the first load already uses them.
 */

import type { LaunchSettings, ServerSettings } from './settings';

export interface ServerCommand {
  command: string;
  args: string[];
}

export const DEFAULT_COMMAND = ['dg-lsp', 'serve'];

export function buildServerCommand(launch: LaunchSettings, server: ServerSettings): ServerCommand {
  let argv: string[];
  if (launch.command.length > 0) {
    argv = [...launch.command];
  } else if (launch.pythonPath !== '') {
    argv = [launch.pythonPath, '-m', 'dg_lsp', 'serve'];
  } else {
    argv = [...DEFAULT_COMMAND];
  }
  argv.push(...loadFlags(server, argv));
  return { command: argv[0], args: argv.slice(1) };
}

/** `--model/--device/--dtype` for the set settings, unless the user's command already has them. */
function loadFlags(server: ServerSettings, argv: string[]): string[] {
  const flags: string[] = [];
  const present = (flag: string) => argv.some((arg) => arg === flag || arg.startsWith(`${flag}=`));
  const add = (flag: string, value: string | undefined, skip?: string) => {
    if (value !== undefined && value !== skip && !present(flag)) {
      flags.push(flag, value);
    }
  };
  add('--model', server.model);
  add('--device', server.device, 'auto');
  add('--dtype', server.dtype, 'auto');
  return flags;
}

/** One line for the output channel, quoting arguments with spaces. */
export function describeCommand({ command, args }: ServerCommand): string {
  return [command, ...args].map((part) => (/[\s"']/.test(part) ? JSON.stringify(part) : part)).join(' ');
}
