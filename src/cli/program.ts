// The `ortllm` command line (commander): serve, run-batch, bench serve, models. Flag parsing
// errors and invalid values print a clear message and exit with code 2 (argparse's convention,
// which vLLM users expect). vLLM spellings (--config FILE.yaml, --flag_name, -tp 2) are
// rewritten first (vllm-argv.ts).

import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { ConfigError, ServerConfig } from '../config/server-config';
import { ORTLLM_VERSION } from '../config/version';
import { setUpOutputParsers } from '../serving/parser-plugins';
import { addServeOptions, readServeOptions, serveArgvRules } from './serve-options';
import { normalizeVllmArgv } from './vllm-argv';

export const USAGE_ERROR_EXIT_CODE = 2;

/** A command failed on bad input (missing file, unreachable URL): message printed, exit 1. */
export class CommandError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CommandError';
  }
}

/** Loads the parser plugins, then checks the parser names (plugins register names): a usage error otherwise. */
async function checkParsers(config: ServerConfig): Promise<void> {
  await setUpOutputParsers(config).catch((err: Error) => {
    throw new ConfigError(err.message);
  });
}

export type ServeHandler = (config: ServerConfig, notices: string[]) => Promise<void>;

export interface RunBatchArgs {
  inputFile: string;
  outputFile: string;
  outputTmpDir: string | null;
}

export interface CliHandlers {
  serve: ServeHandler;
  runBatch(config: ServerConfig, notices: string[], args: RunBatchArgs): Promise<void>;
  benchServe(options: Record<string, unknown>): Promise<void>;
  models(dir: string): Promise<void>;
}

const SUBCOMMANDS_WITH_SERVE_FLAGS = new Set(['serve', 'run-batch']);

/** Builds the program; handlers receive validated input. */
export function buildProgram(handlers: Partial<CliHandlers>): Command {
  const program = new Command('ortllm')
    .description("OpenAI-compatible LLM inference server (vLLM's HTTP API) on onnxruntime-node")
    .version(ORTLLM_VERSION)
    .exitOverride()
    .showHelpAfterError('(run with --help for the flags)');

  const serve = program
    .command('serve')
    .description('Serve a model over HTTP')
    .argument('[MODEL]', 'GGUF file or Hugging Face model directory (default: the built-in dummy model)')
    .exitOverride()
    .showHelpAfterError('(run `ortllm serve --help` for the flags)');
  addServeOptions(serve).action(async (modelArg: string | undefined, _opts: unknown, command: Command) => {
    const { config, notices } = readServeOptions(command, modelArg);
    await checkParsers(config);
    if (!handlers.serve) throw new Error('serve is not available');
    await handlers.serve(config, notices);
  });

  const runBatch = program
    .command('run-batch')
    .description('Run an OpenAI batch file (JSONL: custom_id, method, url, body) through the engine offline')
    .requiredOption('-i, --input-file <file>', 'Input JSONL file')
    .requiredOption('-o, --output-file <file>', 'Output JSONL file (written atomically: temp file + rename)')
    .option('--output-tmp-dir <dir>', 'Directory for the temporary output file (default: beside the output file)')
    .exitOverride()
    .showHelpAfterError('(run `ortllm run-batch --help` for the flags)');
  addServeOptions(runBatch).action(async (_opts: unknown, command: Command) => {
    const { config, notices } = readServeOptions(command, undefined);
    await checkParsers(config);
    const opts = command.opts<{ inputFile: string; outputFile: string; outputTmpDir?: string }>();
    if (!handlers.runBatch) throw new Error('run-batch is not available');
    await handlers.runBatch(config, notices, { inputFile: opts.inputFile, outputFile: opts.outputFile, outputTmpDir: opts.outputTmpDir ?? null });
  });

  const bench = program.command('bench').description('Benchmarks (like `vllm bench`)').exitOverride();
  const benchServe = bench
    .command('serve')
    .description("Load-test any OpenAI-compatible server (ortllm, vLLM, llama-server) and print vLLM's report")
    .exitOverride()
    .showHelpAfterError('(run `ortllm bench serve --help` for the flags)');
  for (const option of benchServeOptions()) benchServe.addOption(option);
  benchServe.action(async (opts: Record<string, unknown>) => {
    if (!handlers.benchServe) throw new Error('bench serve is not available');
    await handlers.benchServe(opts);
  });

  program
    .command('models')
    .description('List the models a directory holds that `ortllm serve` can run')
    .argument('[DIR]', 'Directory to scan', '.')
    .exitOverride()
    .action(async (dir: string) => {
      if (!handlers.models) throw new Error('models is not available');
      await handlers.models(dir);
    });
  return program;
}

const num = (text: string): number => {
  const n = Number(text);
  if (!Number.isFinite(n) && text !== 'inf') throw new InvalidArgumentError(`'${text}' is not a number`);
  return text === 'inf' ? Infinity : n;
};
const int = (text: string): number => {
  const n = Number(text);
  if (!Number.isInteger(n)) throw new InvalidArgumentError(`'${text}' is not an integer`);
  return n;
};

