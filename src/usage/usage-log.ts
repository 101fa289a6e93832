/** Where the usage recorder, its spool and the spool's replay log (the app's logger). */
export interface UsageLog {
  info(fields: Record<string, unknown>, msg: string): void;
  warn(fields: Record<string, unknown>, msg: string): void;
  error(fields: Record<string, unknown>, msg: string): void;
}
