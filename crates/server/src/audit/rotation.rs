//! A log file that rotates itself by size, as the lumberjack logger kube's log backend writes
//! through (`gopkg.in/natefinch/lumberjack.v2`): the full file is renamed to
//! `<name>-<timestamp><ext>`, and backups beyond `--audit-log-maxbackup` or older than
//! `--audit-log-maxage` days are deleted.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// lumberjack's `backupTimeFormat` (`2006-01-02T15-04-05.000`), in UTC as kube leaves
/// `LocalTime` false.
const BACKUP_TIME_FORMAT: &str = "%Y-%m-%dT%H-%M-%S.%3f";

/// lumberjack's size when none is given (100 MB).
const DEFAULT_MAX_SIZE_MB: u64 = 100;

/// When and how a [`RotatingFile`] rotates.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rotation {
    /// Megabytes a file grows to before it is rotated (0: 100, as lumberjack).
    pub max_size_mb: u64,
    /// Backups kept, newest first (0: all).
    pub max_backups: usize,
    /// Days a backup is kept (0: forever).
    pub max_age_days: u64,
}

impl Rotation {
    fn max_bytes(&self) -> u64 {
        let mb = if self.max_size_mb == 0 {
            DEFAULT_MAX_SIZE_MB
        } else {
            self.max_size_mb
        };
        mb.saturating_mul(1024 * 1024)
    }
}

/// An append-only log file rotated by [`Rotation`]. Not shared: one writer owns it.
#[derive(Debug)]
pub struct RotatingFile {
    path: PathBuf,
    rotation: Rotation,
    max_bytes: u64,
    file: Option<File>,
    size: u64,
}

impl RotatingFile {
    /// The log at `path`, opened (and created, with its directory) at the first write.
    pub fn new(path: impl Into<PathBuf>, rotation: Rotation) -> Self {
        Self {
            path: path.into(),
            rotation,
            max_bytes: rotation.max_bytes(),
            file: None,
            size: 0,
        }
    }

    /// For tests: a limit in bytes rather than megabytes.
    #[cfg(test)]
    fn with_max_bytes(mut self, max_bytes: u64) -> Self {
        self.max_bytes = max_bytes;
        self
    }

    /// Appends `bytes`, rotating first if they would take the file past its size; `now` names
    /// the backup and dates the backups' age. A write larger than the limit goes whole into a
    /// fresh file (lumberjack refuses it; an audit event is better kept).
    pub fn write_at(&mut self, bytes: &[u8], now: jiff::Timestamp) -> io::Result<()> {
        if self.file.is_none() {
            self.open_existing_or_new()?;
        }
        if self.size > 0 && self.size + bytes.len() as u64 > self.max_bytes {
            self.rotate(now)?;
        }
        let file = match self.file.as_mut() {
            Some(f) => f,
            None => self.open_new()?,
        };
        file.write_all(bytes)?;
        self.size += bytes.len() as u64;
        Ok(())
    }

    /// Flushes the file (the OS' buffers are not synced).
    pub fn flush(&mut self) -> io::Result<()> {
        match self.file.as_mut() {
            Some(f) => f.flush(),
            None => Ok(()),
        }
    }

    fn open_existing_or_new(&mut self) -> io::Result<()> {
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)?;
        self.size = file.metadata()?.len();
        self.file = Some(file);
        Ok(())
    }

    fn open_new(&mut self) -> io::Result<&mut File> {
        let file = OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(true)
            .open(&self.path)?;
        self.size = 0;
        Ok(self.file.insert(file))
    }

    /// Renames the current file to its backup name, starts a new one, and deletes the backups
    /// past the limits (lumberjack's `rotate` and `millRunOnce`, without compression).
    fn rotate(&mut self, now: jiff::Timestamp) -> io::Result<()> {
        self.file = None;
        std::fs::rename(&self.path, backup_name(&self.path, now))?;
        self.open_new()?;
        self.remove_old_backups(now)
    }

    fn remove_old_backups(&self, now: jiff::Timestamp) -> io::Result<()> {
        if self.rotation.max_backups == 0 && self.rotation.max_age_days == 0 {
            return Ok(());
        }
        let mut backups = backups(&self.path)?;
        // Newest first.
        backups.sort_by_key(|b| std::cmp::Reverse(b.0));
        let mut remove: Vec<PathBuf> = Vec::new();
        if self.rotation.max_backups > 0 && backups.len() > self.rotation.max_backups {
            remove.extend(
                backups
                    .drain(self.rotation.max_backups..)
                    .map(|(_, path)| path),
            );
        }
        if self.rotation.max_age_days > 0 {
            let max_age = jiff::SignedDuration::from_hours(24 * self.rotation.max_age_days as i64);
            let cutoff = now - max_age;
            remove.extend(
                backups
                    .into_iter()
                    .filter(|(t, _)| *t < cutoff)
                    .map(|(_, path)| path),
            );
        }
        for path in remove {
            if let Err(e) = std::fs::remove_file(&path) {
                tracing::warn!(path = %path.display(), error = %e, "unable to remove an old audit log");
            }
        }
        Ok(())
    }
}

