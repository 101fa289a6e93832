/** The options that make a thread or child process load modules as the gateway does (`--import tsx`); none of the others. */
export function loaderArguments(execArgv: readonly string[]): string[] {
  const kept: string[] = [];
  for (let i = 0; i < execArgv.length; i++) {
    const arg = execArgv[i] as string;
    if (/^--(import|require|loader|experimental-loader|conditions)=/.test(arg)) kept.push(arg);
    else if (
      /^(--import|--require|-r|--loader|--experimental-loader|--conditions|-C)$/.test(arg) &&
      i + 1 < execArgv.length
    )
      kept.push(arg, execArgv[++i] as string);
  }
  return kept;
}
