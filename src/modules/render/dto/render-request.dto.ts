// /v1/completions/render and /v1/chat/completions/render take the normal completion / chat
// request, plus the render-only options vLLM accepts.

import { ApiSchema } from '@nestjs/swagger';
import { BoolField } from '../../../common/dto/api-field';
import { ChatRequestDto } from '../../chat/dto/chat-request.dto';
import { CompletionRequestDto } from '../../completions/dto/completion-request.dto';

export class RenderCompletionRequestDto extends CompletionRequestDto {
  @BoolField({ description: 'Add token_offsets ([start, end) characters of each token in the prompt text) to each GenerateRequest.', default: false })
  return_token_offsets?: boolean | null;
}

@ApiSchema({ name: 'RenderChatCompletionRequest' })
export class RenderChatRequestDto extends ChatRequestDto {
  @BoolField({ description: 'Add token_offsets ([start, end) characters of each token in the rendered chat text).', default: false })
  return_token_offsets?: boolean | null;

  @BoolField({
    description:
      'Add assistant_tokens_mask (1 for tokens inside the chat template\'s {% generation %} blocks) when the template has such blocks.',
    default: false,
  })
  return_assistant_tokens_mask?: boolean | null;
}
