//! A collection split into column-shard files, queried as one index.
//!
//! `bloomslice split` (or any writer of a [`Manifest`]) stores one
//! collection of sets as several files that share one [`BloomParams`],
//! listed by a manifest (see [`crate::persist::manifest`]). A file is an
//! index file (format 1) or a collection file (format 2, several parts);
//! either opens as a [`SetIndex`] (an index file as a collection of one
//! part, which answers and performs as its [`SlicedIndex`]). A
//! [`ShardedIndex`] opens the manifest and every file it lists, checks
//! each file against its entry, and answers keys, batches and scored
//! queries as the unsplit collection would: a set never straddles files
//! and ids are unique across them, so an answer is the union of the files'
//! answers, and every set appears in it once.
//!
//! Orders, fixed so that answers can be compared and merged anywhere:
//!
//! - **Keys and batches**: the ids of file 0 (in that file's order, see
//!   [`SetIndex::query`]), then those of file 1, and so on in manifest
//!   order.
//! - **Scores and thresholds**: `(id, count)` by ascending id, as
//!   [`SetIndex::score_into`] and [`SetIndex::query_threshold`] give
//!   them.
//!
//! Scoring: every file scores the whole query. A set's count comes from the
//! one file that holds it, so a threshold applied by each file (a fraction
//! is of the query's keys, which every file sees) is the collection's
//! threshold.
//!
//! Where the files are served apart (one process or Ray actor per file, as
//! the Python package's `bloomslice.ray` does), [`merge_answers`] merges
//! their batch answers in the order above.
//!
//! Writing a split: [`write_split`] writes a [`SetIndex`] as the files of
//! [`plan_split`] (runs of ids balanced by bytes, named by
//! [`shard_file_name`]) and their manifest; every front end splits through
//! it.
//!
//! ```
//! use bloomslice::persist::{self, SetNames, Verify};
//! use bloomslice::persist::manifest::{MANIFEST_FILE, Manifest, ManifestParams, ShardFile};
//! use bloomslice::score::Threshold;
//! use bloomslice::sharded::ShardedIndex;
//! use bloomslice::{BatchResults, BloomFilter, BloomParams, SlicedIndex};
//!
//! let dir = std::env::temp_dir().join(format!("bloomslice-sharded-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir)?;
//! // Two files: sets 0..2 ("site-0", "site-1") and 2..4.
//! let params = BloomParams::for_capacity(1_000, 0.01)?;
//! let mut files = Vec::new();
//! for (file, ids) in [("a.bsi", 0..2u64), ("b.bsi", 2..4)] {
//!     let mut index = SlicedIndex::new(params);
//!     let mut names = SetNames::new();
//!     for id in ids {
//!         let mut filter = BloomFilter::new(params)?;
//!         for doc in 0..100u64 {
//!             filter.insert(&(id * 1000 + doc).to_le_bytes());
//!         }
//!         index.insert_filter(id, &filter)?;
//!         names.insert(id, format!("site-{id}"))?;
//!     }
//!     persist::save(dir.join(file), &index, &names)?;
//!     files.push(ShardFile::describe(&dir, file, &index, &names)?);
//! }
//! Manifest { params: ManifestParams::of(&params), files }.write(&dir.join(MANIFEST_FILE))?;
//!
//! // Verify::Full also compares every file with its recorded checksum.
//! let sharded = ShardedIndex::load(&dir, Verify::Full)?;
//! assert_eq!((sharded.shard_count(), sharded.len()), (2, 4));
//! assert!(sharded.query(&3_042u64.to_le_bytes()).contains(&3));
//! assert_eq!(sharded.names().id(b"site-3"), Some(3));
//!
//! let keys: Vec<[u8; 8]> = [42u64, 2_042].map(u64::to_le_bytes).to_vec();
//! let mut results = BatchResults::new();
//! sharded.query_batch(&keys, &mut results);
//! assert!(results.get(1).unwrap().contains(&2));
//!
//! // Who holds at least 80% of these 50 documents of site 1?
//! let read: Vec<[u8; 8]> = (1_000..1_050u64).map(u64::to_le_bytes).collect();
//! let hits = sharded.query_threshold(&read, Threshold::fraction(0.8)?);
//! assert!(hits.contains(&(1, 50)));
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::mem::MaybeUninit;
use std::path::{Path, PathBuf};

