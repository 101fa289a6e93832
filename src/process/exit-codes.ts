/**
 * Exit code of a process that can never start as configured (the port is taken or not allowed): the cluster
 * primary stops at once instead of forking replacements that would fail the same way. 78 is EX_CONFIG in
 * sysexits.h ("something was found in an unconfigured or misconfigured state").
 */
export const EXIT_CANNOT_START = 78;
