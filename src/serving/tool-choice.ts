// `tools` and `tool_choice` of a chat or Responses API request, checked as vLLM checks them (with
// `param` naming the field), and resolved into what the request asks for: no tool calls, calls the
// model writes freely and a parser extracts ("auto"), or calls forced by constrained decoding
// ("required", a named function: see tool-call-schema.ts). The two APIs differ only in spelling
// (chat nests the function in `function`, the Responses API flattens it): a ToolSpelling says which.

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
  /** Most tools `tool_choice: "required"` may turn into one grammar (--structured-outputs-limits max_tools); absent: no limit. */
  maxTools?: number;
}

/** How an API spells a function tool and a named tool_choice. */
export interface ToolSpelling {
  /** The key of a tools entry (and of a named tool_choice) holding the function; null when the entry itself is the function. */
  functionKey: 'function' | null;
  /** What a correct named tool_choice looks like (error messages). */
  namedUsage: string;
}

/** Chat completions: `{type: "function", function: {name, parameters, ...}}`, named `{type: "function", function: {name}}`. */
export const CHAT_TOOLS: ToolSpelling = {
  functionKey: 'function',
  namedUsage: 'Correct usage: `{"type": "function", "function": {"name": "my_function"}}`',
};

/** The Responses API: `{type: "function", name, parameters, ...}`, named `{type: "function", name}`. */
export const RESPONSES_TOOLS: ToolSpelling = {
  functionKey: null,
  namedUsage: 'Correct usage: `{"type": "function", "name": "my_function"}`',
};

/** The part of a tools entry or a named tool_choice that holds the function, and how errors name it. */
function functionPart(entry: Record<string, unknown>, where: string, param: string, spelling: ToolSpelling) {
  const key = spelling.functionKey;
  return key === null ? { fn: entry, where, param } : { fn: entry[key], where: `${where}.${key}`, param: `${param}.${key}` };
}

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

function checkTool(tool: unknown, i: number, spelling: ToolSpelling): FunctionTool {
  const param = `tools.${i}`;
  if (!isObject(tool)) throw new RequestValidationError(`tools[${i}] must be an object.`, param);
  if (tool.type !== undefined && tool.type !== 'function') {
    throw new RequestValidationError(`tools[${i}].type must be 'function'.`, `${param}.type`);
  }
  const { fn, where, param: fnParam } = functionPart(tool, `tools[${i}]`, param, spelling);
  if (!isObject(fn)) throw new RequestValidationError(`${where} must be an object.`, fnParam);
  if (typeof fn.name !== 'string' || fn.name === '') {
    throw new RequestValidationError(`${where}.name must be a non-empty string.`, `${fnParam}.name`);
  }
  if (fn.description != null && typeof fn.description !== 'string') {
    throw new RequestValidationError(`${where}.description must be a string.`, `${fnParam}.description`);
  }
  if (fn.strict != null && typeof fn.strict !== 'boolean') {
    throw new RequestValidationError(`${where}.strict must be a boolean.`, `${fnParam}.strict`);
  }
  if (fn.parameters != null) {
    if (!isObject(fn.parameters)) {
      throw new RequestValidationError(`${where}.parameters must be a JSON Schema object.`, `${fnParam}.parameters`);
    }
    const problem = schemaProblem(fn.parameters);
    if (problem) {
      throw new RequestValidationError(`${where}.parameters is not a valid JSON Schema: ${problem}`, `${fnParam}.parameters`);
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
export function checkTools(tools: unknown, spelling: ToolSpelling = CHAT_TOOLS): FunctionTool[] {
  if (tools === undefined || tools === null) return [];
  if (!Array.isArray(tools)) throw new RequestValidationError('tools must be a list of tool definitions.', 'tools');
  if (tools.length === 0) {
    throw new RequestValidationError(
      '`tools` must not be an empty array. Either provide at least one tool or omit the field entirely.',
      'tools',
    );
  }
  return tools.map((tool, i) => checkTool(tool, i, spelling));
}

function checkChoice(value: unknown, functions: FunctionTool[], spelling: ToolSpelling): ToolChoice {
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
  // Hosted-tool, allowed_tools or custom choices name their type: only functions exist here.
  if (value.type !== undefined && value.type !== 'function') {
    throw new RequestValidationError(`tool_choice type ${JSON.stringify(value.type)} is not supported: only named functions are. ${spelling.namedUsage}`, 'tool_choice.type');
  }
  const { fn, param } = functionPart(value, 'tool_choice', 'tool_choice', spelling);
  if (!isObject(fn)) {
    throw new RequestValidationError(`Invalid value for \`function\`: \`${JSON.stringify(fn)}\` in \`tool_choice\`! ${spelling.namedUsage}`, param);
  }
  const inFunction = spelling.functionKey === null ? '' : ` in \`${spelling.functionKey}\``;
  if (!('name' in fn)) throw new RequestValidationError(`Expected field \`name\`${inFunction} in \`tool_choice\`! ${spelling.namedUsage}`, `${param}.name`);
  if (typeof fn.name !== 'string' || fn.name === '') {
    throw new RequestValidationError(`Invalid \`name\`${inFunction}: \`${String(fn.name)}\` in \`tool_choice\`! ${spelling.namedUsage}`, `${param}.name`);
  }
  if (!functions.some((f) => f.name === fn.name)) {
    throw new RequestValidationError('The tool specified in `tool_choice` does not match any of the specified `tools`', 'tool_choice');
  }
  return { kind: 'named', name: fn.name };
}

/** Checks the request's tools and tool_choice (spelled as `spelling` says) and says what the request asks for. */
export function resolveRequestTools(body: ToolsRequestFields, opts: ToolServingOptions, spelling: ToolSpelling = CHAT_TOOLS): RequestTools {
  const functions = checkTools(body.tools, spelling);
  const choice = checkChoice(body.tool_choice, functions, spelling);
  if (choice.kind === 'auto' && (!opts.enableAutoToolChoice || opts.toolCallParser == null)) {
    throw new RequestValidationError('"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set', 'tool_choice');
  }
  if (choice.kind === 'required' && opts.maxTools !== undefined && functions.length > opts.maxTools) {
    throw new RequestValidationError(
      `tool_choice "required" compiles a grammar from every tool: ${functions.length} tools is over this server's limit of ${opts.maxTools} (--structured-outputs-limits max_tools).`,
      'tools',
    );
  }
  const excluded = choice.kind === 'none' && !!opts.excludeToolsWhenToolChoiceNone;
  const templateTools = functions.length > 0 && !excluded ? (body.tools as unknown[]).map((tool) => templateTool(tool, spelling)) : null;
  return { functions, templateTools, choice };
}

/**
 * A tool as the template sees it: chat's `{type: "function", function: {...}}`, as the client sent
 * it (a Responses API tool is nested into that shape, as vLLM does before rendering).
 */
function templateTool(tool: unknown, spelling: ToolSpelling): unknown {
  const t = tool as Record<string, unknown>;
  if (spelling.functionKey !== null) return { ...t, type: 'function' };
  const { type: _type, ...fn } = t;
  return { type: 'function', function: fn };
}
