//! Sequence search through the real binary: random genomes become sets
//! (`build --seqs`, per file and per record, plain and gzip), reads sampled
//! from them with substitutions at a known rate find their source
//! (`query --seqs`), and every reported count equals a naive count: the
//! read's k-mers computed here from strings, asked one by one of each set's
//! filter. Bad input is a one-line error naming the file and line.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::Path;
use std::process::Output;

use bloomslice::persist;

#[expect(dead_code, reason = "not every test binary uses every shared helper")]
mod common;
use common::{bin, fails, ok, run, run_stdin, spawn_piped, wait_with_peak};

#[path = "common/splitmix.rs"]
mod splitmix;
use splitmix::Rng;

fn genome(rng: &mut Rng, len: usize) -> Vec<u8> {
    let mut g: Vec<u8> = (0..len).map(|_| b"ACGT"[rng.below(4)]).collect();
    // Some soft-masked (lowercase) stretches and an N run, as real assemblies have.
    let start = rng.below(len - 100);
    g[start..start + 60].make_ascii_lowercase();
    let start = rng.below(len - 100);
    g[start..start + 5].fill(b'N');
    g
}

fn revcomp(seq: &[u8]) -> Vec<u8> {
    seq.iter()
        .rev()
        .map(|&b| match b.to_ascii_uppercase() {
            b'A' => b'T',
            b'C' => b'G',
            b'G' => b'C',
            b'T' => b'A',
            other => other,
        })
        .collect()
}

/// A read of `len` bases from `g` at a random place and strand, each base
/// substituted with probability `rate`, sometimes with an N.
fn read(rng: &mut Rng, g: &[u8], len: usize, rate: f64) -> Vec<u8> {
    let start = rng.below(g.len() - len);
    let mut r = g[start..start + len].to_ascii_uppercase();
    if rng.unit() <= 0.5 {
        r = revcomp(&r);
    }
    for b in &mut r {
        if rng.unit() <= rate {
            let others: Vec<u8> = b"ACGT".iter().copied().filter(|c| c != b).collect();
            *b = others[rng.below(3)];
        }
    }
    if rng.unit() <= 0.2 {
        let at = rng.below(len);
        r[at] = b'N';
    }
    r
}

/// The reference k-mer keys of `seq`: every window whose bytes are all
/// `ACGTacgt`, as the smaller (as a string) of it and its reverse
/// complement, 2-bit encoded (A0 C1 G2 T3, first base highest), little
/// endian; and the number of windows skipped.
fn naive_kmers(seq: &[u8], k: usize) -> (Vec<[u8; 8]>, u64) {
    let (mut keys, mut skipped) = (Vec::new(), 0);
    for w in seq.windows(k) {
        if !w.iter().all(|b| b"ACGTacgt".contains(b)) {
            skipped += 1;
            continue;
        }
        let up = w.to_ascii_uppercase();
        let canon = up.clone().min(revcomp(&up));
        let code = canon.iter().fold(0u64, |c, b| c << 2 | b"ACGT".iter().position(|x| x == b).unwrap() as u64);
        keys.push(code.to_le_bytes());
    }
    (keys, skipped)
}

fn fasta(records: &[(String, Vec<u8>)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, seq) in records {
        writeln!(out, ">{name} random genome").unwrap();
        // 70 bases per line, as FASTA files wrap.
        for line in seq.chunks(70) {
            out.extend_from_slice(line);
            out.push(b'\n');
        }
    }
    out
}

fn fastq(records: &[(String, Vec<u8>)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, seq) in records {
        writeln!(out, "@{name}").unwrap();
        out.extend_from_slice(seq);
        writeln!(out, "\n+\n{}", "I".repeat(seq.len())).unwrap();
    }
    out
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

/// One record of `query --seqs --json`.
#[derive(Debug, PartialEq)]
struct Answer {
    kmers: u64,
    skipped: u64,
    min_count: u64,
    matches: BTreeMap<String, u64>,
}

fn parse_json(out: &str) -> BTreeMap<String, Answer> {
    out.lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            let matches = v["matches"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| (m["set"].as_str().unwrap().to_owned(), m["count"].as_u64().unwrap()))
                .collect();
            let n = |f: &str| v[f].as_u64().unwrap();
            let answer = Answer { kmers: n("kmers"), skipped: n("skipped"), min_count: n("min_count"), matches };
            (v["record"].as_str().unwrap().to_owned(), answer)
        })
        .collect()
}

