// POST /inference/v1/abort_requests (and the legacy /abort_requests) body.

import { StringListField } from '../../../common/dto/api-field';

export class AbortRequestsDto {
  @StringListField({
    required: true,
    description: 'Ids returned by /inference/v1/generate (generate-tokens-<id>).',
    example: ['generate-tokens-42'],
  })
  request_ids!: string[];
}