use crate::collection::SetIndex;
use crate::error::{Error, Result};
use crate::hash::{Key, KeyHash};
use crate::kmer::KmerLength;
use crate::params::BloomParams;
use crate::persist::collection::Loads;
use crate::persist::manifest::{self, Manifest};
use crate::persist::{self, Loaded, SetNames, Verify};
use crate::score::Scores;
use crate::sliced::BatchResults;
#[cfg(any(doc, test))]
use crate::sliced::SlicedIndex;

mod split;
pub use split::{plan_split, shard_file_name, write_split};

/// The files of a manifest, opened, checked against it, and queried as one
/// index (see the [module docs](self) for the answers' order).
///
/// ```
/// use bloomslice::persist::Verify;
/// use bloomslice::sharded::ShardedIndex;
/// # use bloomslice::persist::{self, SetNames};
/// # use bloomslice::persist::manifest::{MANIFEST_FILE, Manifest, ManifestParams, ShardFile};
/// # use bloomslice::{BloomFilter, BloomParams, SlicedIndex};
/// # let dir = std::env::temp_dir().join(format!("bloomslice-sharded-type-doc-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir)?;
/// # let params = BloomParams::for_capacity(1_000, 0.01)?;
/// # let mut files = Vec::new();
/// # for (file, id) in [("a.bsi", 0u64), ("b.bsi", 1)] {
/// #     let (mut index, mut names) = (SlicedIndex::new(params), SetNames::new());
/// #     let mut filter = BloomFilter::new(params)?;
/// #     filter.insert(&(100 + id).to_le_bytes());
/// #     index.insert_filter(id, &filter)?;
/// #     names.insert(id, format!("set-{id}"))?;
/// #     persist::save(dir.join(file), &index, &names)?;
/// #     files.push(ShardFile::describe(&dir, file, &index, &names)?);
/// # }
/// # Manifest { params: ManifestParams::of(&params), files }.write(&dir.join(MANIFEST_FILE))?;
/// // `dir` holds a manifest of two files (as `bloomslice split` writes),
/// // with set 0 in the first and set 1 in the second.
/// let sharded = ShardedIndex::load(&dir, Verify::Full)?;
/// assert_eq!((sharded.shard_count(), sharded.len()), (2, 2));
/// assert_eq!(sharded.query(&101u64.to_le_bytes()), [1]);
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct ShardedIndex {
    /// The manifest file it was opened from.
    path: PathBuf,
    manifest: Manifest,
    /// One per manifest entry, in manifest order.
    shards: Vec<Loaded>,
    /// The names of every file's sets.
    names: SetNames,
    /// The manifest's parameters.
    params: BloomParams,
}

impl ShardedIndex {
    /// Reads the manifest at `path` (a manifest file or its directory, see
    /// [`manifest::manifest_path`]) and every file it lists into memory
    /// (each fully verified, as [`persist::load`] does; index
    /// files and collection files alike). With
    /// [`Verify::Full`] every file's size and checksum is first compared
    /// with the manifest's record.
    ///
    /// # Errors
    ///
    /// [`Error::Io`] if a file cannot be read; [`Error::Manifest`] if the
    /// manifest is invalid, a file differs from its record or entry
    /// (parameters, ids, names), or the files disagree on their k-mer
    /// length; the errors of [`persist::load`] for a corrupt
    /// file.
    pub fn load(path: impl AsRef<Path>, verify: Verify) -> Result<Self> {
        Self::open_with(path.as_ref(), verify, |file| persist::collection::load_collection_with(file, Loads::Cheap))
    }

