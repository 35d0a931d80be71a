// An image the model cannot take as it is (too extreme an aspect ratio, a wrong buffer): the
// client's fault, so the serving side answers 400 with this message. Configuration mistakes
// stay plain Errors, which are the server's.
export class ImageInputError extends Error {
  override name = 'ImageInputError';
}
