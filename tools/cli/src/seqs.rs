//! Sequence search: `build --seqs` indexes the canonical k-mers of FASTA or
//! FASTQ files (gzip too), one set per file or per record, and
//! `query --seqs` scores each read's k-mers against every set.
//!
//! Files are read with `needletail`; k-mers come from [`bloomslice::kmer`]
//! (whose docs fix the key of a k-mer, so other languages can compute the
//! same keys). K-mers whose window holds a byte other than `ACGT` (either
//! case) are skipped and counted. Scoring is the library's pruned path
//! (`SetIndex::query_threshold`, each part's bit-plane scoring), one
//! call per read.

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use bloomslice::kmer::{self, KmerLength};
use bloomslice::{BloomFilter, BloomParams, SetIndex, SetNames, SlicedIndex};
use hashbrown::HashSet;
use needletail::errors::{ParseError, ParseErrorKind};
use needletail::parser::FastxReader;

use crate::CliError;
use crate::escape::{self, plain, set_name};
use crate::input::{self, Built, HashedSet, HashedSets, Remarks};
use bloomslice::Threshold;

/// How `build --seqs` reads its input.
#[derive(Clone, Copy, Debug)]
pub struct SeqOptions {
    /// The k-mer length.
    pub k: KmerLength,
    /// One set per record (named by its id's first word) instead of per file.
    pub by_record: bool,
    /// Read the files of subdirectories too.
    pub recursive: bool,
}

/// One record: its name (the header's first word) and its sequence.
struct Record<'a> {
    name: &'a [u8],
    seq: &'a [u8],
    line: u64,
}

/// The one-line error for a file needletail cannot read as FASTA/FASTQ.
fn parse_error(path: &Path, e: &ParseError) -> CliError {
    let line = e.position.line.max(1);
    let what = match e.kind {
        ParseErrorKind::Io => return CliError::Runtime(format!("cannot read {}: {}", path.display(), e.msg)),
        ParseErrorKind::UnknownFormat => {
            format!("not a FASTA or FASTQ file: {}", e.msg.trim_end_matches('.'))
        }
        ParseErrorKind::UnexpectedEnd => "not valid FASTA/FASTQ: the file ends inside a record".to_owned(),
        _ => format!("not valid FASTA/FASTQ: {}", e.msg),
    };
    CliError::Runtime(format!("{}:{line}: {what}", path.display()))
}

/// Calls `f` on every record of `path` (`-` is stdin), gzip or not. An
/// empty file has no records.
/// Checks record `r` of `file` as a set name under `--seqs-by-record`: not
/// among the names `seen` so far (added to them), and not too long.
fn check_record_name(seen: &mut HashSet<Vec<u8>>, file: &Path, r: &Record<'_>) -> Result<(), CliError> {
    if !seen.insert(r.name.to_vec()) {
        return Err(CliError::Runtime(format!(
            "{}:{}: record {} appears twice (with --seqs-by-record, record ids name the sets and must be unique)",
            file.display(),
            r.line,
            plain(r.name)
        )));
    }
    escape::check_name_length(r.name, || format!("{}:{}", file.display(), r.line))
}

