// The JSON Schema that constrained decoding enforces for the tool_choice modes that force calls
// (vLLM's get_json_schema_from_tools): "required" -> an array of one or more {name, parameters}
// objects, one of the tools each; a named function -> that function's parameters object.

import { RequestValidationError } from '../engine/errors';
import { structuredOutputsFromRequest, type StructuredOutputsRequestFields } from './structured-outputs';
import type { RequestTools, ToolChoice } from './tool-choice';
import type { FunctionTool } from './tool-parsers';

type Schema = Record<string, unknown>;

const ANY_OBJECT: Schema = { type: 'object', properties: {} };

/** The tools' `$defs`, hoisted to the root where their `#/$defs/...` references point. */
function mergedDefs(tools: FunctionTool[]): Schema | null {
  const defs: Schema = {};
  for (const tool of tools) {
    const own = tool.parameters?.$defs;
    if (!own || typeof own !== 'object') continue;
    for (const [name, def] of Object.entries(own as Schema)) {
      if (name in defs && JSON.stringify(defs[name]) !== JSON.stringify(def)) {
        throw new RequestValidationError(`Tool definition conflicts: tools define $defs.${name} differently.`, 'tools');
      }
      defs[name] = def;
    }
  }
  return Object.keys(defs).length > 0 ? defs : null;
}

function withoutDefs(schema: Schema | undefined): Schema {
  if (!schema) return ANY_OBJECT;
  const { $defs: _defs, ...rest } = schema;
  return rest;
}

/**
 * Null when the choice does not force calls ("none", "auto"). Without parallel tool calls the
 * array holds one call (vLLM keeps only the first anyway; here the model is not made to write more).
 */
export function toolCallSchema(choice: ToolChoice, tools: FunctionTool[], parallel = true): Schema | null {
  if (choice.kind === 'named') {
    const tool = tools.find((t) => t.name === choice.name);
    return tool?.parameters ?? ANY_OBJECT;
  }
  if (choice.kind !== 'required') return null;
  const schema: Schema = {
    type: 'array',
    minItems: 1,
    ...(parallel ? {} : { maxItems: 1 }),
    items: {
      type: 'object',
      anyOf: tools.map((tool) => ({
        properties: { name: { type: 'string', enum: [tool.name] }, parameters: withoutDefs(tool.parameters) },
        required: ['name', 'parameters'],
      })),
    },
  };
  const defs = mergedDefs(tools);
  if (defs) schema.$defs = defs;
  return schema;
}

/**
 * The request as its sampling parameters see it: a forced tool choice becomes a
 * `structured_outputs.json` constraint (compiled like any other). A request that also asks for
 * its own constraint is refused rather than having one silently win.
 */
export function withToolConstraint<T extends StructuredOutputsRequestFields & { parallel_tool_calls?: boolean | null }>(body: T, tools: RequestTools): T {
  const schema = toolCallSchema(tools.choice, tools.functions, body.parallel_tool_calls ?? true);
  if (schema === null) return body;
  if (structuredOutputsFromRequest(body) !== null) {
    throw new RequestValidationError('You can only either use constraints for structured outputs or tools, not both.', 'tool_choice');
  }
  return { ...body, structured_outputs: { json: schema } };
}

/** Runs `build`; when the constraint came from the tools, its errors name `tools`. */
export function namingToolConstraintErrors<R>(fromTools: boolean, build: () => R): R {
  try {
    return build();
  } catch (err) {
    if (fromTools && err instanceof RequestValidationError && err.param?.startsWith('structured_outputs')) {
      throw new RequestValidationError(err.message, 'tools');
    }
    throw err;
  }
}
