//! Reading sets of keys: a directory of text files (one set per file, named
//! after the file, one key per line) or a TSV of `set<TAB>key` lines. Keys
//! are bytes: lines need not be UTF-8. Filters are built while reading, so
//! keys are never held in memory.

use std::io::{IsTerminal, Read};

use hashbrown::HashMap;
use std::path::{Path, PathBuf};

use bloomslice::{BloomFilter, BloomParams, KeyHash, Prehashed, SetNames, SlicedIndex};
use indicatif::{ProgressBar, ProgressStyle};

use crate::CliError;
use crate::escape;

/// Where the sets come from.
pub enum Source<'a> {
    /// A directory of text files (and whether to read its subdirectories).
    Dir(&'a Path, bool),
    /// A TSV of `set<TAB>key` lines (`-` is stdin), and how its set names
    /// are written.
    Tsv(&'a Path, Names),
}

/// How the set names of a TSV are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Names {
    /// As the bytes they are.
    AsGiven,
    /// In the escaped form the tool prints (`crate::escape::parse`).
    Escaped,
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

/// Strips a trailing `\n` and `\r` (keys from files and stdin; never from
/// arguments).
fn trim_eol(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// Reads more of `r` into `buf[end..]` after the unfinished line
/// `buf[start..end]`: first moves that line to the front, or doubles the
/// buffer when one line fills it. Returns the bytes read (0 at the end);
/// retries reads that were interrupted.
fn refill(r: &mut impl Read, buf: &mut Vec<u8>, start: &mut usize, end: &mut usize) -> std::io::Result<usize> {
    if *end == buf.len() {
        if *start > 0 {
            buf.copy_within(*start..*end, 0);
            *end -= *start;
            *start = 0;
        } else {
            buf.resize(buf.len() * 2, 0);
        }
    }
    loop {
        match r.read(&mut buf[*end..]) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            other => return other,
        }
    }
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
        let n = refill(&mut r, &mut buf, &mut start, &mut end)
            .map_err(|e| CliError::Runtime(format!("cannot read {}: {e}", path.display())))?;
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

fn nothing_to_index(source: &Source<'_>) -> CliError {
    let what = match source {
        Source::Dir(d, _) => format!("{} has no files with keys", d.display()),
        Source::Tsv(p, _) => format!("{} holds no `set<TAB>key` lines", p.display()),
    };
    CliError::Runtime(format!("{what}: nothing to index (check the path and the input format)"))
}

/// The files of a `--dir`: `(path, set name)`.
pub(crate) type DirFiles = Vec<(PathBuf, Vec<u8>)>;

/// The files of a `--dir` in name order; what was skipped (with why),
/// escaped for printing and sorted, is appended to `skipped`.
pub(crate) fn list_dir(dir: &Path, recursive: bool, skipped: &mut Vec<String>) -> Result<DirFiles, CliError> {
    let mut files = Vec::new();
    let skipped_before = skipped.len();
    let mut visited = std::collections::HashSet::new();
    if let Ok(c) = std::fs::canonicalize(dir) {
        visited.insert(c);
    }
    let mut todo: Vec<(PathBuf, Vec<u8>)> = vec![(dir.to_path_buf(), Vec::new())];
    while let Some((d, prefix)) = todo.pop() {
        let io = |e: std::io::Error| CliError::Runtime(format!("cannot read directory {}: {e}", d.display()));
        for entry in std::fs::read_dir(&d).map_err(io)? {
            let entry = entry.map_err(io)?;
            let mut name = prefix.clone();
            name.extend_from_slice(&os_bytes(&entry.file_name()));
            let path = entry.path();
            let ty = entry.file_type().map_err(io)?;
            // Follow symlinks to what they point at.
            let meta = if ty.is_symlink() { std::fs::metadata(&path) } else { entry.metadata() };
            let Ok(meta) = meta else {
                skipped.push(format!("{} (a broken symlink)", crate::escape::plain(&name)));
                continue;
            };
            if meta.is_file() {
                files.push((path, name));
            } else if meta.is_dir() {
                if !recursive {
                    skipped.push(format!("{}/ (a directory: pass --recursive)", crate::escape::plain(&name)));
                } else if std::fs::canonicalize(&path).is_ok_and(|c| visited.insert(c)) {
                    name.push(b'/');
                    todo.push((path, name));
                } else {
                    skipped.push(format!("{}/ (a symlink loop)", crate::escape::plain(&name)));
                }
            } else {
                skipped.push(format!("{} (not a regular file)", crate::escape::plain(&name)));
            }
        }
    }
    files.sort_by(|a, b| a.1.cmp(&b.1));
    skipped[skipped_before..].sort();
    Ok(files)
}

/// A progress bar over the bytes of the files of a directory.
fn files_bar(files: &DirFiles) -> ProgressBar {
    let total = files.iter().filter_map(|f| f.0.metadata().ok()).map(|m| m.len()).sum();
    progress(total, "reading files")
}

/// Inserts every non-empty key line of `path` into `filter`; returns the
/// number of keys.
fn read_keys(path: &Path, bar: &ProgressBar, filter: &mut BloomFilter) -> Result<u64, CliError> {
    let file =
        std::fs::File::open(path).map_err(|e| CliError::Runtime(format!("cannot open {}: {e}", path.display())))?;
    let mut keys = 0u64;
    for_each_line(bar.wrap_read(file), path, |key| {
        if !key.is_empty() {
            filter.insert(key);
            keys += 1;
        }
        Ok(())
    })?;
    Ok(keys)
}

/// Splits a TSV row into `(set, key)`.
fn tsv_row<'a>(row: &'a [u8], path: &Path, line_no: u64) -> Result<(&'a [u8], &'a [u8]), CliError> {
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
    Ok((name, key))
}

fn tsv_reader(path: &Path) -> Result<(Box<dyn Read>, u64), CliError> {
    if path == Path::new("-") {
        return Ok((Box::new(std::io::stdin().lock()), 0));
    }
    let file = std::fs::File::open(path)
        .map_err(|e| CliError::Runtime(format!("cannot open {}: {e} (check the path)", path.display())))?;
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    Ok((Box::new(file), len))
}

/// Calls `f(set, key)` for every non-empty row of a TSV, the set name
/// read as `names` says and checked against the limit of the format.
fn for_each_row(
    path: &Path,
    names: Names,
    bar: &ProgressBar,
    mut f: impl FnMut(&[u8], &[u8]) -> Result<(), CliError>,
) -> Result<(), CliError> {
    let (reader, _) = tsv_reader(path)?;
    let mut line_no = 0u64;
    let mut unescaped = Vec::new();
    for_each_line(bar.wrap_read(reader), path, |row| {
        line_no += 1;
        if row.is_empty() {
            return Ok(());
        }
        let (name, key) = tsv_row(row, path, line_no)?;
        let name = match names {
            Names::AsGiven => name,
            Names::Escaped => {
                unescaped = escape::parse(name)
                    .map_err(|e| CliError::Runtime(format!("{}:{line_no}: set name: {e}", path.display())))?;
                &unescaped
            }
        };
        escape::check_name_length(name, || format!("{}:{line_no}", path.display()))?;
        f(name, key)
    })
}

/// What reading a source leaves for the summary besides its sets.
#[derive(Debug, Default)]
pub struct Remarks {
    /// Directory entries that were not read, escaped, with why.
    pub skipped: Vec<String>,
    /// Lines the summary adds (for example the k-mer counts).
    pub notes: Vec<String>,
}

/// An index built by `build`, with per-set key counts (by id) and what the
/// directory listing skipped.
pub struct Built {
    /// The index; set `i` has id `i`.
    pub index: SlicedIndex,
    /// Names of the sets.
    pub names: SetNames,
    /// Key lines per set, by id.
    pub keys: Vec<u64>,
    /// What the summary reports besides the sets.
    pub remarks: Remarks,
}

/// Builds the index of `source` with its peak memory about one index size:
/// the columns are reserved once (`check(sets, name bytes)` is asked
/// first) and filled directly, never held as separate filters. Sets get ids
/// in name order; from stdin, in order of first appearance, and the index
/// grows (asking `check` first) as new sets appear.
pub fn build_index(
    source: &Source<'_>,
    params: BloomParams,
    check: &dyn Fn(u64, u64) -> Result<(), CliError>,
) -> Result<Built, CliError> {
    let mut index = SlicedIndex::new(params);
    let mut names = SetNames::new();
    let mut keys = Vec::new();
    let mut skipped = Vec::new();
    match source {
        Source::Dir(dir, recursive) => {
            let files = list_dir(dir, *recursive, &mut skipped)?;
            check(files.len() as u64, files.iter().map(|f| f.1.len() as u64).sum())?;
            index.reserve(files.len()).map_err(CliError::engine)?;
            let bar = files_bar(&files);
            // One filter, reused: cleared by building a new one only when a file had keys.
            let mut filter = BloomFilter::new(params).map_err(CliError::engine)?;
            for (path, name) in files {
                let n = read_keys(&path, &bar, &mut filter)?;
                if n > 0 {
                    let id = keys.len() as u64;
                    index.insert_filter(id, &filter).map_err(CliError::engine)?;
                    names.insert(id, name).map_err(CliError::engine)?;
                    keys.push(n);
                    filter = BloomFilter::new(params).map_err(CliError::engine)?;
                }
            }
            bar.finish_and_clear();
        }
        Source::Tsv(path, form) if *path != Path::new("-") => {
            // First pass: the set names (small), so the size is known and
            // checked before anything big is allocated.
            let mut ids: HashMap<Vec<u8>, u64> = HashMap::new();
            let mut last: Vec<u8> = Vec::new();
            for_each_row(path, *form, &ProgressBar::hidden(), |name, _| {
                if name != last.as_slice() {
                    last.clear();
                    last.extend_from_slice(name);
                    if !ids.contains_key(name) {
                        ids.insert(name.to_vec(), 0);
                    }
                }
                Ok(())
            })?;
            let mut sorted: Vec<Vec<u8>> = ids.keys().cloned().collect();
            sorted.sort();
            check(sorted.len() as u64, sorted.iter().map(|n| n.len() as u64).sum())?;
            index.reserve(sorted.len()).map_err(CliError::engine)?;
            let empty = BloomFilter::new(params).map_err(CliError::engine)?;
            for (id, name) in sorted.into_iter().enumerate() {
                let id = id as u64;
                index.insert_filter(id, &empty).map_err(CliError::engine)?;
                *ids.get_mut(&name).expect("listed above") = id;
                names.insert(id, name).map_err(CliError::engine)?;
            }
            keys = vec![0u64; ids.len()];
            let (_, total) = tsv_reader(path)?;
            let bar = progress(total, "reading TSV");
            let mut last: Option<(Vec<u8>, u64)> = None;
            for_each_row(path, *form, &bar, |name, key| {
                let id = match &last {
                    Some((n, id)) if n.as_slice() == name => *id,
                    _ => {
                        // The file changed between the passes if this fails.
                        let id = *ids.get(name).ok_or_else(|| {
                            CliError::Runtime(format!("{} changed while it was read", path.display()))
                        })?;
                        last = Some((name.to_vec(), id));
                        id
                    }
                };
                index.insert_key(id, key).map_err(CliError::engine)?;
                keys[id as usize] += 1;
                Ok(())
            })?;
            bar.finish_and_clear();
        }
        Source::Tsv(path, form) => {
            let mut ids: HashMap<Vec<u8>, u64> = HashMap::new();
            let mut name_bytes = 0u64;
            let empty = BloomFilter::new(params).map_err(CliError::engine)?;
            let mut last: Option<(Vec<u8>, u64)> = None;
            for_each_row(path, *form, &ProgressBar::hidden(), |name, key| {
                let id = match &last {
                    Some((n, id)) if n.as_slice() == name => *id,
                    _ => {
                        let id = match ids.get(name) {
                            Some(&id) => id,
                            None => {
                                let id = ids.len() as u64;
                                name_bytes += name.len() as u64;
                                if index.columns() <= id as usize {
                                    check(id + 1, name_bytes)?;
                                }
                                index.insert_filter(id, &empty).map_err(CliError::engine)?;
                                names.insert(id, name.to_vec()).map_err(CliError::engine)?;
                                ids.insert(name.to_vec(), id);
                                keys.push(0);
                                id
                            }
                        };
                        last = Some((name.to_vec(), id));
                        id
                    }
                };
                index.insert_key(id, key).map_err(CliError::engine)?;
                keys[id as usize] += 1;
                Ok(())
            })?;
        }
    }
    if keys.is_empty() {
        return Err(nothing_to_index(source));
    }
    Ok(Built { index, names, keys, remarks: Remarks { skipped, notes: Vec::new() } })
}

/// One set read as the hashes of its keys, for a collection sized from
/// its data: each key is hashed once (`KeyHash::from_bytes` under the
/// seed, whose first word determines the whole hash, so
/// [`Prehashed`] of it gives the same probe positions as the key's bytes).
pub struct HashedSet {
    /// The set's name.
    pub name: Vec<u8>,
    /// Its distinct key hashes, ascending.
    pub hashes: Vec<Prehashed>,
    /// Key lines read (duplicates included).
    pub lines: u64,
}

impl HashedSet {
    /// A set named `name` with no keys yet.
    pub fn new(name: Vec<u8>) -> Self {
        HashedSet { name, hashes: Vec::new(), lines: 0 }
    }

    /// Adds the hash of `key` under `seed`.
    #[inline]
    pub fn push(&mut self, key: &[u8], seed: u64) {
        self.hashes.push(Prehashed(KeyHash::from_bytes(key, seed).h1));
        self.lines += 1;
    }

    /// Sorts the hashes and drops repeats: afterwards `hashes.len()` is the
    /// number of distinct keys (keys whose 64-bit hashes collide count
    /// once, as they set the same bits in a filter).
    pub fn finish(&mut self) {
        self.hashes.sort_unstable_by_key(|h| h.0);
        self.hashes.dedup_by_key(|h| h.0);
        self.hashes.shrink_to_fit();
    }
}

/// Sets read as hashes, in name order (ids `0..`), with what a directory
/// listing skipped and lines for the summary.
pub struct HashedSets {
    /// The sets, each finished ([`HashedSet::finish`]).
    pub sets: Vec<HashedSet>,
    /// What the summary reports besides the sets.
    pub remarks: Remarks,
}

/// Reads every set of `source` as key hashes under `seed` (8 bytes a key,
/// duplicates dropped per set as each set is finished). Sets without keys
/// are left out; only stdin may hold no set.
pub fn read_hashed(source: &Source<'_>, seed: u64) -> Result<HashedSets, CliError> {
    let mut sets = Vec::new();
    let mut skipped = Vec::new();
    match source {
        Source::Dir(dir, recursive) => {
            let files = list_dir(dir, *recursive, &mut skipped)?;
            let bar = files_bar(&files);
            for (path, name) in files {
                let file = std::fs::File::open(&path)
                    .map_err(|e| CliError::Runtime(format!("cannot open {}: {e}", path.display())))?;
                let mut set = HashedSet::new(name);
                for_each_line(bar.wrap_read(file), &path, |key| {
                    if !key.is_empty() {
                        set.push(key, seed);
                    }
                    Ok(())
                })?;
                if set.lines > 0 {
                    set.finish();
                    sets.push(set);
                }
            }
            bar.finish_and_clear();
        }
        Source::Tsv(path, form) => {
            let (_, total) = tsv_reader(path)?;
            let bar = progress(total, "reading TSV");
            let mut index: HashMap<Vec<u8>, usize> = HashMap::new();
            let mut last: Option<usize> = None;
            for_each_row(path, *form, &bar, |name, key| {
                // Lines of one set usually come together: skip the map lookup then.
                let slot = match last {
                    Some(i) if sets[i].name == name => i,
                    _ => match index.get(name) {
                        Some(&i) => i,
                        None => {
                            sets.push(HashedSet::new(name.to_vec()));
                            index.insert(name.to_vec(), sets.len() - 1);
                            sets.len() - 1
                        }
                    },
                };
                last = Some(slot);
                sets[slot].push(key, seed);
                Ok(())
            })?;
            bar.finish_and_clear();
            sets.iter_mut().for_each(HashedSet::finish);
            sets.sort_by(|a, b| a.name.cmp(&b.name));
        }
    }
    if sets.is_empty() && !matches!(source, Source::Tsv(path, _) if *path == Path::new("-")) {
        return Err(nothing_to_index(source));
    }
    Ok(HashedSets { sets, remarks: Remarks { skipped, notes: Vec::new() } })
}

/// Keys per chunk `query` answers at a time.
pub const QUERY_CHUNK: usize = 64 * 1024;

/// Calls `f` with the keys of stdin, one per line, in chunks of at most
/// `chunk` keys, as they arrive: a chunk ends at `chunk` keys or when the
/// input has nothing more to read right now, so answers to interactive
/// input come at once. Empty lines are skipped; a trailing `\r` is
/// stripped. Memory is bounded by the chunk and the longest line, whatever
/// the number of keys. Returns the number of keys.
pub fn stream_keys(
    mut r: impl Read,
    chunk: usize,
    mut f: impl FnMut(&[&[u8]]) -> Result<(), CliError>,
) -> Result<u64, CliError> {
    let mut buf = vec![0u8; 1 << 20];
    let (mut start, mut end) = (0, 0);
    let mut spans: Vec<(usize, usize)> = Vec::with_capacity(chunk);
    let mut total = 0u64;
    let mut flush = |buf: &[u8], spans: &mut Vec<(usize, usize)>| -> Result<u64, CliError> {
        if spans.is_empty() {
            return Ok(0);
        }
        let keys: Vec<&[u8]> = spans.iter().map(|&(a, b)| &buf[a..b]).collect();
        spans.clear();
        f(&keys)?;
        Ok(keys.len() as u64)
    };
    loop {
        let n = refill(&mut r, &mut buf, &mut start, &mut end)
            .map_err(|e| CliError::Runtime(format!("cannot read keys from stdin: {e}")))?;
        if n == 0 {
            let key = trim_eol(&buf[start..end]);
            if !key.is_empty() {
                let s = start;
                spans.push((s, s + key.len()));
            }
            total += flush(&buf, &mut spans)?;
            return Ok(total);
        }
        let mut line_start = start;
        for nl in memchr::memchr_iter(b'\n', &buf[end..end + n]) {
            let nl = end + nl;
            let key = trim_eol(&buf[line_start..nl]);
            if !key.is_empty() {
                spans.push((line_start, line_start + key.len()));
                if spans.len() == chunk {
                    total += flush(&buf, &mut spans)?;
                }
            }
            line_start = nl + 1;
        }
        total += flush(&buf, &mut spans)?;
        start = line_start;
        end += n;
    }
}

#[cfg(unix)]
pub(crate) fn os_bytes(s: &std::ffi::OsStr) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    s.as_bytes().to_vec()
}

#[cfg(not(unix))]
pub(crate) fn os_bytes(s: &std::ffi::OsStr) -> Vec<u8> {
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