/** vLLM's `bench serve` flags that apply to an OpenAI-compatible HTTP server. */
function benchServeOptions(): Option[] {
  return [
    new Option('--backend <backend>', "Request shape: openai (/v1/completions) or openai-chat (/v1/chat/completions)").choices(['openai', 'vllm', 'openai-chat']).default('openai'),
    new Option('--base-url <url>', 'Server base URL (else http://HOST:PORT)'),
    new Option('--host <host>', 'Server host').default('127.0.0.1'),
    new Option('--port <port>', 'Server port').argParser(int).default(8000),
    new Option('--endpoint <path>', 'API path (default by backend: /v1/completions or /v1/chat/completions)'),
    new Option('--model <name>', "Model name in requests (default: the first of the server's /v1/models)"),
    new Option('--api-key <key>', 'Bearer key (default: env OPENAI_API_KEY or VLLM_API_KEY)'),
    new Option('--tokenizer <path>', 'HF directory or GGUF file whose tokenizer builds random prompts (default: --model, as vLLM)'),
    new Option('--dataset-name <name>', 'random (token ids of the given lengths) or custom (JSONL with a "prompt" per line)').choices(['random', 'custom']).default('random'),
    new Option('--dataset-path <file>', 'JSONL file for --dataset-name custom'),
    new Option('--num-prompts <n>', 'Requests to send').argParser(int).default(1000),
    new Option('--input-len <n>', 'Prompt tokens (random dataset)').argParser(int),
    new Option('--output-len <n>', 'max_tokens of every request').argParser(int),
    new Option('--random-input-len <n>', 'Prompt tokens (random dataset)').argParser(int).default(1024),
    new Option('--random-output-len <n>', 'max_tokens (random dataset)').argParser(int).default(128),
    new Option('--random-range-ratio <r>', 'Lengths drawn uniformly within ±ratio of the given ones').argParser(num).default(0),
    new Option('--random-prefix-len <n>', 'Tokens of one prefix shared by all random prompts').argParser(int).default(0),
    new Option('--custom-output-len <n>', 'max_tokens for the custom dataset').argParser(int).default(256),
    new Option('--request-rate <rps>', 'Requests per second (Poisson arrivals), inf = all at once').argParser(num).default(Infinity),
    new Option('--burstiness <b>', 'Gamma shape of the arrival intervals (1 = Poisson)').argParser(num).default(1),
    new Option('--max-concurrency <n>', 'Most requests in flight').argParser(int),
    new Option('--num-warmups <n>', 'Warm-up requests before measuring').argParser(int).default(0),
    new Option('--seed <n>', 'Seed of the dataset and arrival times').argParser(int).default(0),
    new Option('--ignore-eos', 'Send ignore_eos so every request generates its full max_tokens'),
    new Option('--temperature <t>', 'Sampling temperature (default 0: greedy)').argParser(num),
    new Option('--top-p <p>', 'top_p').argParser(num),
    new Option('--top-k <k>', 'top_k').argParser(int),
    new Option('--percentile-metrics <list>', 'Metrics with percentiles: ttft,tpot,itl,e2el').default('ttft,tpot,itl'),
    new Option('--metric-percentiles <list>', 'Percentiles to report, e.g. 50,90,99').default('99'),
    new Option('--disable-tqdm', 'No progress bar'),
    new Option('--label <label>', 'Label of the result (default: the backend)'),
    new Option('--save-result', 'Write the result JSON (to --result-dir/--result-filename)'),
    new Option('--result-dir <dir>', 'Directory of the result JSON'),
    new Option('--result-filename <file>', 'Name of the result JSON'),
    new Option('--result-file <file>', '(ortllm) Path of the result JSON (implies --save-result)'),
  ];
}

function splitCommandArgs(argv: string[]): string[] {
  // argv = [node, script, subcommand, ...rest]
  const subcommand = argv[2];
  if (!SUBCOMMANDS_WITH_SERVE_FLAGS.has(subcommand)) return argv;
  return [...argv.slice(0, 3), ...normalizeVllmArgv(argv.slice(3), serveArgvRules())];
}

/** Runs the CLI; returns the exit code for usage errors, bad input, help and --version. */
export async function runProgram(argv: string[], handlers: Partial<CliHandlers> | ServeHandler): Promise<number> {
  const program = buildProgram(typeof handlers === 'function' ? { serve: handlers } : handlers);
  try {
    await program.parseAsync(splitCommandArgs(argv));
    return 0;
  } catch (err) {
    if (err instanceof CommanderError) {
      // commander already printed the message (or the help text).
      return err.exitCode === 0 ? 0 : USAGE_ERROR_EXIT_CODE;
    }
    if (err instanceof ConfigError) {
      process.stderr.write(`error: ${err.message}\n`);
      return USAGE_ERROR_EXIT_CODE;
    }
    if (err instanceof CommandError) {
      process.stderr.write(`error: ${err.message}\n`);
      return 1;
    }
    throw err;
  }
}