    /// [`ShardedIndex::load`] with every file memory-mapped
    /// ([`persist::open_mmap`]): opening costs the manifest and
    /// the files' small tables. With [`Verify::Full`] the files are
    /// compared with the manifest's checksums and fully verified; with
    /// [`Verify::Deferred`] neither (their row checksums wait, as
    /// [`persist::open_mmap`] describes).
    ///
    /// # Safety
    ///
    /// The contract of [`persist::open_mmap`], for every file the manifest
    /// lists: none may be truncated or written in place while the returned
    /// index (or a clone of it) is alive. Replacing a file by rename, as
    /// [`persist::save`] and the manifest's writers
    /// ([`manifest::add_set`], [`manifest::remove_set`]) do, is fine.
    ///
    /// # Errors
    ///
    /// As [`ShardedIndex::load`].
    pub unsafe fn open_mmap(path: impl AsRef<Path>, verify: Verify) -> Result<Self> {
        // SAFETY: forwarded to the caller (this function's `# Safety`).
        Self::open_with(path.as_ref(), verify, |file| unsafe {
            persist::collection::open_collection_mmap_with(file, verify, Loads::Cheap)
        })
    }

    fn open_with(path: &Path, verify: Verify, open: impl Fn(&Path) -> Result<Loaded>) -> Result<Self> {
        let path = manifest::manifest_path(path);
        let manifest = Manifest::read(&path)?;
        let dir = manifest::manifest_dir(&path);
        if verify == Verify::Full {
            manifest.verify_files(&dir)?;
        }
        let params = manifest_params(&manifest).map_err(|e| in_manifest(&path, e))?;
        let mut shards: Vec<Loaded> = Vec::with_capacity(manifest.files.len());
        let mut names = SetNames::new();
        for i in 0..manifest.files.len() {
            let loaded = open(&manifest.file_path(&dir, i))?;
            manifest.check_collection(i, &loaded).map_err(|e| in_manifest(&path, e))?;
            if let Some(first) = shards.first()
                && first.index.kmer_length() != loaded.index.kmer_length()
            {
                let k = |k: Option<KmerLength>| k.map_or_else(|| "none".to_owned(), |k| k.to_string());
                return Err(in_manifest(
                    &path,
                    Error::Manifest(format!(
                        "{} has k-mer length {} but {} has {}: the files of one collection share it",
                        manifest.files[i].file,
                        k(loaded.index.kmer_length()),
                        manifest.files[0].file,
                        k(first.index.kmer_length())
                    )),
                ));
            }
            for (id, name) in loaded.names.iter() {
                names.insert(id, name.to_vec())?;
            }
            shards.push(loaded);
        }
        Ok(ShardedIndex { path, manifest, shards, names, params })
    }

    /// The manifest file this index was opened from.
    pub fn manifest_path(&self) -> &Path {
        &self.path
    }

    /// The manifest, as read when opening.
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// The opened files, in manifest order (an index file as a collection
    /// of one part; as the sharded index never changes them, the loads of
    /// such a file's sets are estimated from its shards' bit counts, which
    /// reads no row, rather than from each set's column as
    /// [`persist::load`] does).
    pub fn shards(&self) -> &[Loaded] {
        &self.shards
    }

    /// Number of files.
    pub fn shard_count(&self) -> usize {
        self.shards.len()
    }

    /// The parameters of the manifest: those of every index file and of
    /// every collection file's first part. Their seed is what a key's
    /// hash ([`BloomParams::hash`]) depends on, for every part of every
    /// file.
    pub fn params(&self) -> &BloomParams {
        &self.params
    }

    /// The k-mer length every file shares, for a sequence collection.
    pub fn kmer_length(&self) -> Option<KmerLength> {
        self.shards[0].index.kmer_length()
    }

    /// The names of the sets of every file.
    pub fn names(&self) -> &SetNames {
        &self.names
    }