fn for_each_record(path: &Path, mut f: impl FnMut(Record<'_>) -> Result<(), CliError>) -> Result<(), CliError> {
    let reader: Result<Box<dyn FastxReader>, ParseError> = if path == Path::new("-") {
        needletail::parse_fastx_reader(std::io::stdin())
    } else {
        let file = std::fs::File::open(path)
            .map_err(|e| CliError::Runtime(format!("cannot open {}: {e} (check the path)", path.display())))?;
        needletail::parse_fastx_reader(file)
    };
    let mut reader = match reader {
        Ok(r) => r,
        Err(e) if e.kind == ParseErrorKind::EmptyFile => return Ok(()),
        Err(e) => return Err(parse_error(path, &e)),
    };
    while let Some(record) = reader.next() {
        let record = record.map_err(|e| parse_error(path, &e))?;
        let id = record.id();
        let name = id.split(|b| b.is_ascii_whitespace()).next().unwrap_or(id);
        let seq = record.seq();
        f(Record { name, seq: &seq, line: record.start_line_number() })?;
    }
    Ok(())
}

/// K-mers indexed and skipped while building.
#[derive(Default)]
struct Tally {
    kmers: u64,
    skipped: u64,
}

/// Inserts the canonical k-mers of `seq` into `filter`; returns how many.
fn insert_kmers(filter: &mut BloomFilter, seq: &[u8], k: KmerLength, tally: &mut Tally) -> u64 {
    let mut kmers = kmer::canonical_kmers(seq, k);
    let mut n = 0;
    for code in kmers.by_ref() {
        filter.insert(&kmer::key(code));
        n += 1;
    }
    tally.kmers += n;
    tally.skipped += kmers.skipped();
    n
}

/// The files of `--seqs`: those of a directory, in name order (what the
/// listing skipped appended to `skipped`), or one file.
fn seq_files(path: &Path, recursive: bool, skipped: &mut Vec<String>) -> Result<input::DirFiles, CliError> {
    if path.is_dir() {
        return input::list_dir(path, recursive, skipped);
    }
    if recursive {
        return Err(CliError::Usage("--recursive needs --seqs to be a directory".into()));
    }
    let name = path.file_name().map_or_else(|| path.as_os_str().to_owned(), ToOwned::to_owned);
    Ok(vec![(path.to_path_buf(), input::os_bytes(&name))])
}

/// `build --seqs`: the index of the k-mers of every file (or record) of
/// `path`, with its k-mer length recorded.
pub fn build_index(
    path: &Path,
    o: SeqOptions,
    params: BloomParams,
    check: &dyn Fn(u64, u64) -> Result<(), CliError>,
) -> Result<Built, CliError> {
    let mut skipped = Vec::new();
    let files = seq_files(path, o.recursive, &mut skipped)?;
    let mut index = SlicedIndex::new(params);
    index.set_kmer_length(Some(o.k));
    let mut names = SetNames::new();
    let mut keys = Vec::new();
    let mut tally = Tally::default();
    let mut filter = BloomFilter::new(params).map_err(CliError::engine)?;
    if o.by_record {
        let mut seen: HashSet<Vec<u8>> = HashSet::new();
        let (mut name_bytes, mut empty) = (0u64, 0u64);
        for (file, _) in &files {
            for_each_record(file, |r| {
                check_record_name(&mut seen, file, &r)?;
                let n = insert_kmers(&mut filter, r.seq, o.k, &mut tally);
                if n == 0 {
                    empty += 1;
                    return Ok(());
                }
                let id = keys.len() as u64;
                name_bytes += r.name.len() as u64;
                if index.columns() <= id as usize {
                    check(id + 1, name_bytes)?;
                }
                index.insert_filter(id, &filter).map_err(CliError::engine)?;
                names.insert(id, r.name.to_vec()).map_err(CliError::engine)?;
                keys.push(n);
                filter.clear();
                Ok(())
            })?;
        }
        if empty > 0 {
            skipped.push(format!("{empty} records (shorter than k = {} or without a k-mer of ACGT)", o.k));
        }
    } else {
        check(files.len() as u64, files.iter().map(|f| f.1.len() as u64).sum())?;
        index.reserve(files.len()).map_err(CliError::engine)?;
        for (file, name) in files {
            let mut n = 0;
            for_each_record(&file, |r| {
                n += insert_kmers(&mut filter, r.seq, o.k, &mut tally);
                Ok(())
            })?;
            if n == 0 {
                skipped.push(format!("{} (no k-mers of length {})", plain(&name), o.k));
                continue;
            }
            let id = keys.len() as u64;
            index.insert_filter(id, &filter).map_err(CliError::engine)?;
            names.insert(id, name).map_err(CliError::engine)?;
            keys.push(n);
            filter.clear();
        }
    }
    if keys.is_empty() {
        return Err(no_kmers(path, o.k));
    }
    let note = format!(
        "k-mers: k = {}, {} indexed (canonical), {} skipped (windows with a base other than ACGT)",
        o.k, tally.kmers, tally.skipped
    );
    Ok(Built { index, names, keys, remarks: Remarks { skipped, notes: vec![note] } })
}

/// Pushes the canonical k-mers of `seq` into `set` as hashes under `seed`;
/// returns how many.
fn push_kmers(set: &mut HashedSet, seq: &[u8], k: KmerLength, seed: u64, tally: &mut Tally) -> u64 {
    let mut kmers = kmer::canonical_kmers(seq, k);
    let before = set.lines;
    for code in kmers.by_ref() {
        set.push(&kmer::key(code), seed);
    }
    let n = set.lines - before;
    tally.kmers += n;
    tally.skipped += kmers.skipped();
    n
}

/// `build --seqs` sized from the data: the canonical k-mers of every file
/// (or record) of `path` as hashes under `seed`, each set's repeats
/// dropped.
pub fn read_hashed(path: &Path, o: SeqOptions, seed: u64) -> Result<HashedSets, CliError> {
    let mut skipped = Vec::new();
    let files = seq_files(path, o.recursive, &mut skipped)?;
    let mut sets: Vec<HashedSet> = Vec::new();
    let mut tally = Tally::default();
    if o.by_record {
        let mut seen: HashSet<Vec<u8>> = HashSet::new();
        let mut empty = 0u64;
        for (file, _) in &files {
            for_each_record(file, |r| {
                check_record_name(&mut seen, file, &r)?;
                let mut set = HashedSet::new(r.name.to_vec());
                if push_kmers(&mut set, r.seq, o.k, seed, &mut tally) == 0 {
                    empty += 1;
                    return Ok(());
                }
                set.finish();
                sets.push(set);
                Ok(())
            })?;
        }
        if empty > 0 {
            skipped.push(format!("{empty} records (shorter than k = {} or without a k-mer of ACGT)", o.k));
        }
    } else {
        for (file, name) in files {
            let mut set = HashedSet::new(name);
            for_each_record(&file, |r| {
                push_kmers(&mut set, r.seq, o.k, seed, &mut tally);
                Ok(())
            })?;
            if set.lines == 0 {
                skipped.push(format!("{} (no k-mers of length {})", plain(&set.name), o.k));
                continue;
            }
            set.finish();
            sets.push(set);
        }
    }
    if sets.is_empty() {
        return Err(no_kmers(path, o.k));
    }
    let note = format!(
        "k-mers: k = {}, {} indexed (canonical), {} skipped (windows with a base other than ACGT)",
        o.k, tally.kmers, tally.skipped
    );
    Ok(HashedSets { sets, remarks: Remarks { skipped, notes: vec![note] } })
}

fn no_kmers(path: &Path, k: KmerLength) -> CliError {
    CliError::Runtime(format!(
        "{} holds no k-mers of length {k}: nothing to index (check the path, and that the files are FASTA or FASTQ)",
        path.display()
    ))
}

/// Options of `query --seqs`.
pub struct QueryOptions<'a> {
    /// The index file (for messages).
    pub index_path: &'a Path,
    /// The reads (`-` is stdin).
    pub reads: &'a Path,
    /// The k-mer length the user expects, if given.
    pub k: Option<usize>,
    /// Fraction of a read's k-mers a set must hold.
    pub threshold: f64,
    /// JSON output.
    pub json: bool,
}