fn parse_plain(out: &str) -> BTreeMap<String, BTreeMap<String, u64>> {
    out.lines()
        .map(|l| {
            let (read, sets) = l.split_once('\t').unwrap();
            let sets = sets
                .split(',')
                .filter(|s| !s.is_empty())
                .map(|s| {
                    let (name, c) = s.rsplit_once(':').unwrap();
                    (name.to_owned(), c.parse().unwrap())
                })
                .collect();
            (read.to_owned(), sets)
        })
        .collect()
}

/// Every set of a collection file: its name and its filters (one per
/// part it has grown into).
fn set_filters(index: &Path) -> Vec<(String, Vec<bloomslice::BloomFilter>)> {
    let loaded = persist::load(index).unwrap();
    let c = &loaded.index;
    let parts: Vec<&bloomslice::SlicedIndex> = c.parts().collect();
    let mut ids: Vec<u64> = c.ids().collect();
    ids.sort_unstable();
    ids.into_iter()
        .map(|id| {
            let name = String::from_utf8(loaded.names.name(id).unwrap().to_vec()).unwrap();
            let filters = c.filters(id).unwrap().iter().map(|f| parts[f.part].filter_cloned(id).unwrap()).collect();
            (name, filters)
        })
        .collect()
}

/// What `query --seqs` must answer, computed without the binary: the
/// filters of the index file, asked for each naive k-mer.
fn expected(index: &Path, reads: &[(String, Vec<u8>)], k: usize, threshold: f64) -> BTreeMap<String, Answer> {
    let filters = set_filters(index);
    reads
        .iter()
        .map(|(name, seq)| {
            let (keys, skipped) = naive_kmers(seq, k);
            let min = ((threshold * keys.len() as f64 - 1e-9).ceil() as u64).max(1);
            let matches = filters
                .iter()
                .map(|(set, fs)| {
                    (set.clone(), keys.iter().filter(|key| fs.iter().any(|f| f.contains(*key))).count() as u64)
                })
                .filter(|&(_, c)| c >= min && !keys.is_empty())
                .collect();
            (name.clone(), Answer { kmers: keys.len() as u64, skipped, min_count: min, matches })
        })
        .collect()
}

/// Checks that the index's filter of each genome is exactly the filter of
/// its naive k-mers (so `build --seqs` indexed the right keys).
fn check_filters(index: &Path, genomes: &[(String, Vec<u8>)], k: usize) {
    let loaded = persist::load(index).unwrap();
    let c = &loaded.index;
    assert_eq!(c.kmer_length().map(|k| k.get()), Some(k));
    assert_eq!(c.len(), genomes.len());
    let parts: Vec<&bloomslice::SlicedIndex> = c.parts().collect();
    for (name, seq) in genomes {
        let id = loaded.names.id(name.as_bytes()).unwrap_or_else(|| panic!("set {name} is in the index"));
        let filters = c.filters(id).unwrap();
        assert_eq!(filters.len(), 1, "{name}");
        let part = parts[filters[0].part];
        let mut want = bloomslice::BloomFilter::new(*part.params()).unwrap();
        for key in naive_kmers(seq, k).0 {
            want.insert(&key);
        }
        assert_eq!(part.filter_cloned(id).unwrap(), want, "{name}");
    }
}

fn stderr(out: &Output) -> String {
    String::from_utf8(out.stderr.clone()).unwrap()
}

struct Fixture {
    dir: tempfile::TempDir,
    genomes: Vec<(String, Vec<u8>)>,
    reads: Vec<(String, Vec<u8>)>,
    /// The genome each read came from.
    source: BTreeMap<String, String>,
}

const K: usize = 21;
const SUBSTITUTIONS: f64 = 0.01;

