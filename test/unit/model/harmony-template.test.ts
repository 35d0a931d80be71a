// The harmony chat format of gpt-oss, rendered from chat messages and function tools.
import { createHarmonyChatTemplate, isHarmonyVocabulary } from '../../../src/model/chat-template';
import { createTokenizerFromHfFiles } from '../../../src/model/tokenizer';
import { byteLevelTokenizerJson } from '../../../src/model/tokenizer/builtin-tokenizer';

const harmony = createHarmonyChatTemplate();
const DATE = { conversation_start_date: '2026-12-05' };
const render = (messages: Parameters<typeof harmony.render>[0], opts: Partial<Parameters<typeof harmony.render>[1]> = {}) =>
  harmony.render(messages, { addGenerationPrompt: true, continueFinalMessage: false, ...opts, extraKwargs: { ...DATE, ...(opts.extraKwargs ?? {}) } });

const WEATHER_TOOLS = [
  { type: 'function', function: { name: 'get_location', description: 'Where the user is.' } },
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'Weather at a place.\nCelsius unless asked.',
      parameters: {
        type: 'object',
        properties: {
          city: { type: 'string', description: 'City name, e.g. Paris' },
          unit: { type: 'string', enum: ['celsius', 'fahrenheit'], default: 'celsius' },
          days: { type: 'integer', default: 1 },
          tags: { type: 'array', items: { type: 'string' } },
          note: { type: 'string', nullable: true, default: 'none', examples: ['rain'] },
          when: { description: 'A day or an offset', oneOf: [{ type: 'string', description: 'ISO date' }, { type: 'number', description: 'days ahead', default: 0 }] },
          place: { type: 'object', properties: { lat: { type: 'number' }, lon: { type: 'number' } }, required: ['lat'] },
        },
        required: ['city'],
      },
    },
  },
];

describe('harmony chat format', () => {
  it('renders the system message with effort and the channels, then the conversation', () => {
    expect(render([{ role: 'user', content: 'Hi' }], { extraKwargs: { reasoning_effort: 'high' } })).toBe(
      '<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\nKnowledge cutoff: 2024-06\n'
      + 'Current date: 2026-12-05\n\nReasoning: high\n\n# Valid channels: analysis, final. Channel must be included for every message.<|end|>'
      + '<|start|>user<|message|>Hi<|end|><|start|>assistant');
    expect(render([{ role: 'user', content: 'Hi' }])).toContain('\n\nReasoning: medium\n\n');
    expect(() => render([{ role: 'user', content: 'Hi' }], { extraKwargs: { reasoning_effort: 'max' } })).toThrow(/reasoning_effort 'max'/);
  });

  it('puts system and developer text into the developer instructions, tools as a TypeScript namespace', () => {
    const text = render([{ role: 'system', content: 'Answer in French.' }, { role: 'user', content: 'Weather?' }], { tools: WEATHER_TOOLS });
    expect(text).toContain("# Valid channels: analysis, commentary, final. Channel must be included for every message.\n"
      + "Calls to these tools must go to the commentary channel: 'functions'.<|end|>");
    const developer = text.slice(text.indexOf('<|start|>developer'), text.indexOf('<|start|>user'));
    expect(developer).toBe([
      '<|start|>developer<|message|># Instructions', '', 'Answer in French.', '', '# Tools', '', '## functions', '',
      'namespace functions {', '',
      '// Where the user is.',
      'type get_location = () => any;', '',
      '// Weather at a place.',
      '// Celsius unless asked.',
      'type get_weather = (_: {',
      '// City name, e.g. Paris',
      'city: string,',
      'unit?: "celsius" | "fahrenheit", // default: celsius',
      'days?: number, // default: 1',
      'tags?: string[],',
      '// Examples:',
      '// - "rain"',
      'note?: string | null, // default: "none"',
      '// A day or an offset',
      'when?:',
      ' | string', // the property's own description stands above, so the first variant's is left out
      ' | number // days ahead default: 0',
      ',',
      'place?: {',
      '    lat: number,',
      '    lon?: number,',
      '    },',
      '}) => any;', '',
      '} // namespace functions<|end|>',
    ].join('\n'));
  });

  it('renders calls, tool results and keeps thinking only in the turn in progress', () => {
    const text = render([
      { role: 'user', content: 'Q1' },
      { role: 'assistant', content: 'A1', reasoning: 'old thought' },
      { role: 'user', content: 'Q2' },
      { role: 'assistant', content: null, reasoning_content: 'need weather', tool_calls: [{ id: 'c1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
      { role: 'tool', tool_call_id: 'c1', content: '18C' },
    ], { tools: WEATHER_TOOLS });
    expect(text.slice(text.indexOf('<|start|>user'))).toBe(
      '<|start|>user<|message|>Q1<|end|><|start|>assistant<|channel|>final<|message|>A1<|end|>'
      + '<|start|>user<|message|>Q2<|end|><|start|>assistant<|channel|>analysis<|message|>need weather<|end|>'
      + '<|start|>assistant to=functions.get_weather<|channel|>commentary <|constrain|>json<|message|>{"city":"Paris"}<|call|>'
      + '<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>18C<|end|><|start|>assistant');
  });

  it('refuses what the format cannot carry', () => {
    expect(() => render([{ role: 'narrator', content: 'x' }])).toThrow(/role 'narrator'/);
    expect(() => render([{ role: 'user', content: 'x' }], { continueFinalMessage: true, addGenerationPrompt: false })).toThrow(/continue_final_message/);
  });

  it('is chosen for vocabularies that hold the harmony markers as single tokens', () => {
    const files = (specials: string[]) => createTokenizerFromHfFiles(byteLevelTokenizerJson(specials), {});
    expect(isHarmonyVocabulary(files(['<|start|>', '<|channel|>', '<|message|>', '<|end|>', '<|call|>', '<|return|>']))).toBe(true);
    expect(isHarmonyVocabulary(files(['<|im_start|>', '<|im_end|>']))).toBe(false);
  });
});