/// The k-mer length of a sequence index, checked against the one asked for.
fn index_kmer_length(index: &SetIndex, o: &QueryOptions<'_>) -> Result<KmerLength, CliError> {
    let path = o.index_path.display();
    let Some(k) = index.kmer_length() else {
        return Err(CliError::Runtime(format!(
            "{path} is not a sequence index (it records no k-mer length): build one with `bloomslice build IDX --seqs DIR --kmer K`"
        )));
    };
    match o.k {
        Some(want) if want != k.get() => Err(CliError::Runtime(format!(
            "{path} holds k-mers of length {k}, not {want}: pass --kmer {k}, or build an index with --kmer {want}"
        ))),
        _ => Ok(k),
    }
}

/// Reads waiting to be scored: their k-mer keys end to end, and where
/// each read's keys and name are.
#[derive(Default)]
struct ReadBatch {
    keys: Vec<[u8; 8]>,
    names: Vec<u8>,
    /// `(end of name in names, end of keys in keys, skipped k-mers)`.
    reads: Vec<(usize, usize, u64)>,
}

/// Reads per batch at most, whatever their k-mers (reads without k-mers
/// take no key space).
const BATCH_READS: usize = 4096;

impl ReadBatch {
    fn push(&mut self, name: &[u8], seq: &[u8], k: KmerLength) {
        let mut kmers = kmer::canonical_kmers(seq, k);
        self.keys.extend(kmers.by_ref().map(kmer::key));
        self.names.extend_from_slice(name);
        self.reads.push((self.names.len(), self.keys.len(), kmers.skipped()));
    }