fn fixture(seed: u64, n_genomes: usize, n_reads: usize) -> Fixture {
    let mut rng = Rng::new(seed);
    let dir = tempfile::tempdir().unwrap();
    let genomes: Vec<(String, Vec<u8>)> =
        (0..n_genomes).map(|i| (format!("g{i:02}"), genome(&mut rng, 3000 + 100 * i))).collect();
    let (mut reads, mut source) = (Vec::new(), BTreeMap::new());
    for r in 0..n_reads {
        let g = rng.below(n_genomes);
        let name = format!("read{r}");
        reads.push((name.clone(), read(&mut rng, &genomes[g].1, 150, SUBSTITUTIONS)));
        source.insert(name, genomes[g].0.clone());
    }
    Fixture { dir, genomes, reads, source }
}

/// No false negatives: each read's source set counts at least the read's
/// k-mers that really occur in the source genome, and is reported whenever
/// those reach the read's minimum count; and at least `share` of the reads
/// (substitutions can destroy most k-mers of an unlucky read) find it.
fn check_sources(got: &BTreeMap<String, Answer>, f: &Fixture, k: usize, share: f64) {
    let mut found = 0;
    for (read, seq) in &f.reads {
        let source = &f.source[read];
        let genome = &f.genomes.iter().find(|g| &g.0 == source).unwrap().1;
        let in_genome: BTreeSet<[u8; 8]> = naive_kmers(genome, k).0.into_iter().collect();
        let true_hits = naive_kmers(seq, k).0.iter().filter(|key| in_genome.contains(*key)).count() as u64;
        let answer = &got[read];
        match answer.matches.get(source) {
            Some(&c) => {
                assert!(c >= true_hits, "{read}: {c} < {true_hits}");
                found += 1;
            }
            None => assert!(true_hits < answer.min_count, "{read} from {source} missed: {answer:?}"),
        }
    }
    assert!(found as f64 >= share * f.reads.len() as f64, "{found} of {} reads found their source", f.reads.len());
}

#[test]
fn reads_find_their_source_and_counts_equal_a_naive_count() {
    let f = fixture(7, 12, 80);
    let d = f.dir.path();
    std::fs::create_dir(d.join("genomes")).unwrap();
    for (i, (name, seq)) in f.genomes.iter().enumerate() {
        let record = [(name.clone(), seq.clone())];
        // One file per genome, named after it: half FASTA, half gzipped FASTA.
        if i % 2 == 0 {
            std::fs::write(d.join("genomes").join(name), fasta(&record)).unwrap();
        } else {
            std::fs::write(d.join("genomes").join(name), gzip(&fasta(&record))).unwrap();
        }
    }
    let k = K.to_string();
    let out = ok(&run(&["build", "g.bsi", "--seqs", "genomes", "--kmer", &k, "--n-exp", "4000", "--fp", "0.01"], d));
    let indexed: usize = f.genomes.iter().map(|g| naive_kmers(&g.1, K).0.len()).sum();
    let skipped: u64 = f.genomes.iter().map(|g| naive_kmers(&g.1, K).1).sum();
    assert!(out.contains(&format!("k-mers: k = {K}, {indexed} indexed (canonical), {skipped} skipped")), "{out}");
    check_filters(&d.join("g.bsi"), &f.genomes, K);
    let inspect = ok(&run(&["inspect", "g.bsi"], d));
    assert!(inspect.contains(&format!("k-mer length: {K} (a sequence index")), "{inspect}");

    std::fs::write(d.join("reads.fq"), fastq(&f.reads)).unwrap();
    // Sized from the genomes' own k-mers: the same answers as its filters give.
    ok(&run(&["build", "sized.bsi", "--seqs", "genomes", "--kmer", &k], d));
    let out = run(&["query", "sized.bsi", "--seqs", "reads.fq", "--threshold", "0.5", "--json"], d);
    let got = parse_json(&ok(&out));
    assert_eq!(got, expected(&d.join("sized.bsi"), &f.reads, K, 0.5));
    check_sources(&got, &f, K, 0.9);
    // 0.99^21 = 0.81 of a read's k-mers survive 1% substitutions on average.
    for threshold in ["0.5", "0.8", "0"] {
        let out = run(&["query", "g.bsi", "--seqs", "reads.fq", "--threshold", threshold, "--json"], d);
        let got = parse_json(&ok(&out));
        let want = expected(&d.join("g.bsi"), &f.reads, K, threshold.parse().unwrap());
        assert_eq!(got, want, "threshold {threshold}");
        let summary = stderr(&out);
        let scored: u64 = want.values().map(|a| a.kmers).sum();
        let skipped: u64 = want.values().map(|a| a.skipped).sum();
        assert!(
            summary.starts_with(&format!(
                "records: {}, k-mers scored: {scored}, k-mers skipped: {skipped} (non-ACGT)",
                f.reads.len()
            )),
            "{summary}"
        );
        assert!(skipped > 0, "some reads hold an N");
        check_sources(&got, &f, K, if threshold == "0.5" { 0.9 } else { 0.0 });
        // Plain output says the same, most k-mers first.
        let plain = ok(&run(&["query", "g.bsi", "--seqs", "reads.fq", "--threshold", threshold], d));
        let plain_sets = parse_plain(&plain);
        for (read, answer) in &got {
            assert_eq!(&plain_sets[read], &answer.matches, "{read}");
        }
        for line in plain.lines() {
            let counts: Vec<u64> = line
                .split_once('\t')
                .unwrap()
                .1
                .split(',')
                .filter(|s| !s.is_empty())
                .map(|s| s.rsplit_once(':').unwrap().1.parse().unwrap())
                .collect();
            assert!(counts.windows(2).all(|w| w[0] >= w[1]), "{line}");
        }
    }
    // The default threshold is 0.8; reads from stdin (gzipped) answer alike.
    let mut child = spawn_piped(&["query", "g.bsi", "--seqs", "-", "--json", "--kmer", &k], d);
    let input = gzip(&fastq(&f.reads));
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(&input).unwrap());
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert_eq!(parse_json(&ok(&out)), expected(&d.join("g.bsi"), &f.reads, K, 0.8));
}