    /// Number of sets across all files.
    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| s.index.len()).sum()
    }

    /// Whether no file holds a set.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every set id, file after file (each file's in no particular order).
    pub fn ids(&self) -> impl Iterator<Item = u64> + '_ {
        self.shards.iter().flat_map(|s| s.index.ids())
    }

    /// Bytes of memory the files' collections hold (rows, mapped rows
    /// included, and maps; [`SetIndex::memory_bytes`] summed).
    pub fn memory_bytes(&self) -> usize {
        self.shards.iter().map(|s| s.index.memory_bytes()).sum()
    }

    /// Whether some file reads (some of) its rows from a memory map.
    pub fn is_mapped(&self) -> bool {
        self.shards.iter().any(Loaded::is_mapped)
    }

    /// The ids of the sets that may contain `key` (see the module docs for
    /// their order).
    pub fn query<K: Key + ?Sized>(&self, key: &K) -> Vec<u64> {
        let mut out = Vec::new();
        self.query_into(key, &mut out);
        out
    }

    /// [`ShardedIndex::query`] into `out` (cleared first).
    pub fn query_into<K: Key + ?Sized>(&self, key: &K, out: &mut Vec<u64>) {
        self.query_hash_into(self.params().hash(key), out);
    }

    /// [`ShardedIndex::query_into`] for a key hashed already: every file
    /// appends its answer to `out`, so once `out` is warm it allocates
    /// nothing.
    pub fn query_hash_into(&self, hash: KeyHash, out: &mut Vec<u64>) {
        out.clear();
        for shard in &self.shards {
            shard.index.query_hash_append(hash, out);
        }
    }

    /// Answers a batch of keys into `results`: every file answers the whole
    /// batch ([`SetIndex::query_batch`], hashed once per file), and the
    /// answers are merged key by key. Keys already hashed are
    /// [`KeyHash`]es. Once `results` is warm, allocates nothing.
    pub fn query_batch<K: Key>(&self, keys: &[K], results: &mut BatchResults) {
        self.merge_files(keys.len(), results, |collection, part| batch(collection, keys, part));
    }

    /// [`ShardedIndex::query_batch`] for keys already hashed.
    pub fn query_batch_hashes(&self, hashes: &[KeyHash], results: &mut BatchResults) {
        self.query_batch(hashes, results);
    }

    /// Has every file answer a batch of `n` keys through `answer`, then
    /// merges the answers key by key into `results` (the files' own answers
    /// go to buffers `results` keeps warm).
    fn merge_files(&self, n: usize, results: &mut BatchResults, mut answer: impl FnMut(&SetIndex, &mut BatchResults)) {
        if let [one] = self.shards.as_slice() {
            answer(&one.index, results);
            return;
        }
        let (mut parts, mut key_ids) = results.take_merge_buffers();
        parts.resize_with(self.shards.len(), BatchResults::new);
        for (shard, part) in self.shards.iter().zip(parts.iter_mut()) {
            answer(&shard.index, part);
        }
        results.clear();
        for key in 0..n {
            key_ids.clear();
            for part in parts.iter() {
                key_ids.extend_from_slice(part.get(key).unwrap_or_default());
            }
            results.push_answer(&key_ids);
        }
        results.put_merge_buffers(parts, key_ids);
    }

    /// Whether some file holds set `id`.
    pub fn contains(&self, id: u64) -> bool {
        self.shards.iter().any(|s| s.index.contains(id))
    }

    /// Scores the query `keys` against every set of every file: afterwards
    /// `scores` holds, for every set, how many of the keys it may contain
    /// ([`SetIndex::score_into`]), by ascending id.
    pub fn score_into<K: Key>(&self, keys: &[K], scores: &mut Scores) {
        let mut all = Vec::new();
        for shard in &self.shards {
            shard.index.score_into(keys, scores);
            all.extend_from_slice(&scores.entries);
        }
        all.sort_unstable_by_key(|&(id, _)| id);
        scores.entries = all;
        scores.keys = keys.len();
    }

    threshold_queries! {
        /// The sets whose count for the query `keys` reaches `threshold`, as
        /// `(id, count)` by ascending id ([`SetIndex::query_threshold`];
        /// each file prunes on its own).
        fn query_threshold;

        /// [`ShardedIndex::query_threshold`] into `out` (cleared first), with
        /// `scratch` as working memory (its scores afterwards are unspecified).
        /// Once both are warm, allocates nothing.
        fn query_threshold_into(&self, keys, threshold, scratch, out) {
            out.clear();
            // The file's answers arrive in `part`, whose buffer the scoring
            // swaps with the scratch's: both stay warm.
            let mut part = std::mem::take(&mut scratch.entries);
            for shard in &self.shards {
                match shard.index.only_part() {
                    Some(index) => index.query_threshold_into(keys, threshold, scratch, &mut part),
                    None => {
                        part.clear();
                        part.extend(shard.index.query_threshold(keys, threshold));
                    }
                }
                out.extend_from_slice(&part);
            }
            scratch.entries = part;
            if self.shards.len() > 1 {
                out.sort_unstable_by_key(|&(id, _)| id);
            }
        }
    }
}