    fn is_full(&self) -> bool {
        self.keys.len() >= input::QUERY_CHUNK || self.reads.len() >= BATCH_READS
    }

    fn clear(&mut self) {
        self.keys.clear();
        self.names.clear();
        self.reads.clear();
    }
}

/// Scores and prints a batch of reads, one library call per read, then
/// flushes: answers leave batch by batch as reads arrive.
struct Scorer<'a> {
    index: &'a SetIndex,
    names: &'a SetNames,
    threshold: Threshold,
    json: bool,
    hits: Vec<(u64, u32)>,
    line: String,
    records: u64,
    scored: u64,
    skipped: u64,
}

impl Scorer<'_> {
    fn score(&mut self, batch: &ReadBatch, out: &mut impl Write) -> std::io::Result<()> {
        let (mut name_start, mut keys_start) = (0, 0);
        for &(name_end, keys_end, skipped) in &batch.reads {
            let name = &batch.names[name_start..name_end];
            let keys = &batch.keys[keys_start..keys_end];
            (name_start, keys_start) = (name_end, keys_end);
            // A set holding none of the read's k-mers is never a match.
            let min = self.threshold.min_count(keys.len()).max(1);
            if keys.is_empty() {
                self.hits.clear();
            } else {
                self.hits = self.index.query_threshold(keys, Threshold::count(min));
            }
            let names = self.names;
            self.hits
                .sort_by(|a, b| b.1.cmp(&a.1).then_with(|| names.name(a.0).cmp(&names.name(b.0))).then(a.0.cmp(&b.0)));
            self.records += 1;
            self.scored += keys.len() as u64;
            self.skipped += skipped;
            if self.json {
                let mut obj = serde_json::Map::new();
                escape::put_bytes(&mut obj, "record", name);
                obj.insert("kmers".into(), keys.len().into());
                obj.insert("skipped".into(), skipped.into());
                obj.insert("min_count".into(), min.into());
                let matches: Vec<serde_json::Value> = self
                    .hits
                    .iter()
                    .map(|&(id, c)| {
                        let mut m = serde_json::Map::new();
                        escape::put_set(&mut m, "set", names, id);
                        m.insert("count".into(), c.into());
                        serde_json::Value::Object(m)
                    })
                    .collect();
                obj.insert("matches".into(), matches.into());
                writeln!(out, "{}", serde_json::Value::Object(obj))?;
            } else {
                let line = &mut self.line;
                line.clear();
                line.push_str(&plain(name));
                line.push('\t');
                for (i, &(id, c)) in self.hits.iter().enumerate() {
                    if i > 0 {
                        line.push(',');
                    }
                    line.push_str(&set_name(names, id));
                    line.push(':');
                    line.push_str(&c.to_string());
                }
                writeln!(out, "{line}")?;
            }
        }
        out.flush()
    }
}

