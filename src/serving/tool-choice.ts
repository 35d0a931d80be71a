// `tools` and `tool_choice` of a chat request, checked as vLLM checks them (with `param` naming
// the field), and resolved into what the request asks for: no tool calls, calls the model writes
// freely and a parser extracts ("auto"), or calls forced by constrained decoding ("required", a
// named function: see tool-call-schema.ts).

import Ajv from 'ajv';
import { RequestValidationError } from '../engine/errors';
import type { FunctionTool } from './tool-parsers';

export type ToolChoice =
  | { kind: 'none' }
  | { kind: 'auto' }
  | { kind: 'required' }
  | { kind: 'named'; name: string };

export interface RequestTools {
  /** The request's function tools; empty when it sent none. */
  functions: FunctionTool[];
  /** What the chat template gets as `tools`: the tool definitions, or null. */
  templateTools: unknown[] | null;
  choice: ToolChoice;
}

export interface ToolsRequestFields {
  tools?: unknown;
  tool_choice?: unknown;
}

/** The tool flags (absent: off). */
export interface ToolServingOptions {
  enableAutoToolChoice?: boolean;
  /** Null (or absent) when no --tool-call-parser was given. */
  toolCallParser?: string | null;
  excludeToolsWhenToolChoiceNone?: boolean;
}

const NAMED_USAGE = 'Correct usage: `{"type": "function", "function": {"name": "my_function"}}`';

let schemaChecker: Ajv | null = null;

/** Null when `schema` is a valid JSON Schema, else what is wrong with it. */
function schemaProblem(schema: unknown): string | null {
  schemaChecker ??= new Ajv({ strict: false });
  try {
    if (schemaChecker.validateSchema(schema as object)) return null;
  } catch {
    // A meta-schema Ajv does not carry ($schema of another draft): nothing to hold against it.
    return null;
  }
  return schemaChecker.errorsText(schemaChecker.errors, { dataVar: 'parameters' });
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function checkTool(tool: unknown, i: number): FunctionTool {
  const param = `tools.${i}`;
  if (!isObject(tool)) throw new RequestValidationError(`tools[${i}] must be an object.`, param);
  if (tool.type !== undefined && tool.type !== 'function') {
    throw new RequestValidationError(`tools[${i}].type must be 'function'.`, `${param}.type`);
  }
  const fn = tool.function;
  if (!isObject(fn)) throw new RequestValidationError(`tools[${i}].function must be an object.`, `${param}.function`);
  if (typeof fn.name !== 'string' || fn.name === '') {
    throw new RequestValidationError(`tools[${i}].function.name must be a non-empty string.`, `${param}.function.name`);
  }
  if (fn.description != null && typeof fn.description !== 'string') {
    throw new RequestValidationError(`tools[${i}].function.description must be a string.`, `${param}.function.description`);
  }
  if (fn.strict != null && typeof fn.strict !== 'boolean') {
    throw new RequestValidationError(`tools[${i}].function.strict must be a boolean.`, `${param}.function.strict`);
  }
  if (fn.parameters != null) {
    if (!isObject(fn.parameters)) {
      throw new RequestValidationError(`tools[${i}].function.parameters must be a JSON Schema object.`, `${param}.function.parameters`);
    }
    const problem = schemaProblem(fn.parameters);
    if (problem) {
      throw new RequestValidationError(`tools[${i}].function.parameters is not a valid JSON Schema: ${problem}`, `${param}.function.parameters`);
    }
  }
  return {
    name: fn.name,
    ...(typeof fn.description === 'string' ? { description: fn.description } : {}),
    ...(isObject(fn.parameters) ? { parameters: fn.parameters } : {}),
    ...(typeof fn.strict === 'boolean' ? { strict: fn.strict } : {}),
  };
}

/** Checks `tools`; an absent list is empty. */
export function checkTools(tools: unknown): FunctionTool[] {
  if (tools === undefined || tools === null) return [];
  if (!Array.isArray(tools)) throw new RequestValidationError('tools must be a list of tool definitions.', 'tools');
  if (tools.length === 0) {
    throw new RequestValidationError(
      '`tools` must not be an empty array. Either provide at least one tool or omit the field entirely.',
      'tools',
    );
  }
  return tools.map(checkTool);
}

function checkChoice(value: unknown, functions: FunctionTool[]): ToolChoice {
  // Absent: "auto" when tools are given, else "none" (vLLM's defaults).
  if (value === undefined || value === null) return { kind: functions.length > 0 ? 'auto' : 'none' };
  if (value === 'none') return { kind: 'none' };
  if (functions.length === 0) throw new RequestValidationError('When using `tool_choice`, `tools` must be set.', 'tool_choice');
  if (value === 'auto' || value === 'required') return { kind: value };
  if (!isObject(value)) {
    throw new RequestValidationError(
      `Invalid value for \`tool_choice\`: ${JSON.stringify(value)}! Only named tools, "none", "auto" or "required" are supported.`,
      'tool_choice',
    );
  }
  const fn = value.function;
  if (!isObject(fn)) {
    throw new RequestValidationError(`Invalid value for \`function\`: \`${JSON.stringify(fn)}\` in \`tool_choice\`! ${NAMED_USAGE}`, 'tool_choice.function');
  }
  if (!('name' in fn)) throw new RequestValidationError(`Expected field \`name\` in \`function\` in \`tool_choice\`! ${NAMED_USAGE}`, 'tool_choice.function.name');
  if (typeof fn.name !== 'string' || fn.name === '') {
    throw new RequestValidationError(`Invalid \`name\` in \`function\`: \`${String(fn.name)}\` in \`tool_choice\`! ${NAMED_USAGE}`, 'tool_choice.function.name');
  }
  if (value.type !== undefined && value.type !== 'function') {
    throw new RequestValidationError(`tool_choice.type must be 'function'. ${NAMED_USAGE}`, 'tool_choice.type');
  }
  if (!functions.some((f) => f.name === fn.name)) {
    throw new RequestValidationError('The tool specified in `tool_choice` does not match any of the specified `tools`', 'tool_choice');
  }
  return { kind: 'named', name: fn.name };
}

/** Checks the request's tools and tool_choice and says what the request asks for. */
export function resolveRequestTools(body: ToolsRequestFields, opts: ToolServingOptions): RequestTools {
  const functions = checkTools(body.tools);
  const choice = checkChoice(body.tool_choice, functions);
  if (choice.kind === 'auto' && (!opts.enableAutoToolChoice || opts.toolCallParser == null)) {
    throw new RequestValidationError('"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set', 'tool_choice');
  }
  const excluded = choice.kind === 'none' && !!opts.excludeToolsWhenToolChoiceNone;
  const templateTools = functions.length > 0 && !excluded ? (body.tools as unknown[]).map(templateTool) : null;
  return { functions, templateTools, choice };
}

/** A tool as the template sees it: `{type: "function", function: {...}}`, as the client sent it. */
function templateTool(tool: unknown): unknown {
  const t = tool as Record<string, unknown>;
  return { ...t, type: 'function' };
}
