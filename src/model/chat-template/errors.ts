/** A template that failed to parse or render, or messages it cannot take (the HTTP layer answers 400). */
export class ChatTemplateError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ChatTemplateError';
  }
}
