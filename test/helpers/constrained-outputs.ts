// Constraints the speculative-decoding tests share: outputs stories260K finishes within a few
// dozen tokens, and a text spelling parts of them, for prompt lookup to find drafts in.

export const KID_SCHEMA = {
  type: 'object',
  properties: {
    name: { type: 'string', maxLength: 8 },
    age: { type: 'integer', minimum: 0, maximum: 99 },
    friends: { type: 'array', items: { enum: ['Tom', 'Lily', 'the dog'] }, maxItems: 3 },
  },
  required: ['name', 'age', 'friends'],
  additionalProperties: false,
};

/** A regex whose matches the story model writes readily. */
export const KID_REGEX = '(Lily|Tom)( (and|with) (Lily|Tom|the dog)){1,4}\\.';

/** Text with a sentence of KID_REGEX and an object of KID_SCHEMA. */
export const LOOKUP_TEXT = 'Lily and Tom with the dog. {"name":"Lily","age":5,"friends":["Tom","the dog"]}';
