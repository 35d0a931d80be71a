export async function benchServe(..._args: unknown[]): Promise<void> {
  throw new Error('not yet');
}
