//! Reading sets of keys: a directory of text files (one set per file, named
//! after the file, one key per line) or a TSV of `set<TAB>key` lines. Keys
//! are bytes: lines need not be UTF-8. Filters are built while reading, so
//! keys are never held in memory.

use std::io::{BufRead, IsTerminal, Read};

use hashbrown::HashMap;
use std::path::{Path, PathBuf};

use bloomslice::{BloomFilter, BloomParams};
use indicatif::{ProgressBar, ProgressStyle};

use crate::CliError;

/// One set read from the input.
pub struct InputSet {
    /// The set's name (file name, or the TSV's first column).
    pub name: Vec<u8>,
    /// Its filter.
    pub filter: BloomFilter,
    /// Key lines inserted (not necessarily distinct).
    pub keys: u64,
}

/// Where the sets come from.
pub enum Source<'a> {
    /// A directory of text files.
    Dir(&'a Path),
    /// A TSV of `set<TAB>key` lines (`-` is stdin).
    Tsv(&'a Path),
}

/// Input larger than this shows a progress bar (on a terminal).
const PROGRESS_MIN_BYTES: u64 = 64 << 20;

fn progress(total: u64, what: &str) -> ProgressBar {
    if total < PROGRESS_MIN_BYTES || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(total);
    bar.set_style(
        ProgressStyle::with_template("{msg} [{bar:40}] {bytes}/{total_bytes} ({bytes_per_sec}, {eta})")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    bar.set_message(what.to_owned());
    bar
}

/// Strips a trailing `\n` and `\r`.
fn trim_eol(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// Calls `f` on every line of `r` (without its `\n` or `\r\n`). Lines are
/// found with `memchr` in 1 MiB blocks and handed out in place: nothing is
/// copied per line (`BufRead::read_until` copies every line, which cost a
/// third of the build time of a 10-million-line TSV).
fn for_each_line(
    mut r: impl Read,
    path: &Path,
    mut f: impl FnMut(&[u8]) -> Result<(), CliError>,
) -> Result<(), CliError> {
    let mut buf = vec![0u8; 1 << 20];
    let (mut start, mut end) = (0, 0);
    loop {
        if end == buf.len() {
            if start > 0 {
                buf.copy_within(start..end, 0);
                end -= start;
                start = 0;
            } else {
                // One line longer than the buffer: grow it.
                buf.resize(buf.len() * 2, 0);
            }
        }
        let n = match r.read(&mut buf[end..]) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(CliError::Runtime(format!("cannot read {}: {e}", path.display()))),
        };
        if n == 0 {
            if start < end {
                f(trim_eol(&buf[start..end]))?;
            }
            return Ok(());
        }
        let mut line_start = start;
        for nl in memchr::memchr_iter(b'\n', &buf[end..end + n]) {
            let nl = end + nl;
            f(trim_eol(&buf[line_start..nl]))?;
            line_start = nl + 1;
        }
        start = line_start;
        end += n;
    }
}

/// Reads every set of `source`, in name order.
pub fn read_sets(source: &Source<'_>, params: BloomParams) -> Result<Vec<InputSet>, CliError> {
    let sets = match source {
        Source::Dir(dir) => read_dir(dir, params)?,
        Source::Tsv(path) => read_tsv(path, params)?,
    };
    if sets.is_empty() {
        let what = match source {
            Source::Dir(d) => format!("{} has no files with keys", d.display()),
            Source::Tsv(p) => format!("{} holds no `set<TAB>key` lines", p.display()),
        };
        return Err(CliError::Runtime(format!("{what}: nothing to index (check the path and the input format)")));
    }
    Ok(sets)
}

fn read_dir(dir: &Path, params: BloomParams) -> Result<Vec<InputSet>, CliError> {
    let io = |e: std::io::Error| CliError::Runtime(format!("cannot read directory {}: {e}", dir.display()));
    let mut files: Vec<PathBuf> = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        if entry.file_type().map_err(io)?.is_file() {
            files.push(entry.path());
        }
    }
    files.sort();
    let total = files.iter().filter_map(|f| f.metadata().ok()).map(|m| m.len()).sum();
    let bar = progress(total, "reading files");
    let mut out = Vec::with_capacity(files.len());
    for path in files {
        let file = std::fs::File::open(&path)
            .map_err(|e| CliError::Runtime(format!("cannot open {}: {e}", path.display())))?;
        let mut filter = BloomFilter::new(params).map_err(CliError::engine)?;
        let mut keys = 0u64;
        for_each_line(bar.wrap_read(file), &path, |key| {
            if !key.is_empty() {
                filter.insert(key);
                keys += 1;
            }
            Ok(())
        })?;
        if keys > 0 {
            out.push(InputSet { name: file_name_bytes(&path), filter, keys });
        }
    }
    bar.finish_and_clear();
    Ok(out)
}

#[cfg(unix)]
fn file_name_bytes(path: &Path) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    path.file_name().map_or_else(Vec::new, |n| n.as_bytes().to_vec())
}