#[test]
fn one_set_per_record_from_one_gzipped_file() {
    let f = fixture(11, 9, 40);
    let d = f.dir.path();
    std::fs::write(d.join("all.fa.gz"), gzip(&fasta(&f.genomes))).unwrap();
    ok(&run(&["build", "r.bsi", "--seqs", "all.fa.gz", "--seqs-by-record", "--kmer", "17", "--n-exp", "4000"], d));
    check_filters(&d.join("r.bsi"), &f.genomes, 17);
    std::fs::write(d.join("reads.fa"), fasta(&f.reads)).unwrap();
    let got = parse_json(&ok(&run(&["query", "r.bsi", "--seqs", "reads.fa", "--threshold", "0.6", "--json"], d)));
    assert_eq!(got, expected(&d.join("r.bsi"), &f.reads, 17, 0.6));
    check_sources(&got, &f, 17, 0.9);
}

#[test]
fn count_and_threshold_over_streamed_chunks_equal_a_naive_count() {
    let d = tempfile::tempdir().unwrap();
    let d = d.path();
    std::fs::create_dir(d.join("sets")).unwrap();
    // Set s holds keys 0 .. 30 000 (s + 1).
    for s in 0..4u64 {
        let keys: String = (0..30_000 * (s + 1)).map(|k| format!("key{k}\n")).collect();
        std::fs::write(d.join("sets").join(format!("s{s}")), keys).unwrap();
    }
    ok(&run(&["build", "i.bsi", "--dir", "sets", "--n-exp", "120000"], d));
    // 150 000 keys: more than two 64 Ki chunks.
    let query: Vec<String> = (0..150_000u64).map(|k| format!("key{}", k * 7 % 200_000)).collect();
    let naive: BTreeMap<String, u64> = set_filters(&d.join("i.bsi"))
        .into_iter()
        .map(|(name, fs)| (name, query.iter().filter(|k| fs.iter().any(|f| f.contains(k.as_bytes()))).count() as u64))
        .collect();
    let input = query.join("\n") + "\n";
    for threshold in [None, Some(0.5)] {
        let mut args = vec!["query", "i.bsi", "--count"];
        let t = threshold.map(|t: f64| t.to_string());
        if let Some(t) = &t {
            args.extend(["--threshold", t]);
        }
        let out = ok(&run_stdin(&args, d, input.as_bytes()));
        let got: BTreeMap<String, u64> = out
            .lines()
            .map(|l| {
                let mut f = l.split('\t');
                (f.next().unwrap().to_owned(), f.next().unwrap().parse().unwrap())
            })
            .collect();
        let min = threshold.map_or(1, |t| (t * query.len() as f64).ceil() as u64);
        let want: BTreeMap<String, u64> = naive.iter().filter(|e| *e.1 >= min).map(|(n, c)| (n.clone(), *c)).collect();
        assert_eq!(got, want, "threshold {threshold:?}");
        assert!(!want.is_empty() && (threshold.is_none() || want.len() < naive.len()), "the test can fail");
    }
}