/// `query --seqs`: for each read, the sets that hold at least the
/// threshold fraction of its k-mers, with counts; a summary on stderr.
/// Reads are parsed into batches of up to 64 Ki k-mers, and each batch is
/// scored and printed before the next is read.
pub fn query(index: &SetIndex, names: &SetNames, o: &QueryOptions<'_>) -> Result<(), CliError> {
    let k = index_kmer_length(index, o)?;
    let threshold = Threshold::fraction(o.threshold)
        .map_err(|_| CliError::Usage(format!("--threshold must be a fraction in [0, 1], got {}", o.threshold)))?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    let write = |r: std::io::Result<()>| r.map_err(|e| CliError::Runtime(format!("cannot write output: {e}")));
    let start = Instant::now();
    let mut scorer = Scorer {
        index,
        names,
        threshold,
        json: o.json,
        hits: Vec::new(),
        line: String::new(),
        records: 0,
        scored: 0,
        skipped: 0,
    };
    let mut batch = ReadBatch::default();
    for_each_record(o.reads, |r| {
        batch.push(r.name, r.seq, k);
        if batch.is_full() {
            write(scorer.score(&batch, &mut out))?;
            batch.clear();
        }
        Ok(())
    })?;
    write(scorer.score(&batch, &mut out))?;
    let Scorer { records, scored, skipped, .. } = scorer;
    // An empty pipeline (`--seqs -`) has no reads to answer; an empty file
    // given by name is more likely a mistake.
    if records == 0 && o.reads != Path::new("-") {
        return Err(CliError::Runtime(format!(
            "{} holds no FASTA or FASTQ records: nothing to query",
            o.reads.display()
        )));
    }
    let took = start.elapsed().as_secs_f64().max(1e-9);
    eprintln!(
        "records: {records}, k-mers scored: {scored}, k-mers skipped: {skipped} (non-ACGT), {:.2} s, {:.0} k-mers/s",
        took,
        scored as f64 / took
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `(name, sequence, line)` of each record.
    type Records = Vec<(Vec<u8>, Vec<u8>, u64)>;

    fn records(text: &[u8]) -> Result<Records, String> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.fa");
        std::fs::write(&path, text).unwrap();
        let mut out = Vec::new();
        for_each_record(&path, |r| {
            out.push((r.name.to_vec(), r.seq.to_vec(), r.line));
            Ok(())
        })
        .map_err(|e| match e {
            CliError::Runtime(m) | CliError::Usage(m) => m.replace(&path.display().to_string(), "r.fa"),
        })?;
        Ok(out)
    }

    #[test]
    fn fasta_and_fastq_records_and_their_names() {
        let got = records(b">g1 some description\nACGT\nacgt\n>g2\nNNAC\n").unwrap();
        assert_eq!(got[0], (b"g1".to_vec(), b"ACGTacgt".to_vec(), 1));
        assert_eq!(got[1].0, b"g2");
        let got = records(b"@r1\nACGT\n+\nIIII\n@r2\tx\nA\n+\nI\n").unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!((got[1].0.as_slice(), got[1].2), (&b"r2"[..], 5));
        assert!(records(b"").unwrap().is_empty());
    }

    #[test]
    fn bad_files_are_one_line_errors_with_the_file_and_line() {
        let e = records(b"hello\nworld\n").unwrap_err();
        assert!(e.starts_with("r.fa:1: not a FASTA or FASTQ file"), "{e}");
        let e = records(b"@r1\nACGT\n+\nIIII\n@r2\nACGT\n-\nIIII\n").unwrap_err();
        assert!(e.starts_with("r.fa:") && e.contains("not valid FASTA/FASTQ"), "{e}");
        let e = records(b"@r1\nACGT\n+\nII\n").unwrap_err();
        assert!(e.contains("r.fa:1:") && e.contains("quality"), "{e}");
        assert!(!e.contains('\n'), "{e}");
    }
}
