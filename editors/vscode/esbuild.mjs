// Bundles the extension (out/extension.js) or, with --tests, the node tests (out/test/).
import { build } from 'esbuild';
import { readdirSync } from 'node:fs';

const tests = process.argv.includes('--tests');
const common = { bundle: true, platform: 'node', format: 'cjs', target: 'node20', sourcemap: true, logLevel: 'warning' };

if (tests) {
  const entryPoints = readdirSync('test').filter((f) => f.endsWith('.test.ts')).map((f) => `test/${f}`);
  await build({ ...common, entryPoints, outdir: 'out/test' });
} else {
  await build({ ...common, entryPoints: ['src/extension.ts'], outfile: 'out/extension.js', external: ['vscode'], minify: true });
}