#[cfg(not(unix))]
fn file_name_bytes(path: &Path) -> Vec<u8> {
    path.file_name().map_or_else(Vec::new, |n| n.to_string_lossy().into_owned().into_bytes())
}

fn read_tsv(path: &Path, params: BloomParams) -> Result<Vec<InputSet>, CliError> {
    let (reader, total): (Box<dyn Read>, u64) = if path == Path::new("-") {
        (Box::new(std::io::stdin().lock()), 0)
    } else {
        let file = std::fs::File::open(path)
            .map_err(|e| CliError::Runtime(format!("cannot open {}: {e} (check the path)", path.display())))?;
        let len = file.metadata().map(|m| m.len()).unwrap_or(0);
        (Box::new(file), len)
    };
    let bar = progress(total, "reading TSV");
    let mut index: HashMap<Vec<u8>, usize> = HashMap::new();
    let mut sets: Vec<InputSet> = Vec::new();
    let mut last: Option<usize> = None;
    let mut line_no = 0u64;
    for_each_line(bar.wrap_read(reader), path, |row| {
        line_no += 1;
        if row.is_empty() {
            return Ok(());
        }
        let Some(tab) = memchr::memchr(b'\t', row) else {
            return Err(CliError::Runtime(format!(
                "{}:{line_no}: expected `set<TAB>key`, found no tab (one set name, a tab, then the key)",
                path.display()
            )));
        };
        let (name, key) = (&row[..tab], &row[tab + 1..]);
        if name.is_empty() {
            return Err(CliError::Runtime(format!("{}:{line_no}: empty set name before the tab", path.display())));
        }
        // Lines of one set usually come together: skip the map lookup then.
        let slot = match last {
            Some(i) if sets[i].name == name => i,
            _ => match index.get(name) {
                Some(&i) => i,
                None => {
                    let filter = BloomFilter::new(params).map_err(CliError::engine)?;
                    sets.push(InputSet { name: name.to_vec(), filter, keys: 0 });
                    index.insert(name.to_vec(), sets.len() - 1);
                    sets.len() - 1
                }
            },
        };
        last = Some(slot);
        sets[slot].filter.insert(key);
        sets[slot].keys += 1;
        Ok(())
    })?;
    bar.finish_and_clear();
    sets.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(sets)
}

/// Keys for `query`: the arguments, or stdin lines when there are none or
/// the only one is `-`.
pub fn query_keys(args: &[std::ffi::OsString]) -> Result<Vec<Vec<u8>>, CliError> {
    if args.is_empty() || (args.len() == 1 && args[0] == "-") {
        let mut keys = Vec::new();
        let mut stdin = std::io::stdin().lock();
        let mut line = Vec::new();
        loop {
            line.clear();
            let n = stdin
                .read_until(b'\n', &mut line)
                .map_err(|e| CliError::Runtime(format!("cannot read keys from stdin: {e}")))?;
            if n == 0 {
                break;
            }
            let key = trim_eol(&line);
            if !key.is_empty() {
                keys.push(key.to_vec());
            }
        }
        if keys.is_empty() {
            return Err(CliError::Usage("no keys to query: give them as arguments or one per line on stdin".into()));
        }
        return Ok(keys);
    }
    Ok(args.iter().map(|a| os_bytes(a)).collect())
}

#[cfg(unix)]
fn os_bytes(s: &std::ffi::OsStr) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    s.as_bytes().to_vec()
}

#[cfg(not(unix))]
fn os_bytes(s: &std::ffi::OsStr) -> Vec<u8> {
    s.to_string_lossy().into_owned().into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(input: &[u8]) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        for_each_line(input, Path::new("test"), |l| {
            out.push(l.to_vec());
            Ok(())
        })
        .unwrap();
        out
    }

    #[test]
    fn lines_split_on_newlines_with_crlf_and_no_final_newline() {
        assert_eq!(lines(b"a\nb\r\n\nc"), vec![b"a".to_vec(), b"b".to_vec(), vec![], b"c".to_vec()]);
        assert!(lines(b"").is_empty());
        assert_eq!(lines(b"\xff\xfe\n"), vec![b"\xff\xfe".to_vec()]);
    }

    #[test]
    fn lines_longer_than_the_buffer_and_across_reads() {
        let long = vec![b'x'; 3 << 20];
        let mut input = long.clone();
        input.extend_from_slice(b"\nshort\n");
        input.extend_from_slice(&long);
        let got = lines(&input);
        assert_eq!(got.len(), 3);
        assert_eq!(got[0], long);
        assert_eq!(got[1], b"short");
        assert_eq!(got[2], long);
        // Many lines across 1 MiB block boundaries.
        let many: Vec<u8> = (0..300_000u32).flat_map(|i| format!("{i}\n").into_bytes()).collect();
        let got = lines(&many);
        assert_eq!(got.len(), 300_000);
        assert!(got.iter().enumerate().all(|(i, l)| l == i.to_string().as_bytes()));
    }
}
