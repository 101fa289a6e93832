/** The environment as the config reads it (process.env, or a test's own record). */
export type Env = Readonly<Record<string, string | undefined>>;