/// A batch answered by one file: by its only part when it has one (the
/// index's own batch, warm buffers and all), else by the collection.
fn batch<K: Key>(collection: &SetIndex, keys: &[K], out: &mut BatchResults) {
    match collection.only_part() {
        Some(index) => index.query_batch(keys, out),
        None => collection.query_batch(keys, out),
    }
}

/// The manifest's parameters as [`BloomParams`].
fn manifest_params(manifest: &Manifest) -> Result<BloomParams> {
    let p = &manifest.params;
    let scheme = crate::params::HashScheme::ALL
        .into_iter()
        .find(|s| format!("{s:?}") == p.scheme)
        .ok_or_else(|| Error::Manifest(format!("unknown hash scheme {:?}", p.scheme)))?;
    Ok(BloomParams::new(p.m, p.k)?.with_scheme(scheme).with_seed(p.seed))
}

/// [`Error::Manifest`] prefixed with the manifest's path; others as they are.
fn in_manifest(path: &Path, e: Error) -> Error {
    match e {
        Error::Manifest(reason) => Error::Manifest(format!("{}: {reason}", path.display())),
        e => e,
    }
}

/// The ids of one file's batch answer, for [`merge_answers`]: `u64`, or
/// `u32` where every id fits (half the bytes to send between processes).
#[derive(Clone, Copy, Debug)]
pub enum PartIds<'a> {
    /// Ids as they are.
    Wide(&'a [u64]),
    /// Ids that fit in 32 bits.
    Narrow(&'a [u32]),
}

impl PartIds<'_> {
    /// Number of ids.
    pub fn len(self) -> usize {
        match self {
            PartIds::Wide(s) => s.len(),
            PartIds::Narrow(s) => s.len(),
        }
    }

    /// Whether there are no ids.
    pub fn is_empty(self) -> bool {
        self.len() == 0
    }

    /// Writes `self[range]` to the start of `out`, widening narrow ids;
    /// returns how many were written.
    fn write_into(self, range: std::ops::Range<usize>, out: &mut [MaybeUninit<u64>]) -> usize {
        fn widen<S: Copy + Into<u64>>(src: &[S], out: &mut [MaybeUninit<u64>]) -> usize {
            for (d, &i) in out[..src.len()].iter_mut().zip(src) {
                d.write(i.into());
            }
            src.len()
        }
        match self {
            PartIds::Wide(s) => widen(&s[range], out),
            PartIds::Narrow(s) => widen(&s[range], out),
        }
    }
}

/// One file's answer to a batch of `n` keys, in CSR form: the ids of key
/// `i` are `ids[offsets[i]..offsets[i + 1]]` (`n + 1` offsets from 0).
#[derive(Clone, Copy, Debug)]
pub struct AnswerPart<'a> {
    /// Every key's ids, key after key.
    pub ids: PartIds<'a>,
    /// Where each key's ids start, and the end.
    pub offsets: &'a [u64],
}

/// Merges of at least this many ids are copied by two threads, each
/// writing half of the answer: a caller that fans a batch out to the files'
/// servers merges while they wait for the next batch, so a second core is
/// free.
pub const PARALLEL_MERGE_IDS: usize = 1 << 20;

