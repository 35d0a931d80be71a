// Runs the `ortllm` command line in-process: the config it would serve with (the server itself is
// not started), its exit code and what it wrote to stderr. `env` is set for the run only.

import { runProgram } from '../../src/cli/program';
import type { ServerConfig } from '../../src/config/server-config';

export interface CliOutcome {
  code: number;
  config: ServerConfig | null;
  notices: string[];
  stderr: string;
}

/** `argv` as typed after the program name, e.g. ['serve', 'model.gguf', '--port', '8001']. */
export async function runCli(argv: string[], env: NodeJS.ProcessEnv = {}): Promise<CliOutcome> {
  let config: ServerConfig | null = null;
  let notices: string[] = [];
  let stderr = '';
  const write = process.stderr.write.bind(process.stderr);
  process.stderr.write = ((chunk: string) => {
    stderr += chunk;
    return true;
  });
  const saved = { ...process.env };
  Object.assign(process.env, env);
  try {
    const code = await runProgram(['node', 'ortllm', ...argv], async (c, n) => {
      config = c;
      notices = n;
    });
    return { code, config, notices, stderr };
  } finally {
    process.stderr.write = write;
    process.env = saved;
  }
}