#[test]
fn bad_sequence_input_is_a_one_line_error_naming_the_file_and_line() {
    let f = fixture(3, 3, 4);
    let d = f.dir.path();
    std::fs::create_dir(d.join("genomes")).unwrap();
    for (name, seq) in &f.genomes {
        std::fs::write(d.join("genomes").join(name), fasta(&[(name.clone(), seq.clone())])).unwrap();
    }
    std::fs::write(d.join("reads.fq"), fastq(&f.reads)).unwrap();
    ok(&run(&["build", "g.bsi", "--seqs", "genomes", "--kmer", "21"], d));
    std::fs::write(d.join("keys.txt"), "apple\npear\n").unwrap();
    std::fs::create_dir(d.join("text")).unwrap();
    std::fs::write(d.join("text").join("fruit"), "apple\npear\n").unwrap();
    ok(&run(&["build", "t.bsi", "--dir", "text"], d));
    // A text file among the genomes.
    std::fs::create_dir(d.join("mixed")).unwrap();
    std::fs::copy(d.join("genomes").join("g00"), d.join("mixed").join("g00")).unwrap();
    std::fs::write(d.join("mixed").join("notes.txt"), "hello\n").unwrap();
    let e = fails(&run(&["build", "m.bsi", "--seqs", "mixed", "--kmer", "21"], d), 1);
    assert!(e.contains("notes.txt:1: not a FASTA or FASTQ file"), "{e}");
    // A FASTQ record broken on line 7.
    std::fs::write(d.join("broken.fq"), "@r1\nACGTACGT\n+\nIIIIIIII\n@r2\nACGTACGT\nIIIIIIII\n").unwrap();
    let e = fails(&run(&["query", "g.bsi", "--seqs", "broken.fq"], d), 1);
    assert!(e.contains("broken.fq:") && e.contains("not valid FASTA/FASTQ"), "{e}");
    let e = fails(&run(&["query", "g.bsi", "--seqs", "keys.txt"], d), 1);
    assert!(e.contains("keys.txt:1: not a FASTA or FASTQ file"), "{e}");
    let e = fails(&run(&["query", "g.bsi", "--seqs", "missing.fq"], d), 1);
    assert!(e.contains("missing.fq"), "{e}");
    // Duplicate record ids name the file and line.
    std::fs::write(d.join("dup.fa"), ">a\nACGTACGTACGTACGTACGTACGT\n>a\nACGTACGTACGTACGTACGTACGTA\n").unwrap();
    let e = fails(&run(&["build", "dup.bsi", "--seqs", "dup.fa", "--seqs-by-record", "--kmer", "5"], d), 1);
    assert!(e.contains("dup.fa:3: record a appears twice"), "{e}");
    // The index and the k-mer length.
    let e = fails(&run(&["query", "t.bsi", "--seqs", "reads.fq"], d), 1);
    assert!(e.contains("t.bsi is not a sequence index"), "{e}");
    let e = fails(&run(&["query", "g.bsi", "--seqs", "reads.fq", "--kmer", "31"], d), 1);
    assert!(e.contains("holds k-mers of length 21, not 31"), "{e}");
    ok(&run(&["query", "g.bsi", "--seqs", "reads.fq", "--kmer", "21"], d));
    let e = fails(&run(&["add", "g.bsi", "--from", "t.bsi"], d), 1);
    assert!(e.contains("t.bsi has k-mer length none but g.bsi has 21"), "{e}");
    // Usage errors.
    for args in [
        &["build", "x.bsi", "--seqs", "genomes"][..],
        &["build", "x.bsi", "--seqs", "genomes", "--kmer", "33"],
        &["build", "x.bsi", "--seqs", "genomes", "--kmer", "0"],
        &["build", "x.bsi", "--seqs", "genomes", "--dir", "text", "--kmer", "21"],
        &["build", "x.bsi", "--dir", "text", "--kmer", "21"],
        &["query", "g.bsi", "--seqs", "reads.fq", "--threshold", "1.5"],
        &["query", "g.bsi", "--seqs", "reads.fq", "--count"],
        &["query", "g.bsi", "--seqs", "reads.fq", "ACGT"],
        &["query", "g.bsi", "--kmer", "21", "ACGT"],
    ] {
        let out = run(args, d);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert_eq!(stderr(&out).lines().count(), 1, "{args:?}: {}", stderr(&out));
    }
    assert!(!d.join("x.bsi").exists() && !d.join("m.bsi").exists());
    // A file with no k-mers of length k builds nothing.
    let e = fails(&run(&["build", "s.bsi", "--seqs", "dup.fa", "--kmer", "32"], d), 1);
    assert!(e.contains("no k-mers of length 32"), "{e}");
    let sets: BTreeSet<String> =
        parse_plain(&ok(&run(&["query", "g.bsi", "--seqs", "reads.fq", "--threshold", "0.3"], d)))
            .into_values()
            .flat_map(BTreeMap::into_keys)
            .collect();
    assert!(!sets.is_empty());
}

