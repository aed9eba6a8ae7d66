//! The sequence-search benchmark of `bench/RESULTS.md`, section "Scoring".
//!
//! - `seqs_bench gen DIR [GENOMES] [GENOME_LEN] [READS] [READ_LEN] [RATE]`
//!   writes `DIR/genomes/gNNNN.fa` (random genomes) and `DIR/reads.fq`
//!   (reads sampled from them, either strand, each base substituted with
//!   probability RATE), deterministically.
//! - `seqs_bench score INDEX READS [THRESHOLD]` is the library route that
//!   `bloomslice query --seqs` takes, without the CLI around it: the reads
//!   are parsed into memory first, then timed are k-mer extraction
//!   (`bloomslice::kmer`) and scoring, one call per read, through the very
//!   library call the CLI makes (`SlicedIndex::query_threshold_into`). It prints k-mers scored per
//!   second and a checksum of the matches (to compare with the CLI's output).

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use bloomslice::kmer;

#[path = "../tests/common/splitmix.rs"]
mod splitmix;
use splitmix::Rng;

fn arg<T: std::str::FromStr>(args: &[String], i: usize, default: T) -> T {
    args.get(i).and_then(|s| s.parse().ok()).unwrap_or(default)
}

fn generate(dir: &Path, args: &[String]) -> std::io::Result<()> {
    let (n_genomes, genome_len) = (arg(args, 3, 1000usize), arg(args, 4, 10_000usize));
    let (n_reads, read_len, rate) = (arg(args, 5, 10_000usize), arg(args, 6, 150usize), arg(args, 7, 0.01f64));
    let mut rng = Rng::new(2026);
    std::fs::create_dir_all(dir.join("genomes"))?;
    let mut genomes = Vec::with_capacity(n_genomes);
    for g in 0..n_genomes {
        let seq: Vec<u8> = (0..genome_len).map(|_| b"ACGT"[rng.below(4)]).collect();
        let mut out = std::io::BufWriter::new(std::fs::File::create(dir.join("genomes").join(format!("g{g:04}.fa")))?);
        writeln!(out, ">g{g:04}")?;
        for line in seq.chunks(80) {
            out.write_all(line)?;
            out.write_all(b"\n")?;
        }
        genomes.push(seq);
    }
    let mut out = std::io::BufWriter::new(std::fs::File::create(dir.join("reads.fq"))?);
    let qual = vec![b'I'; read_len];
    for r in 0..n_reads {
        let g = rng.below(n_genomes);
        let start = rng.below(genome_len - read_len);
        let mut read = genomes[g][start..start + read_len].to_vec();
        if rng.below(2) == 1 {
            read = read.iter().rev().map(|&b| b"TGCA"[kmer::encode_base(b).unwrap_or(0) as usize]).collect();
        }
        for b in &mut read {
            if rng.unit() < rate {
                *b = b"ACGT".iter().copied().filter(|c| c != b).nth(rng.below(3)).unwrap_or(b'A');
            }
        }
        writeln!(out, "@read{r}_from_g{g:04}")?;
        out.write_all(&read)?;
        out.write_all(b"\n+\n")?;
        out.write_all(&qual)?;
        out.write_all(b"\n")?;
    }
    out.flush()?;
    println!(
        "wrote {n_genomes} genomes of {genome_len} bases and {n_reads} reads of {read_len} bases to {}",
        dir.display()
    );
    Ok(())
}

fn score_reads(index_path: &Path, reads_path: &Path, threshold: f64) -> Result<(), String> {
    let loaded = bloomslice::Loaded::<bloomslice::SlicedIndex>::load(index_path)
        .map_err(|e| format!("{}: {e}", index_path.display()))?;
    let index = &loaded.index;
    let k = index.kmer_length().ok_or("not a sequence index")?;
    let mut reader = needletail::parse_fastx_file(reads_path).map_err(|e| e.to_string())?;
    let mut reads = Vec::new();
    while let Some(r) = reader.next() {
        reads.push(r.map_err(|e| e.to_string())?.seq().into_owned());
    }
    let threshold = bloomslice::Threshold::fraction(threshold).map_err(|e| e.to_string())?;
    let (mut keys, mut scratch, mut hits) = (Vec::new(), bloomslice::Scores::new(), Vec::new());
    let mut best = f64::INFINITY;
    let (mut scored, mut checksum) = (0u64, 0u64);
    for _ in 0..3 {
        let start = Instant::now();
        (scored, checksum) = (0, 0);
        for seq in &reads {
            keys.clear();
            keys.extend(kmer::canonical_kmers(seq, k).map(kmer::key));
            if keys.is_empty() {
                continue;
            }
            let min = threshold.min_count(keys.len()).max(1);
            index.query_threshold_into(&keys, bloomslice::Threshold::count(min), &mut scratch, &mut hits);
            scored += keys.len() as u64;
            checksum += hits.iter().map(|&(id, c)| id + u64::from(c)).sum::<u64>();
        }
        best = best.min(start.elapsed().as_secs_f64());
    }
    println!(
        "library route: {} reads, {scored} k-mers in {best:.3} s (best of 3): {:.0} k-mers/s; matches checksum {checksum}",
        reads.len(),
        scored as f64 / best
    );
    Ok(())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let result = match (args.get(1).map(String::as_str), args.get(2), args.get(3)) {
        (Some("gen"), Some(dir), _) => generate(Path::new(dir), &args).map_err(|e| e.to_string()),
        (Some("score"), Some(index), Some(reads)) => {
            score_reads(Path::new(index), Path::new(reads), arg(&args, 4, 0.8))
        }
        _ => {
            Err("usage: seqs_bench gen DIR [GENOMES GENOME_LEN READS READ_LEN RATE] | score INDEX READS [THRESHOLD]"
                .into())
        }
    };
    if let Err(e) = result {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