/// Merges the batch answers of files that hold disjoint sets, key by key,
/// in the order of [`ShardedIndex::query_batch`]: key `i`'s ids from every
/// part, in part order. Returns `(ids, offsets)` in the CSR form of
/// [`AnswerPart`]. Large answers are advised onto huge pages and copied by
/// two threads ([`PARALLEL_MERGE_IDS`]).
///
/// ```
/// use bloomslice::sharded::{AnswerPart, PartIds, merge_answers};
///
/// // Two keys; file A answers [1] and [], file B [7, 8] and [9].
/// let a = AnswerPart { ids: PartIds::Wide(&[1]), offsets: &[0, 1, 1] };
/// let b = AnswerPart { ids: PartIds::Narrow(&[7, 8, 9]), offsets: &[0, 2, 3] };
/// let (ids, offsets) = merge_answers(&[a, b])?;
/// assert_eq!((ids, offsets), (vec![1, 7, 8, 9], vec![0, 3, 4]));
/// # Ok::<(), bloomslice::Error>(())
/// ```
///
/// # Errors
///
/// [`Error::Invalid`] for no parts, or a part whose offsets are not a CSR
/// table over the first part's number of keys (from 0, non-decreasing,
/// ending at its number of ids).
pub fn merge_answers(parts: &[AnswerPart<'_>]) -> Result<(Vec<u64>, Vec<u64>)> {
    let Some(first) = parts.first() else {
        return Err(Error::Invalid("no answers to merge".into()));
    };
    let n =
        first.offsets.len().checked_sub(1).ok_or_else(|| Error::Invalid("offsets must hold n + 1 entries".into()))?;
    for (i, part) in parts.iter().enumerate() {
        let offsets = part.offsets;
        let valid = offsets.len() == n + 1
            && offsets[0] == 0
            && offsets.windows(2).all(|w| w[0] <= w[1])
            && offsets[n] == part.ids.len() as u64;
        if !valid {
            return Err(Error::Invalid(format!(
                "answer {i} is not a CSR table over {n} keys (offsets from 0, non-decreasing, ending at the number of ids)"
            )));
        }
    }
    Ok(merge_checked(parts, n))
}

/// [`merge_answers`] on checked parts over `n` keys.
fn merge_checked(parts: &[AnswerPart<'_>], n: usize) -> (Vec<u64>, Vec<u64>) {
    // Key `i`'s ids go to `offsets[i]..offsets[i + 1]`, the sum of its
    // parts' counts.
    let mut offsets = Vec::with_capacity(n + 1);
    let mut at = 0u64;
    offsets.push(at);
    for key in 0..n {
        for part in parts {
            at += part.offsets[key + 1] - part.offsets[key];
        }
        offsets.push(at);
    }
    let total = at as usize;
    let mut ids: Vec<u64> = Vec::with_capacity(total);
    crate::storage::advise_huge_capacity(&ids);
    let fill = |keys: std::ops::Range<usize>, out: &mut [MaybeUninit<u64>]| {
        let mut written = 0;
        for key in keys {
            for part in parts {
                let range = part.offsets[key] as usize..part.offsets[key + 1] as usize;
                written += part.ids.write_into(range, &mut out[written..]);
            }
        }
        debug_assert_eq!(written, out.len());
    };
    let out = &mut ids.spare_capacity_mut()[..total];
    if total >= PARALLEL_MERGE_IDS {
        // The first key whose ids start in the second half of the answer.
        let half = offsets.partition_point(|&o| o < (total / 2) as u64).min(n);
        let (first, second) = out.split_at_mut(offsets[half] as usize);
        std::thread::scope(|scope| {
            scope.spawn(|| fill(half..n, second));
            fill(0..half, first);
        });
    } else {
        fill(0..n, out);
    }
    // SAFETY: every one of the `total` slots was written: `fill` writes key
    // `i`'s ids, in part order, exactly into `offsets[i]..offsets[i + 1]`
    // (the sum of its parts' counts, checked to be CSR tables), and the two
    // halves cover `0..total` between them.
    unsafe { ids.set_len(total) };
    (ids, offsets)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::persist::manifest::{MANIFEST_FILE, ManifestParams, ShardFile};
    use crate::{BloomFilter, Threshold};

    fn params() -> BloomParams {
        BloomParams::new(4096, 4).unwrap().with_seed(9)
    }

    /// Set `id` holds keys `id * 50 .. id * 50 + 200` (neighbours overlap).
    fn filter(id: u64) -> BloomFilter {
        let mut f = BloomFilter::new(params()).unwrap();
        for k in id * 50..id * 50 + 200 {
            f.insert(&k.to_le_bytes());
        }
        f
    }

    /// The unsplit index of sets 0..20 (odd ids named), and the same sets
    /// written as files of the id groups `groups` with a manifest in `dir`.
    fn collection(dir: &Path, groups: &[&[u64]]) -> SlicedIndex {
        let mut whole = SlicedIndex::new(params());
        let name = |id: u64| (id % 2 == 1).then(|| format!("set-{id}"));
        let mut files = Vec::new();
        for (s, ids) in groups.iter().enumerate() {
            let mut index = SlicedIndex::new(params());
            let mut names = SetNames::new();
            for &id in *ids {
                index.insert_filter(id, &filter(id)).unwrap();
                whole.insert_filter(id, &filter(id)).unwrap();
                if let Some(n) = name(id) {
                    names.insert(id, n).unwrap();
                }
            }
            let file = format!("shard-{s}.bsi");
            persist::save(dir.join(&file), &index, &names).unwrap();
            files.push(ShardFile::describe(dir, &file, &index, &names).unwrap());
        }
        Manifest { params: ManifestParams::of(&params()), files }.write(&dir.join(MANIFEST_FILE)).unwrap();
        whole
    }

    /// Ids 0..20 in three files, the last two interleaved and out of order.
    const GROUPS: &[&[u64]] = &[&[0, 1, 2, 3, 4, 5, 6], &[13, 7, 9, 11, 15, 17, 19], &[18, 8, 10, 12, 14, 16]];

    fn keys() -> Vec<[u8; 8]> {
        (0..1200u64).map(|k| k.to_le_bytes()).collect()
    }

    fn sorted(mut v: Vec<u64>) -> Vec<u64> {
        v.sort_unstable();
        v
    }

    fn both_ways(dir: &Path) -> [ShardedIndex; 2] {
        let loaded = ShardedIndex::load(dir, Verify::Full).unwrap();
        // SAFETY: the test's files are not changed while mapped.
        let mapped = unsafe { ShardedIndex::open_mmap(dir.join(MANIFEST_FILE), Verify::Deferred) }.unwrap();
        assert!(mapped.is_mapped() && !loaded.is_mapped());
        [loaded, mapped]
    }

    #[test]
    fn sharded_keys_and_batches_answer_as_the_unsplit_index() {
        let dir = tempfile::tempdir().unwrap();
        let whole = collection(dir.path(), GROUPS);
        let keys = keys();
        let mut single = BatchResults::new();
        whole.query_batch(&keys, &mut single);
        for sharded in both_ways(dir.path()) {
            assert_eq!((sharded.shard_count(), sharded.len()), (3, 20));
            assert_eq!(sharded.params(), whole.params());
            assert_eq!(sorted(sharded.ids().collect()), (0..20).collect::<Vec<_>>());
            assert_eq!(sharded.names().len(), 10);
            assert_eq!(sharded.names().id(b"set-13"), Some(13));
            assert!(sharded.memory_bytes() > 0);
            let mut results = BatchResults::new();
            // Twice: warm buffers give the same answers.
            for _ in 0..2 {
                sharded.query_batch(&keys, &mut results);
                assert_eq!(results.len(), keys.len());
                for (i, key) in keys.iter().enumerate() {
                    let got = results.get(i).unwrap().to_vec();
                    assert_eq!(sorted(got.clone()), sorted(single.get(i).unwrap().to_vec()), "key {i}");
                    assert_eq!(got, sharded.query(key), "key {i}");
                    // File order: every id of an earlier file comes first.
                    let file_of = |id: u64| GROUPS.iter().position(|g| g.contains(&id)).unwrap();
                    assert!(got.windows(2).all(|w| file_of(w[0]) <= file_of(w[1])), "key {i}: {got:?}");
                }
            }
            let (ids, ends) = results.flat();
            assert_eq!((ids.len(), ends.len()), (single.total_matches(), keys.len()));
        }
    }

    #[test]
    fn sharded_scores_and_thresholds_answer_as_the_unsplit_index() {
        let dir = tempfile::tempdir().unwrap();
        let whole = collection(dir.path(), GROUPS);
        let (mut want, mut got) = (Scores::new(), Scores::new());
        let (mut scratch, mut out) = (Scores::new(), Vec::new());
        for sharded in both_ways(dir.path()) {
            for start in [0u64, 130, 475, 900] {
                let query: Vec<[u8; 8]> = (start..start + 60).map(|k| k.to_le_bytes()).collect();
                whole.score_into(&query, &mut want);
                sharded.score_into(&query, &mut got);
                assert_eq!(got.iter().collect::<Vec<_>>(), want.iter().collect::<Vec<_>>(), "start {start}");
                assert_eq!(got.keys(), query.len());
                for t in [Threshold::count(0), Threshold::count(1), Threshold::count(61)]
                    .into_iter()
                    .chain([0.0, 0.5, 0.8, 1.0].map(|f| Threshold::fraction(f).unwrap()))
                {
                    let expected = whole.query_threshold(&query, t);
                    assert_eq!(sharded.query_threshold(&query, t), expected, "start {start}, {t:?}");
                    sharded.query_threshold_into(&query, t, &mut scratch, &mut out);
                    assert_eq!(out, expected, "start {start}, {t:?} (warm)");
                }
            }
        }
    }

    #[test]
    fn one_file_and_bad_collections() {
        let dir = tempfile::tempdir().unwrap();
        let whole = collection(dir.path(), &[&(0..20).collect::<Vec<_>>()]);
        let sharded = ShardedIndex::load(dir.path(), Verify::Deferred).unwrap();
        let keys = keys();
        let (mut one, mut many) = (BatchResults::new(), BatchResults::new());
        whole.query_batch(&keys, &mut one);
        sharded.query_batch(&keys, &mut many);
        assert!(one.iter().eq(many.iter()));

        // A file changed behind the manifest's back.
        let dir = tempfile::tempdir().unwrap();
        collection(dir.path(), GROUPS);
        std::fs::copy(dir.path().join("shard-1.bsi"), dir.path().join("shard-0.bsi")).unwrap();
        let err = ShardedIndex::load(dir.path(), Verify::Full).unwrap_err().to_string();
        assert!(err.contains("does not match the manifest"), "{err}");
        // Without the checksum comparison the entry check still sees it.
        let err = ShardedIndex::load(dir.path(), Verify::Deferred).unwrap_err().to_string();
        assert!(err.contains("manifest.json") && err.contains("differ"), "{err}");
        assert!(matches!(ShardedIndex::load(dir.path().join("nothing"), Verify::Full), Err(Error::Io { .. })));
    }

    #[test]
    fn merge_answers_checks_its_parts_and_keeps_part_order() {
        let a = AnswerPart { ids: PartIds::Wide(&[5, 1]), offsets: &[0, 2, 2] };
        let b = AnswerPart { ids: PartIds::Narrow(&[3]), offsets: &[0, 0, 1] };
        assert_eq!(merge_answers(&[a, b]).unwrap(), (vec![5, 1, 3], vec![0, 2, 3]));
        assert_eq!(merge_answers(&[b, a]).unwrap(), (vec![5, 1, 3], vec![0, 2, 3]));
        assert!(merge_answers(&[]).is_err());
        let short = AnswerPart { ids: PartIds::Wide(&[1]), offsets: &[0, 1] };
        assert!(merge_answers(&[a, short]).unwrap_err().to_string().contains("answer 1"));
        let wrong_end = AnswerPart { ids: PartIds::Wide(&[1, 2]), offsets: &[0, 1, 1] };
        assert!(merge_answers(&[wrong_end]).is_err());
        // Large enough for two threads: the same as one pass.
        let n = 300_000usize;
        let ids: Vec<u64> = (0..4 * n as u64).collect();
        let offsets: Vec<u64> = (0..=n as u64).map(|i| 4 * i).collect();
        let narrow: Vec<u32> = (0..n as u32).collect();
        let narrow_offsets: Vec<u64> = (0..=n as u64).collect();
        let parts = [
            AnswerPart { ids: PartIds::Wide(&ids), offsets: &offsets },
            AnswerPart { ids: PartIds::Narrow(&narrow), offsets: &narrow_offsets },
        ];
        let (merged, merged_offsets) = merge_answers(&parts).unwrap();
        assert!(merged.len() >= PARALLEL_MERGE_IDS);
        for key in [0, 1, n / 2, n - 1] {
            let got = &merged[merged_offsets[key] as usize..merged_offsets[key + 1] as usize];
            let k = key as u64;
            assert_eq!(got, &[4 * k, 4 * k + 1, 4 * k + 2, 4 * k + 3, k], "key {key}");
        }
    }
}