#[test]
fn query_seqs_streams_its_reads_in_bounded_memory() {
    let f = fixture(5, 3, 10);
    let d = f.dir.path();
    std::fs::write(d.join("g.fa"), fasta(&f.genomes)).unwrap();
    ok(&run(&["build", "g.bsi", "--seqs", "g.fa", "--kmer", "21"], d));
    // 96 MB of reads: each 2 000 bases, mostly N (skipped k-mers cost no
    // lookups), with one 150-base stretch of a genome.
    let (n, genome) = (48_000usize, &f.genomes[0].1);
    let mut reads = Vec::with_capacity(n * 2020);
    let (mut scored, mut skipped) = (0, 0);
    for r in 0..n {
        let mut seq = vec![b'N'; 2000];
        let at = r % (genome.len() - 150);
        seq[..150].copy_from_slice(&genome[at..at + 150]);
        // Windows that start in the stretch; the 1 830 others are all N.
        let (keys, skip) = naive_kmers(&seq[..170], 21);
        (scored, skipped) = (scored + keys.len(), skipped + skip as usize + 1830);
        writeln!(reads, ">r{r}").unwrap();
        reads.extend_from_slice(&seq);
        reads.push(b'\n');
    }
    std::fs::write(d.join("reads.fa"), &reads).unwrap();
    drop(reads);
    let child = bin()
        .args(["query", "g.bsi", "--seqs", "-", "--threshold", "0.1"])
        .current_dir(d)
        .stdin(std::fs::File::open(d.join("reads.fa")).unwrap())
        .stdout(std::fs::File::create(d.join("out.txt")).unwrap())
        .stderr(std::fs::File::create(d.join("err.txt")).unwrap())
        .spawn()
        .unwrap();
    let (status, peak) = wait_with_peak(child);
    let err = std::fs::read_to_string(d.join("err.txt")).unwrap();
    assert!(status.success(), "{err}");
    eprintln!("query --seqs: 96 MB of reads, peak RSS {} MiB", peak >> 20);
    assert!(peak < 48 << 20, "peak {} MiB", peak >> 20);
    assert!(err.starts_with(&format!("records: {n}, k-mers scored: {scored}, k-mers skipped: {skipped}")), "{err}");
    let out = std::fs::read_to_string(d.join("out.txt")).unwrap();
    assert_eq!(out.lines().count(), n);
    // One set, the file (all genomes): every read is in it.
    assert!(out.lines().all(|l| l.contains("\tg.fa:")), "every read finds its genome");
}
