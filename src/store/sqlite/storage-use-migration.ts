/**
 * SQLite migration 24 (docs/files.md, "Storage quotas"): the ledger of stored bytes per owner (`storage_use`, the
 * row `*` holding every owner's together), the reservations of writes in progress, and the triggers that keep the
 * ledger in step with the `files`, `upload_parts` and `storage_reservations` rows in the statement that writes or
 * removes each row. A file's or part's insert also ends the reservation made under its id (its bytes move from
 * reserved to stored in that statement). The ledger starts from what is stored when the migration runs.
 *
 * A part counts for its upload's owner (looked up in `uploads`, which outlives its parts: the sweep and
 * `dropParts` remove the parts first); a part whose upload row is missing counts for no one, on insert as on delete.
 */
export const STORAGE_USE_SQL = `
CREATE TABLE storage_use (
  owner TEXT PRIMARY KEY,
  bytes INTEGER NOT NULL
) STRICT;
CREATE TABLE storage_reservations (
  id TEXT PRIMARY KEY,
  owner TEXT NOT NULL,
  bytes INTEGER NOT NULL,
  expires_ms INTEGER NOT NULL
) STRICT;
CREATE INDEX storage_reservations_expiry ON storage_reservations (expires_ms);

CREATE TRIGGER files_storage_insert AFTER INSERT ON files BEGIN
  INSERT INTO storage_use (owner, bytes) VALUES ('*', NEW.bytes), (NEW.owner, NEW.bytes)
    ON CONFLICT (owner) DO UPDATE SET bytes = bytes + excluded.bytes;
  DELETE FROM storage_reservations WHERE id = NEW.id;
END;
CREATE TRIGGER files_storage_delete AFTER DELETE ON files BEGIN
  UPDATE storage_use SET bytes = bytes - OLD.bytes WHERE owner IN ('*', OLD.owner);
END;

CREATE TRIGGER upload_parts_storage_insert AFTER INSERT ON upload_parts BEGIN
  INSERT INTO storage_use (owner, bytes)
    SELECT '*', NEW.bytes FROM uploads WHERE id = NEW.upload_id
    UNION ALL SELECT owner, NEW.bytes FROM uploads WHERE id = NEW.upload_id
    ON CONFLICT (owner) DO UPDATE SET bytes = bytes + excluded.bytes;
  DELETE FROM storage_reservations WHERE id = NEW.id;
END;
CREATE TRIGGER upload_parts_storage_delete AFTER DELETE ON upload_parts BEGIN
  UPDATE storage_use SET bytes = bytes - OLD.bytes
    WHERE owner IN ('*', (SELECT owner FROM uploads WHERE id = OLD.upload_id))
      AND EXISTS (SELECT 1 FROM uploads WHERE id = OLD.upload_id);
END;

CREATE TRIGGER storage_reservations_insert AFTER INSERT ON storage_reservations BEGIN
  INSERT INTO storage_use (owner, bytes) VALUES ('*', NEW.bytes), (NEW.owner, NEW.bytes)
    ON CONFLICT (owner) DO UPDATE SET bytes = bytes + excluded.bytes;
END;
CREATE TRIGGER storage_reservations_update AFTER UPDATE OF bytes ON storage_reservations BEGIN
  UPDATE storage_use SET bytes = bytes + NEW.bytes - OLD.bytes WHERE owner IN ('*', NEW.owner);
END;
CREATE TRIGGER storage_reservations_delete AFTER DELETE ON storage_reservations BEGIN
  UPDATE storage_use SET bytes = bytes - OLD.bytes WHERE owner IN ('*', OLD.owner);
END;

INSERT INTO storage_use (owner, bytes)
  SELECT owner, sum(bytes) FROM (
    SELECT owner, bytes FROM files
    UNION ALL SELECT u.owner, p.bytes FROM upload_parts p JOIN uploads u ON u.id = p.upload_id
  ) GROUP BY owner;
INSERT INTO storage_use (owner, bytes) SELECT '*', coalesce(sum(bytes), 0) FROM storage_use;
`;