/// `<dir>/<name>-<timestamp><ext>` of `path` (lumberjack's `backupName`).
fn backup_name(path: &Path, t: jiff::Timestamp) -> PathBuf {
    let (prefix, ext) = prefix_and_ext(path);
    let stamp = t.strftime(BACKUP_TIME_FORMAT);
    path.with_file_name(format!("{prefix}{stamp}{ext}"))
}

/// `<name>-` and `.<ext>` of `path`'s file name (lumberjack's `prefixAndExt`).
fn prefix_and_ext(path: &Path) -> (String, String) {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let ext = path
        .extension()
        .map(|e| format!(".{}", e.to_string_lossy()))
        .unwrap_or_default();
    let stem = &name[..name.len() - ext.len()];
    (format!("{stem}-"), ext)
}

/// The backups of `path` in its directory, with the time in their names
/// (`oldLogFiles`); files whose names do not parse are not ours and are left alone.
fn backups(path: &Path) -> io::Result<Vec<(jiff::Timestamp, PathBuf)>> {
    let dir = match path.parent().filter(|d| !d.as_os_str().is_empty()) {
        Some(d) => d.to_path_buf(),
        None => PathBuf::from("."),
    };
    let (prefix, ext) = prefix_and_ext(path);
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&dir)? {
        let entry = entry?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(stamp) = name
            .strip_prefix(prefix.as_str())
            .and_then(|rest| rest.strip_suffix(ext.as_str()))
        else {
            continue;
        };
        let Ok(t) = jiff::civil::DateTime::strptime(BACKUP_TIME_FORMAT, stamp) else {
            continue;
        };
        let Ok(t) = t.to_zoned(jiff::tz::TimeZone::UTC) else {
            continue;
        };
        out.push((t.timestamp(), entry.path()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> jiff::Timestamp {
        s.parse().expect("timestamp")
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .expect("read dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn backups_are_named_after_the_file_and_the_rotation_time() {
        let t = at("2026-03-04T05:06:07.089Z");
        assert_eq!(
            backup_name(Path::new("/var/log/audit.log"), t),
            Path::new("/var/log/audit-2026-03-04T05-06-07.089.log")
        );
        assert_eq!(
            backup_name(Path::new("audit"), t),
            Path::new("audit-2026-03-04T05-06-07.089")
        );
    }

    #[test]
    fn a_full_file_is_renamed_and_a_new_one_started() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("audit.log");
        let mut log = RotatingFile::new(&path, Rotation::default()).with_max_bytes(10);
        log.write_at(b"123456\n", at("2026-01-01T00:00:00Z"))
            .expect("write");
        log.write_at(b"abcdef\n", at("2026-01-01T00:00:01Z"))
            .expect("write");
        log.flush().expect("flush");
        assert_eq!(
            names(dir.path()),
            ["audit-2026-01-01T00-00-01.000.log", "audit.log"]
        );
        assert_eq!(std::fs::read(&path).expect("read"), b"abcdef\n");
        assert_eq!(
            std::fs::read(dir.path().join("audit-2026-01-01T00-00-01.000.log")).expect("read"),
            b"123456\n"
        );
    }

    #[test]
    fn an_existing_file_is_appended_to_and_counts_toward_the_size() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("audit.log");
        std::fs::write(&path, b"old line\n").expect("seed");
        let mut log = RotatingFile::new(&path, Rotation::default()).with_max_bytes(12);
        log.write_at(b"new\n", at("2026-01-01T00:00:00Z"))
            .expect("write");
        assert_eq!(
            names(dir.path()),
            ["audit-2026-01-01T00-00-00.000.log", "audit.log"]
        );
        assert_eq!(std::fs::read(&path).expect("read"), b"new\n");
    }

    #[test]
    fn only_max_backups_are_kept_newest_first() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("audit.log");
        let rotation = Rotation {
            max_backups: 2,
            ..Rotation::default()
        };
        let mut log = RotatingFile::new(&path, rotation).with_max_bytes(4);
        for second in 0..5 {
            let t = at(&format!("2026-01-01T00:00:0{second}Z"));
            log.write_at(b"abc\n", t).expect("write");
        }
        assert_eq!(
            names(dir.path()),
            [
                "audit-2026-01-01T00-00-03.000.log",
                "audit-2026-01-01T00-00-04.000.log",
                "audit.log"
            ]
        );
    }

    #[test]
    fn backups_older_than_max_age_are_deleted_and_foreign_files_kept() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("audit.log");
        for name in [
            "audit-2026-01-01T00-00-00.000.log",
            "audit-2026-01-09T00-00-00.000.log",
            "audit-notatime.log",
            "other.log",
        ] {
            std::fs::write(dir.path().join(name), b"x").expect("seed");
        }
        let rotation = Rotation {
            max_age_days: 3,
            ..Rotation::default()
        };
        let mut log = RotatingFile::new(&path, rotation).with_max_bytes(4);
        log.write_at(b"abc\n", at("2026-01-10T00:00:00Z"))
            .expect("write");
        log.write_at(b"def\n", at("2026-01-10T00:00:01Z"))
            .expect("write");
        assert_eq!(
            names(dir.path()),
            [
                "audit-2026-01-09T00-00-00.000.log",
                "audit-2026-01-10T00-00-01.000.log",
                "audit-notatime.log",
                "audit.log",
                "other.log"
            ]
        );
    }
}
