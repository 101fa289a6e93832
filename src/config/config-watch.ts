import { watch, unwatchFile, watchFile, type FSWatcher } from 'node:fs';
import { basename, dirname } from 'node:path';

/** How long the file must be quiet before it is read: editors and `cp` write in several steps. */
export const CONFIG_WATCH_DEBOUNCE_MS = 300;
/** The stat poll's period: the fallback where directory events do not arrive (network file systems, some mounts). */
const POLL_INTERVAL_MS = 1_000;

export interface ConfigWatch {
  stop(): void;
}

/**
 * Calls `changed` once the config file has been quiet for `debounceMs` after a change. Two sources, the same
 * approach as the TLS certificate's reloader (http/tls-certificate.ts) plus a faster path: events on the file's
 * *directory* (an editor that saves by writing a new file and renaming it over the old one replaces the inode, so a
 * watch on the file itself would go deaf after the first save), and a stat poll every second as the fallback. Both
 * may report the same change: the reader skips a file whose bytes it already runs (the version is their hash).
 */
export function watchConfigFile(
  file: string,
  changed: () => void,
  debounceMs: number = CONFIG_WATCH_DEBOUNCE_MS,
): ConfigWatch {
  let timer: NodeJS.Timeout | undefined;
  const soon = () => {
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => {
      timer = undefined;
      changed();
    }, debounceMs);
    timer.unref();
  };
  const name = basename(file);
  let directory: FSWatcher | undefined;
  try {
    directory = watch(dirname(file), { persistent: false }, (_event, filename) => {
      // Some platforms give no name: then any change in the directory might be ours.
      if (filename === null || filename === name) soon();
    });
    directory.on('error', () => directory?.close());
  } catch {
    directory = undefined; // no directory events here: the poll alone
  }
  watchFile(file, { interval: POLL_INTERVAL_MS, persistent: false }, soon);
  return {
    stop() {
      if (timer) clearTimeout(timer);
      directory?.close();
      unwatchFile(file, soon);
    },
  };
}
