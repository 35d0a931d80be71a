export type { ExtractedToolCalls, FunctionTool, ToolCall, ToolCallDelta, ToolParser, ToolParserContext, ToolParserDelta, ToolParserFactory } from './types';
export { ScanningToolParser, type ScanResult, type ScannedCall } from './scanning-tool-parser';
export { NamedToolCallParser, RequiredToolCallsParser } from './forced-tool-calls';
export { isCompleteJson } from './call-object';
export { TOOL_PARSERS } from './registry';
export { makeToolCallId } from './tool-call-id';
