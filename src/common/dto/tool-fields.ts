// OpenAPI schemas of the tool-calling request fields (`tools`, `tool_choice`) and of a tool call
// in a response; the serving layer checks the values (src/serving/tool-choice.ts).

export const TOOL_SCHEMA = {
  type: 'object',
  properties: {
    type: { type: 'string', enum: ['function'] },
    function: {
      type: 'object',
      properties: {
        name: { type: 'string' },
        description: { type: 'string' },
        parameters: { type: 'object', additionalProperties: true, description: 'JSON Schema of the arguments object.' },
        strict: { type: 'boolean' },
      },
      required: ['name'],
    },
  },
  required: ['function'],
};

export const TOOL_CHOICE_SCHEMA = {
  oneOf: [
    { type: 'string', enum: ['none', 'auto', 'required'] },
    {
      type: 'object',
      properties: {
        type: { type: 'string', enum: ['function'] },
        function: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
      },
      required: ['function'],
    },
  ],
};

export const TOOL_CALL_SCHEMA = {
  type: 'object',
  properties: {
    id: { type: 'string', example: 'chatcmpl-tool-9f0c…' },
    type: { type: 'string', enum: ['function'] },
    function: {
      type: 'object',
      properties: { name: { type: 'string' }, arguments: { type: 'string', description: 'The arguments as a JSON text.' } },
      required: ['name', 'arguments'],
    },
  },
  required: ['id', 'type', 'function'],
};

export const REASONING_EFFORTS = ['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max'] as const;
