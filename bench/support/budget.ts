/** Runs a benchmark, failing it if it is still running after `budgetMs`: every bench stops by itself. */
export async function withinBudget(budgetMs: number, run: () => Promise<void>): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const budget = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`bench: over budget (${budgetMs.toString()} ms)`)), budgetMs);
    timer.unref();
  });
  try {
    await Promise.race([run(), budget]);
  } finally {
    clearTimeout(timer);
  }
}
