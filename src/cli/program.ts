// The `ortllm` command line (commander). Flag parsing errors and invalid values print a clear
// message and exit with code 2 (argparse's convention, which vLLM users expect).

import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { ConfigError, resolveServerConfig, ServerConfig } from '../config/server-config';
import { SERVER_FLAGS } from '../config/server-flags';
import { setUpOutputParsers } from '../serving/parser-plugins';
import { ORTLLM_VERSION } from '../config/version';

const USAGE_ERROR_EXIT_CODE = 2;

function toOption(spec: (typeof SERVER_FLAGS)[number]): Option {
  const description = spec.defaultText ? `${spec.description} (default: ${spec.defaultText})` : spec.description;
  const option = new Option(spec.flags, description);
  if (spec.choices) option.choices(spec.choices);
  const parse = spec.parse;
  if (parse) {
    option.argParser((text: string) => {
      try {
        return parse(text);
      } catch (err) {
        throw new InvalidArgumentError((err as Error).message);
      }
    });
  }
  return option;
}

/** Maps commander's parsed options (by attribute name) onto ServerConfig keys. */
function collectConfigInput(command: Command, modelArg: string | undefined): Partial<ServerConfig> {
  const values: Record<string, unknown> = command.opts();
  const input: Partial<Record<keyof ServerConfig, unknown>> = {};
  for (const spec of SERVER_FLAGS) {
    const attribute = new Option(spec.flags).attributeName();
    const value = values[attribute];
    if (value === undefined) continue;
    // The two spellings of one flag (e.g. --log-level / --uvicorn-log-level): the last given wins.
    if (command.getOptionValueSource(attribute) === 'cli' || input[spec.key] === undefined) input[spec.key] = value;
  }
  if (modelArg !== undefined) {
    if (input.model !== undefined && input.model !== modelArg) {
      throw new ConfigError(`MODEL argument '${modelArg}' and --model '${input.model as string}' differ; give one`);
    }
    input.model = modelArg;
  }
  return input as Partial<ServerConfig>;
}

/** Builds the program; `onServe` receives the validated config of `ortllm serve`. */
function buildProgram(onServe: (config: ServerConfig) => Promise<void>): Command {
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
  for (const spec of SERVER_FLAGS) serve.addOption(toOption(spec));
  serve.action(async (modelArg: string | undefined, _opts: unknown, command: Command) => {
    const config = resolveServerConfig(collectConfigInput(command, modelArg));
    // Plugins register parser names, so names are checked once they are loaded.
    await setUpOutputParsers(config).catch((err: Error) => {
      throw new ConfigError(err.message);
    });
    await onServe(config);
  });
  return program;
}

/** Runs the CLI; returns the exit code for usage errors, help and --version. */
export async function runProgram(argv: string[], onServe: (config: ServerConfig) => Promise<void>): Promise<number> {
  const program = buildProgram(onServe);
  try {
    await program.parseAsync(argv);
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
    throw err;
  }
}
