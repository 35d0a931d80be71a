export async function runBatch(..._args: unknown[]): Promise<void> {
  throw new Error('not yet');
}
