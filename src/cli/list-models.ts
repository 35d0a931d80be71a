export async function listModels(..._args: unknown[]): Promise<void> {
  throw new Error('not yet');
}
