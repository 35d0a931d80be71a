// The streaming form's answer of /v1/completions/derender and /v1/chat/completions/derender
// (documentation for the OpenAPI spec): one OpenAI stream chunk plus the state to send next time.

import { ApiProperty } from '@nestjs/swagger';
import { ChatStreamResponseDto } from '../../chat/dto/chat-response.dto';
import { CompletionStreamResponseDto } from '../../completions/dto/completion-response.dto';
import { DerenderStreamStateDto } from './derender-request.dto';

class DerenderStreamResponseDto {
  @ApiProperty({ type: () => DerenderStreamStateDto, description: 'Send it back as stream_state with the next chunk.' })
  stream_state!: DerenderStreamStateDto;
}

export class DerenderCompletionStreamResponseDto extends DerenderStreamResponseDto {
  @ApiProperty({ type: () => CompletionStreamResponseDto, description: 'The text_completion chunk for this generate chunk.' })
  chunk!: CompletionStreamResponseDto;
}

export class DerenderChatStreamResponseDto extends DerenderStreamResponseDto {
  @ApiProperty({ type: () => ChatStreamResponseDto, description: 'The chat.completion.chunk for this generate chunk.' })
  chunk!: ChatStreamResponseDto;
}
