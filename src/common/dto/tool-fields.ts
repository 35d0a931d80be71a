// OpenAPI schemas of the tool-calling request fields (`tools`, `tool_choice`) and of a tool call
// in a response; the serving layer checks the values (src/serving/tool-choice.ts).

export const TOOL_SCHEMA = {
  type: 'object',
  properties: {
    type: { type: 'string', enum: ['function'], description: 'Always function.' },
    function: {
      type: 'object',
      description: 'The function the model may call.',
      properties: {
        name: { type: 'string', description: 'The name the model calls it by.' },
        description: { type: 'string', description: 'What it does (the template shows it to the model).' },
        parameters: { type: 'object', additionalProperties: true, description: 'JSON Schema of the arguments object.' },
        strict: { type: 'boolean', description: 'Accepted; required and named tool_choice always constrain to the schema.' },
      },
      required: ['name'],
    },
  },
  required: ['function'],
};

/** A Responses API function tool: chat's `function` object flattened into the tool. */
export const RESPONSES_TOOL_SCHEMA = {
  type: 'object',
  properties: {
    type: { type: 'string', enum: ['function'], description: "Always function (built-in tool types are answered with 400)." },
    name: { type: 'string', description: 'The name the model calls it by.' },
    description: { type: 'string', description: 'What it does (the template shows it to the model).' },
    parameters: { type: 'object', additionalProperties: true, description: 'JSON Schema of the arguments object.' },
    strict: { type: 'boolean', description: 'Accepted; required and named tool_choice always constrain to the schema.' },
  },
  required: ['type', 'name'],
};

/** A Responses API tool_choice: a mode, or a named function `{type: "function", name}`. */
export const RESPONSES_TOOL_CHOICE_SCHEMA = {
  oneOf: [
    { type: 'string', enum: ['none', 'auto', 'required'] },
    {
      type: 'object',
      properties: {
        type: { type: 'string', enum: ['function'], description: 'Always function.' },
        name: { type: 'string', description: "One of the tools' names." },
      },
      required: ['type', 'name'],
    },
  ],
};

export const TOOL_CHOICE_SCHEMA = {
  oneOf: [
    { type: 'string', enum: ['none', 'auto', 'required'] },
    {
      type: 'object',
      properties: {
        type: { type: 'string', enum: ['function'], description: 'Always function.' },
        function: {
          type: 'object',
          description: 'The function to call.',
          properties: { name: { type: 'string', description: 'One of the tools\' names.' } },
          required: ['name'],
        },
      },
      required: ['function'],
    },
  ],
};

export const TOOL_CALL_SCHEMA = {
  type: 'object',
  properties: {
    id: { type: 'string', example: 'chatcmpl-tool-9f0c…', description: 'chatcmpl-tool-<uuid hex> (9 alphanumerics with the mistral parser).' },
    type: { type: 'string', enum: ['function'], description: 'Always function.' },
    function: {
      type: 'object',
      description: 'The call.',
      properties: {
        name: { type: 'string', description: 'The function called.' },
        arguments: { type: 'string', description: 'The arguments as a JSON text.' },
      },
      required: ['name', 'arguments'],
    },
  },
  required: ['id', 'type', 'function'],
};

export const TOOL_CALL_DELTA_SCHEMA = {
  type: 'object',
  properties: {
    index: { type: 'integer', description: 'Which call of the message this fragment belongs to.' },
    id: { type: 'string', description: 'First fragment of a call only.' },
    type: { type: 'string', enum: ['function'], description: 'First fragment of a call only.' },
    function: {
      type: 'object',
      description: 'name (first fragment) and/or the next piece of the arguments JSON text.',
      properties: { name: { type: 'string', description: 'The function name.' }, arguments: { type: 'string', description: 'Text to append to the arguments.' } },
    },
  },
  required: ['index', 'function'],
};

export const REASONING_EFFORTS = ['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max'] as const;
