//! SetIndex files: a [`SetIndex`] with its [`SetNames`] in one file,
//! format version 2 (specified in `docs/FORMAT.md`, section "Collection
//! files (format 2)").
//!
//! A collection file holds a header, a part table, the collection's
//! layout, the set table (every filter of every set: its part, capacity and
//! load), the set names, and then every part as a complete format-1 index
//! file without names, so a part is read and mapped by the format-1 code
//! and keeps its checksums. Every section starts 64-byte aligned and ends
//! in its xxh3-64; offsets are a pure function of the counts and part
//! sizes, so overlapping or misaligned sections are rejected.
//!
//! The readers (`Loaded::<SetIndex>`'s, behind [`super::load`],
//! [`super::from_bytes`] and [`super::open_mmap`]) also open a format-1
//! index file, as a collection of one part ([`SetIndex::from_index`] at
//! `p = 2^-k`). The checksum policy is that of [`super`]: everything but
//! the rows is verified before a collection is returned, and the rows are
//! verified too except by a mapping with [`Verify::Deferred`], which leaves
//! them to [`Loaded::verify`].

use std::io::{Read, Write};
use std::path::Path;
use std::sync::Arc;

use hashbrown::HashMap;
use xxhash_rust::xxh3::xxh3_64;

use super::format::{
    CHECKSUM_BYTES, FORMAT_MAJOR, MAGIC, check_header_start, checked_body, corrupt, declared_file_len, le_u32, le_u64,
    major_version, read_exact, read_vec, scheme_code, scheme_of_code,
};
use super::names::{MAX_NAME_BYTES, Raw};
use super::{FileInfo, Loaded, SetNames, Verify};
use crate::collection::SetIndex;
use crate::collection::layout::{Layout, PartPlan};
use crate::collection::stored::{StoredFilter, StoredHead};
use crate::error::{Error, Result};
use crate::kmer::{KmerLength, MAX_KMER_LENGTH};
use crate::params::{BloomParams, MAX_HASHES};
use crate::sliced::SlicedIndex;
use crate::storage::{FileMap, map_file};

/// Major format version of collection files.
pub const COLLECTION_FORMAT_MAJOR: u16 = 2;
/// Minor format version of collection files this build writes; a reader
/// accepts any minor of major 2 (later minors only give meaning to bytes
/// that minor 0 requires to be zero).
pub const COLLECTION_FORMAT_MINOR: u16 = 0;
/// Size of a collection file's header.
pub const COLLECTION_HEADER_BYTES: u64 = 192;
/// Alignment of every section of a collection file.
const ALIGN: u64 = 64;
/// Bytes of the header covered by its checksum (the checksum follows).
const HEADER_CHECKED: usize = 184;
/// Where the reserved (zero) header bytes start.
const HEADER_RESERVED: usize = 144;
const PART_ENTRY_BYTES: u64 = 64;
/// The layout section's statistics: optimum bits, mean and largest
/// predicted false-positive rate, and 8 reserved bytes.
const LAYOUT_STATS_BYTES: u64 = 32;
const PLAN_ENTRY_BYTES: u64 = 40;
const FILTER_ENTRY_BYTES: u64 = 32;
const NAME_ENTRY_BYTES: u64 = 16;

impl super::sealed::Sealed for SetIndex {
    fn write_file(&self, w: &mut dyn Write, names: &SetNames) -> Result<u64> {
        write_set_index_to(w, self, names)
    }

    fn read_file(r: &mut dyn Read, len: u64, what: &Path) -> Result<Loaded<Self>> {
        load_from_reader(&mut &mut *r, len, what, Loads::Exact)
    }

    fn map_file(map: &Arc<FileMap>, verify: Verify) -> Result<Loaded<Self>> {
        map_with(map, verify, Loads::Exact)
    }

    fn verify(loaded: &mut Loaded<Self>) -> Result<()> {
        loaded.verify_with(Loads::Exact)
    }

    fn is_mapped(&self) -> bool {
        self.parts().any(SlicedIndex::is_mapped)
    }
}

impl Loaded<SetIndex> {
    /// [`Loaded::verify`]; with [`Loads::Cheap`], the loads of a format-1
    /// file are left as they were estimated when it was opened.
    pub(crate) fn verify_with(&mut self, loads: Loads) -> Result<()> {
        if self.info.rows_verified {
            return Ok(());
        }
        let v1 = self.info.version.0 == FORMAT_MAJOR;
        let sums: HashMap<&str, u64> = self.info.checksums.iter().map(|(name, sum)| (name.as_str(), *sum)).collect();
        for (i, (_, index)) in self.index.stored_parts().enumerate() {
            for (j, (_, _, rows)) in index.shard_views().enumerate() {
                let name = if v1 { format!("rows of shard {j}") } else { format!("part {i} rows of shard {j}") };
                let Some(&want) = sums.get(name.as_str()) else {
                    return Err(Error::CorruptFile(format!(
                        "{name} has no checksum in the file: the collection changed since it was opened"
                    )));
                };
                if super::rows_checksum(rows) != want {
                    return Err(Error::ChecksumMismatch { section: name });
                }
            }
        }
        self.index.validate().map_err(Error::into_corrupt_file)?;
        self.names.check().map_err(|e| Error::CorruptFile(e.to_string()))?;
        if v1 && loads == Loads::Exact {
            self.index.estimate_loads();
        }
        self.info.rows_verified = true;
        Ok(())
    }

    /// A format-1 file as a one-part collection.
    fn from_index(loaded: Loaded<SlicedIndex>, loads: Loads) -> Result<Self> {
        let Loaded { index, names, info } = loaded;
        let p = v1_rate(index.params());
        let index = SetIndex::from_index_estimated(index, p, loads == Loads::Exact)?;
        Ok(Loaded { index, names, info })
    }
}

/// How the readers estimate the sets' loads of a format-1 file (which
/// does not store them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Loads {
    /// From every column's bits, as [`SetIndex::from_index`] does (a
    /// pass over the rows counting every set bit).
    Exact,
    /// From each shard's recorded bit count, shared evenly among its sets
    /// (reads no row): for readers that never change the collection, such
    /// as [`crate::sharded::ShardedIndex`], whose opening then costs what
    /// opening the index file costs.
    Cheap,
}

/// The target rate of a format-1 file opened as a collection: `2^-k`.
fn v1_rate(params: &BloomParams) -> f64 {
    0.5f64.powi(params.k() as i32)
}

/// Section offsets of a collection file, all a pure function of the
/// counts (the parts' offsets follow from their sizes, see
/// [`Sections::part_offsets`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Sections {
    part_table: u64,
    layout: u64,
    sets: u64,
    names: u64,
    names_end: u64,
    parts: u64,
}

fn align(x: u64) -> Option<u64> {
    x.checked_next_multiple_of(ALIGN)
}

/// `count * entry + extra + checksum` bytes from `at`, or `None` on
/// overflow.
fn section_end(at: u64, count: u64, entry: u64, extra: u64) -> Option<u64> {
    at.checked_add(count.checked_mul(entry)?)?.checked_add(extra)?.checked_add(CHECKSUM_BYTES)
}

impl Sections {
    fn new(parts: u64, plans: u64, filters: u64, named: u64, name_bytes: u64) -> Option<Sections> {
        let part_table = COLLECTION_HEADER_BYTES;
        let layout = align(section_end(part_table, parts, PART_ENTRY_BYTES, 0)?)?;
        let sets = align(section_end(layout, plans, PLAN_ENTRY_BYTES, LAYOUT_STATS_BYTES)?)?;
        let names = align(section_end(sets, filters, FILTER_ENTRY_BYTES, 0)?)?;
        let names_end = section_end(names, named, NAME_ENTRY_BYTES, name_bytes)?;
        Some(Sections { part_table, layout, sets, names, names_end, parts: align(names_end)? })
    }

    /// Each part's offset for parts of `sizes` bytes, and the file's end.
    fn part_offsets(&self, sizes: &[u64]) -> Option<(Vec<u64>, u64)> {
        let mut offsets = Vec::with_capacity(sizes.len());
        let mut end = self.parts;
        for &size in sizes {
            let at = align(end)?;
            offsets.push(at);
            end = at.checked_add(size)?;
        }
        Some((offsets, end))
    }
}

/// One part table entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct PartEntry {
    offset: u64,
    bytes: u64,
    capacity: u64,
    m: u64,
    filters: u64,
}

/// The decoded header.
#[derive(Clone, Copy, Debug)]
struct Header {
    minor: u16,
    file_len: u64,
    p: f64,
    params: BloomParams,
    kmer_length: Option<KmerLength>,
    parts: u64,
    plans: u64,
    filters: u64,
    sets: u64,
    named: u64,
    name_bytes: u64,
    checksum: u64,
}

fn put(b: &mut [u8], at: usize, bytes: &[u8]) {
    b[at..at + bytes.len()].copy_from_slice(bytes);
}

fn encode_header(h: &Header, s: &Sections) -> [u8; COLLECTION_HEADER_BYTES as usize] {
    let mut b = [0u8; COLLECTION_HEADER_BYTES as usize];
    put(&mut b, 0, &MAGIC);
    put(&mut b, 8, &COLLECTION_FORMAT_MAJOR.to_le_bytes());
    put(&mut b, 10, &COLLECTION_FORMAT_MINOR.to_le_bytes());
    put(&mut b, 12, &(COLLECTION_HEADER_BYTES as u32).to_le_bytes());
    put(&mut b, 16, &h.file_len.to_le_bytes());
    put(&mut b, 24, &h.p.to_bits().to_le_bytes());
    put(&mut b, 32, &h.params.k().to_le_bytes());
    put(&mut b, 36, &scheme_code(h.params.scheme()).to_le_bytes());
    put(&mut b, 40, &h.params.seed().to_le_bytes());
    put(&mut b, 48, &h.kmer_length.map_or(0, |k| k.get() as u32).to_le_bytes());
    for (i, v) in [h.parts, h.plans, h.filters, h.sets, h.named, h.name_bytes].into_iter().enumerate() {
        put(&mut b, 56 + 8 * i, &v.to_le_bytes());
    }
    for (i, v) in [s.part_table, s.layout, s.sets, s.names, s.parts].into_iter().enumerate() {
        put(&mut b, 104 + 8 * i, &v.to_le_bytes());
    }
    let sum = xxh3_64(&b[..HEADER_CHECKED]);
    put(&mut b, HEADER_CHECKED, &sum.to_le_bytes());
    b
}

/// Decodes and checks a collection file's header against the real file
/// length; `b` holds the file's first (up to) [`COLLECTION_HEADER_BYTES`].
fn decode_header(b: &[u8], real_len: u64) -> Result<(Header, Sections)> {
    let (minor, checksum) =
        check_header_start(b, real_len, COLLECTION_HEADER_BYTES, COLLECTION_FORMAT_MAJOR, HEADER_CHECKED)?;
    let reserved = b[52..56].iter().chain(&b[HEADER_RESERVED..HEADER_CHECKED]);
    // Minor 0 is the only minor yet; later ones may use these bytes.
    if minor == COLLECTION_FORMAT_MINOR && reserved.into_iter().any(|&x| x != 0) {
        return corrupt(format!("reserved header bytes are not zero in a version 2.{minor} file"));
    }
    let file_len = declared_file_len(b, real_len)?;
    let p = f64::from_bits(le_u64(b, 24));
    if !(p > 0.0 && p < 1.0) {
        return corrupt(format!("false-positive rate {p} is outside (0, 1)"));
    }
    let k = le_u32(b, 32);
    if k == 0 || k > MAX_HASHES {
        return corrupt(format!("k = {k} is outside 1..={MAX_HASHES}"));
    }
    let code = le_u32(b, 36);
    let Some(scheme) = scheme_of_code(code) else {
        return corrupt(format!("unknown hash scheme code {code}"));
    };
    // Parts have their own m; 64 bits stands in for it here.
    let params = BloomParams::new(64, k)
        .map_err(|e| Error::CorruptFile(format!("parameters: {e}")))?
        .with_scheme(scheme)
        .with_seed(le_u64(b, 40));
    let kmer_length = match le_u32(b, 48) {
        0 => None,
        k if k as usize <= MAX_KMER_LENGTH => KmerLength::new(k as usize).ok(),
        k => return corrupt(format!("k-mer length {k} is above {MAX_KMER_LENGTH}")),
    };
    let count = |i: usize| le_u64(b, 56 + 8 * i);
    let (parts, plans, filters, sets, named, name_bytes) = (count(0), count(1), count(2), count(3), count(4), count(5));
    let Some(sections) = Sections::new(parts, plans, filters, named, name_bytes) else {
        return corrupt(format!(
            "absurd counts: {parts} parts, {plans} layout parts, {filters} filters, {named} names of {name_bytes} bytes"
        ));
    };
    if sections.parts > file_len {
        return Err(Error::Truncated { section: "tables", needed: sections.parts, len: file_len });
    }
    let declared: Vec<u64> = (0..5).map(|i| le_u64(b, 104 + 8 * i)).collect();
    let canonical = [sections.part_table, sections.layout, sections.sets, sections.names, sections.parts];
    if declared != canonical {
        return corrupt("section offsets differ from the canonical layout (misaligned or overlapping sections)");
    }
    if sets > filters || (sets == 0) != (filters == 0) || named > sets {
        return corrupt(format!("{sets} sets of {filters} filters with {named} names"));
    }
    let header =
        Header { minor, file_len, p, params, kmer_length, parts, plans, filters, sets, named, name_bytes, checksum };
    Ok((header, sections))
}

/// Reads a collection file in order, tracking the position so that the
/// padding between sections can be checked.
struct Reader<'a, R> {
    r: &'a mut R,
    at: u64,
    file_len: u64,
}

impl<R: Read> Reader<'_, R> {
    /// Skips the zero padding up to `to`.
    fn pad_to(&mut self, to: u64, before: &'static str) -> Result<()> {
        let gap = to.checked_sub(self.at).filter(|&g| g < ALIGN);
        let Some(gap) = gap else {
            return corrupt(format!("{before} is not where the previous section ends"));
        };
        let mut pad = [0u8; ALIGN as usize];
        read_exact(self.r, &mut pad[..gap as usize], "padding", self.at, self.file_len)?;
        if pad.iter().any(|&b| b != 0) {
            return corrupt(format!("padding before the {before} is not zero"));
        }
        self.at = to;
        Ok(())
    }

    /// The section of `len` bytes at `at` (after checking the padding
    /// before it).
    fn section(&mut self, at: u64, len: u64, name: &'static str) -> Result<Vec<u8>> {
        self.pad_to(at, name)?;
        let v = read_vec(self.r, len, name, at, self.file_len)?;
        self.at = at + len;
        Ok(v)
    }
}

/// Everything of a collection file before its parts, checked.
struct Meta {
    header: Header,
    layout: Layout,
    parts: Vec<PartEntry>,
    filters: Vec<StoredFilter>,
    names: SetNames,
    /// header, part table, layout, set table, names.
    checksums: [u64; 5],
}

impl Meta {
    fn head(&self) -> StoredHead {
        StoredHead {
            p: self.header.p,
            k: self.header.params.k(),
            scheme: self.header.params.scheme(),
            seed: self.header.params.seed(),
            kmer_length: self.header.kmer_length,
            layout: self.layout.clone(),
        }
    }

    fn info(&self, parts: &[FileInfo], rows_verified: bool) -> FileInfo {
        let names = ["header", "part table", "layout", "set table", "names"];
        let mut checksums: Vec<(String, u64)> =
            names.iter().zip(self.checksums).map(|(name, sum)| ((*name).to_owned(), sum)).collect();
        for (i, part) in parts.iter().enumerate() {
            checksums.extend(part.checksums.iter().map(|(name, sum)| (format!("part {i} {name}"), *sum)));
        }
        FileInfo {
            version: (COLLECTION_FORMAT_MAJOR, self.header.minor),
            file_bytes: self.header.file_len,
            checksums,
            rows_verified,
        }
    }
}

/// Reads and checks every section before the parts; afterwards `r` is at
/// the end of the names section. `head` is the file's first (up to)
/// [`COLLECTION_HEADER_BYTES`], already read.
fn read_meta(head: &[u8], r: &mut impl Read, real_len: u64) -> Result<Meta> {
    let (header, sections) = decode_header(head, real_len)?;
    let file_len = header.file_len;
    let mut rd = Reader { r, at: COLLECTION_HEADER_BYTES, file_len };
    let k = header.params.k();

    // Part table.
    // Sections::new computed every end below without overflow.
    let end = section_end(sections.part_table, header.parts, PART_ENTRY_BYTES, 0).unwrap_or(sections.layout);
    let table = rd.section(sections.part_table, end - sections.part_table, "part table")?;
    let (body, table_sum) = checked_body(&table, "part table")?;
    let mut sizes = Vec::with_capacity(header.parts as usize);
    let mut parts = Vec::with_capacity(header.parts as usize);
    for (i, e) in body.chunks_exact(PART_ENTRY_BYTES as usize).enumerate() {
        let entry = PartEntry {
            offset: le_u64(e, 0),
            bytes: le_u64(e, 8),
            capacity: le_u64(e, 16),
            m: le_u64(e, 24),
            filters: le_u64(e, 32),
        };
        if e[40..].iter().any(|&b| b != 0) {
            return corrupt(format!("part {i}: reserved bytes of its entry are not zero"));
        }
        BloomParams::new(entry.m, k).map_err(|e| Error::CorruptFile(format!("part {i}: {e}")))?;
        if entry.capacity == 0 {
            return corrupt(format!("part {i}: capacity 0"));
        }
        sizes.push(entry.bytes);
        parts.push(entry);
    }
    let Some((offsets, end)) = sections.part_offsets(&sizes) else {
        return corrupt("part sizes overflow");
    };
    if end > file_len {
        return Err(Error::Truncated { section: "parts", needed: end, len: file_len });
    }
    if end != file_len {
        return corrupt(format!("the parts end at {end} but the file at {file_len}"));
    }
    for (i, (entry, offset)) in parts.iter().zip(offsets).enumerate() {
        if entry.offset != offset {
            return corrupt(format!(
                "part {i}: declared at {}, expected at {offset} (misaligned or overlapping section)",
                entry.offset
            ));
        }
    }
    if parts.iter().map(|p| p.filters).try_fold(0u64, u64::checked_add) != Some(header.filters) {
        return corrupt(format!("the parts' filters do not add up to the {} of the set table", header.filters));
    }

    // Layout.
    let layout_end = section_end(sections.layout, header.plans, PLAN_ENTRY_BYTES, LAYOUT_STATS_BYTES).unwrap_or(0);
    let layout_bytes = rd.section(sections.layout, layout_end - sections.layout, "layout")?;
    let (body, layout_sum) = checked_body(&layout_bytes, "layout")?;
    let stat = |i: usize| f64::from_bits(le_u64(body, 8 * i));
    let stats = [stat(0), stat(1), stat(2)];
    if stats.iter().any(|x| !(x.is_finite() && *x >= 0.0)) || le_u64(body, 24) != 0 {
        return corrupt("layout statistics are not finite non-negative numbers");
    }
    let mut plans = Vec::with_capacity(header.plans as usize);
    for (i, e) in body[LAYOUT_STATS_BYTES as usize..].chunks_exact(PLAN_ENTRY_BYTES as usize).enumerate() {
        let plan = PartPlan {
            min_size: le_u64(e, 0),
            capacity: le_u64(e, 8),
            m: le_u64(e, 16),
            sets: usize::try_from(le_u64(e, 24)).map_err(|_| Error::CapacityOverflow("layout set count"))?,
            bits: le_u64(e, 32),
        };
        BloomParams::new(plan.m, k).map_err(|e| Error::CorruptFile(format!("layout part {i}: {e}")))?;
        let previous = plans.last().map_or(0, |p: &PartPlan| p.capacity);
        if plan.min_size > plan.capacity || (i > 0 && plan.capacity <= previous) {
            return corrupt(format!("layout part {i}: sizes {}..={} out of order", plan.min_size, plan.capacity));
        }
        plans.push(plan);
    }
    let layout = Layout::from_stored(header.p, k, plans, stats);

    // Set table.
    let sets_end = section_end(sections.sets, header.filters, FILTER_ENTRY_BYTES, 0).unwrap_or(0);
    let set_bytes = rd.section(sections.sets, sets_end - sections.sets, "set table")?;
    let (body, sets_sum) = checked_body(&set_bytes, "set table")?;
    let mut filters = Vec::with_capacity(header.filters as usize);
    let mut distinct = 0u64;
    for e in body.chunks_exact(FILTER_ENTRY_BYTES as usize) {
        let f = StoredFilter {
            id: le_u64(e, 0),
            part: le_u32(e, 8) as usize,
            number: le_u32(e, 12),
            capacity: le_u64(e, 16),
            load: le_u64(e, 24),
        };
        distinct += u64::from(f.number == 0);
        filters.push(f);
    }
    if distinct != header.sets {
        return corrupt(format!("the set table holds {distinct} sets but the header says {}", header.sets));
    }

    // Names.
    let names_bytes = rd.section(sections.names, sections.names_end - sections.names, "names")?;
    let (body, names_sum) = checked_body(&names_bytes, "names")?;
    let table_len = (header.named * NAME_ENTRY_BYTES) as usize;
    let (entries, blob) = body.split_at(table_len);
    let mut spans = Vec::with_capacity(header.named as usize);
    let (mut offset, mut previous) = (0usize, None);
    for e in entries.chunks_exact(NAME_ENTRY_BYTES as usize) {
        let (id, len) = (le_u64(e, 0), le_u32(e, 8) as usize);
        if le_u32(e, 12) != 0 {
            return corrupt(format!("name of set {id}: reserved bytes are not zero"));
        }
        if len == 0 || len > MAX_NAME_BYTES {
            return corrupt(format!("set {id}: a name of {len} bytes is outside 1..={MAX_NAME_BYTES}"));
        }
        if previous.is_some_and(|p| p >= id) {
            return corrupt(format!("names: set {id} is out of ascending id order"));
        }
        if filters.binary_search_by_key(&(id, 0), |f| (f.id, f.number)).is_err() {
            return corrupt(format!("names: set {id} is not in the collection"));
        }
        previous = Some(id);
        spans.push((id, offset, len));
        offset += len;
    }
    if offset as u64 != header.name_bytes {
        return corrupt(format!("names take {offset} bytes but the header says {}", header.name_bytes));
    }
    let names = SetNames::from_raw(Raw { blob: blob.to_vec(), spans });
    let checksums = [header.checksum, table_sum, layout_sum, sets_sum, names_sum];
    rd.pad_to(sections.parts, "parts")?;
    Ok(Meta { header, layout, parts, filters, names, checksums })
}

/// Checks a part read from the file against its entry and the header.
fn check_part(i: usize, part: &Loaded<SlicedIndex>, entry: &PartEntry, header: &Header) -> Result<()> {
    let params = part.index.params();
    if params.m() != entry.m
        || params.k() != header.params.k()
        || params.scheme() != header.params.scheme()
        || params.seed() != header.params.seed()
    {
        return corrupt(format!("part {i}: its parameters {params} differ from its entry and the header"));
    }
    if part.index.len() as u64 != entry.filters {
        return corrupt(format!("part {i}: {} filters but its entry says {}", part.index.len(), entry.filters));
    }
    if !part.names.is_empty() {
        return corrupt(format!("part {i}: an embedded index holds set names"));
    }
    Ok(())
}

/// A part's errors, naming the part.
fn in_part(i: usize, e: Error) -> Error {
    match e {
        Error::CorruptFile(what) => Error::CorruptFile(format!("part {i}: {what}")),
        Error::ChecksumMismatch { section } => Error::ChecksumMismatch { section: format!("part {i} {section}") },
        e => e,
    }
}

/// Builds the collection of checked parts.
fn assemble(meta: Meta, parts: Vec<Loaded<SlicedIndex>>, rows_verified: bool) -> Result<Loaded<SetIndex>> {
    let infos: Vec<FileInfo> = parts.iter().map(|p| p.info.clone()).collect();
    let info = meta.info(&infos, rows_verified);
    let kmer = meta.header.kmer_length;
    let stored: Vec<(u64, SlicedIndex)> = meta
        .parts
        .iter()
        .zip(parts)
        .map(|(entry, mut part)| {
            part.index.set_kmer_length(kmer);
            (entry.capacity, part.index)
        })
        .collect();
    let collection = SetIndex::from_stored(meta.head(), stored, &meta.filters)?;
    Ok(Loaded { index: collection, names: meta.names, info })
}

/// Reads a whole file from `r` (of `real_len` bytes), either format, fully
/// verified.
fn load_from_reader(r: &mut impl Read, real_len: u64, what: &Path, loads: Loads) -> Result<Loaded<SetIndex>> {
    let mut head = [0u8; COLLECTION_HEADER_BYTES as usize];
    let avail = real_len.min(COLLECTION_HEADER_BYTES) as usize;
    read_exact(r, &mut head[..avail], "header", 0, real_len)?;
    let head = &head[..avail];
    if major_version(head) == Some(FORMAT_MAJOR) {
        let loaded = super::load_from_reader(&mut head.chain(r), real_len, what)?;
        return Loaded::<SetIndex>::from_index(loaded, loads);
    }
    let meta = read_meta(head, r, real_len)?;
    let mut rd = Reader { r, at: meta_end(&meta), file_len: meta.header.file_len };
    let mut parts = Vec::with_capacity(meta.parts.len());
    for (i, entry) in meta.parts.iter().enumerate() {
        rd.pad_to(entry.offset, "part")?;
        let part = super::load_from_reader(&mut (&mut *rd.r).take(entry.bytes), entry.bytes, what)
            .map_err(|e| in_part(i, e))?;
        check_part(i, &part, entry, &meta.header)?;
        rd.at += entry.bytes;
        parts.push(part);
    }
    let loaded = assemble(meta, parts, true)?;
    loaded.names.check().map_err(|e| Error::CorruptFile(e.to_string()))?;
    Ok(loaded)
}

/// Where the sections before the parts end (the reader's position after
/// [`read_meta`]).
fn meta_end(meta: &Meta) -> u64 {
    let h = &meta.header;
    Sections::new(h.parts, h.plans, h.filters, h.named, h.name_bytes).map_or(0, |s| s.parts)
}

/// Reads the file at `path` (either format), fully verified, estimating a
/// format-1 file's loads as `loads` says.
pub(crate) fn load_collection_with(path: &Path, loads: Loads) -> Result<Loaded<SetIndex>> {
    let (file, len) = super::open(path)?;
    let mut r = std::io::BufReader::with_capacity(1 << 16, file);
    load_from_reader(&mut r, len, path, loads)
}

/// [`Loaded::open_mmap`] for a [`SetIndex`], estimating a format-1 file's
/// loads as `loads` says (with [`Verify::Deferred`] they are
/// [`Loads::Cheap`] until [`Loaded::verify`]).
///
/// # Safety
///
/// That of [`Loaded::open_mmap`].
pub(crate) unsafe fn open_collection_mmap_with(path: &Path, verify: Verify, loads: Loads) -> Result<Loaded<SetIndex>> {
    let (file, len) = super::open(path)?;
    if len < COLLECTION_HEADER_BYTES {
        // Too short to map usefully (and an empty file cannot be mapped).
        let mut bytes = Vec::new();
        (&file).take(COLLECTION_HEADER_BYTES).read_to_end(&mut bytes).map_err(|e| Error::io("read", path, e))?;
        let mut r = bytes.as_slice();
        return load_from_reader(&mut r, bytes.len() as u64, path, loads);
    }
    // SAFETY: mapping a file is sound only while no one truncates or writes
    // it; the caller promises that (this function's `# Safety` contract).
    // The map is read-only, and every offset taken from it is checked
    // against its length.
    let map = Arc::new(unsafe { map_file(&file) }.map_err(|e| Error::io("map", path, e))?);
    map_with(&map, verify, loads)
}

/// The file (either format) of the whole `map`, verified as `verify` says.
fn map_with(map: &Arc<FileMap>, verify: Verify, loads: Loads) -> Result<Loaded<SetIndex>> {
    let mut loaded = if major_version(map) == Some(FORMAT_MAJOR) {
        Loaded::<SetIndex>::from_index(super::loaded_from_map(map)?, Loads::Cheap)?
    } else {
        mapped_collection(map)?
    };
    if verify == Verify::Full {
        loaded.verify_with(loads)?;
    }
    Ok(loaded)
}

/// The collection file of the whole `map`, its parts' rows used in place
/// and not verified.
fn mapped_collection(map: &Arc<FileMap>) -> Result<Loaded<SetIndex>> {
    let len = map.len() as u64;
    let head = &map[..map.len().min(COLLECTION_HEADER_BYTES as usize)];
    let mut rest: &[u8] = &map[head.len()..];
    let meta = read_meta(head, &mut rest, len)?;
    let mut at = meta_end(&meta);
    let mut parts = Vec::with_capacity(meta.parts.len());
    for (i, entry) in meta.parts.iter().enumerate() {
        // Offsets and sizes were checked against the file by `read_meta`.
        if map[at as usize..entry.offset as usize].iter().any(|&b| b != 0) {
            return corrupt(format!("padding before part {i} is not zero"));
        }
        let (index, part_meta) =
            super::index_in_map(map, entry.offset as usize, entry.bytes as usize).map_err(|e| in_part(i, e))?;
        let info = super::info_of(&part_meta, false);
        let part = Loaded { index, names: part_meta.names, info };
        check_part(i, &part, entry, &meta.header)?;
        at = entry.offset + entry.bytes;
        parts.push(part);
    }
    assemble(meta, parts, false)
}

/// Writes `collection` and `names` as a collection file (format 2) to
/// `w`; returns the bytes written. Names of ids not in the collection are
/// not written.
fn write_set_index_to(w: &mut dyn Write, collection: &SetIndex, names: &SetNames) -> Result<u64> {
    let head = collection.stored_head();
    let parts: Vec<(u64, &SlicedIndex)> = collection.stored_parts().collect();
    let filters = collection.stored_filters();
    let named: Vec<(u64, &[u8])> = names.iter().filter(|&(id, _)| collection.contains(id)).collect();
    let name_bytes: u64 = named.iter().map(|(_, n)| n.len() as u64).sum();
    let plans = head.layout.parts();
    let overflow = Error::CapacityOverflow("collection file layout");
    let sizes: Vec<u64> =
        parts.iter().map(|(_, index)| super::index_file_bytes(index)).collect::<Option<_>>().ok_or(overflow.clone())?;
    let sections =
        Sections::new(parts.len() as u64, plans.len() as u64, filters.len() as u64, named.len() as u64, name_bytes)
            .ok_or(overflow.clone())?;
    let (offsets, file_len) = sections.part_offsets(&sizes).ok_or(overflow)?;

    let mut table = Vec::with_capacity(parts.len() * PART_ENTRY_BYTES as usize + 8);
    for (((capacity, index), &bytes), &offset) in parts.iter().zip(&sizes).zip(&offsets) {
        for v in [offset, bytes, *capacity, index.params().m(), index.len() as u64, 0, 0, 0] {
            table.extend_from_slice(&v.to_le_bytes());
        }
    }
    let mut layout = Vec::with_capacity(plans.len() * PLAN_ENTRY_BYTES as usize + 40);
    for v in head.layout.stored_stats().into_iter().chain([0.0]) {
        layout.extend_from_slice(&v.to_bits().to_le_bytes());
    }
    for plan in plans {
        for v in [plan.min_size, plan.capacity, plan.m, plan.sets as u64, plan.bits] {
            layout.extend_from_slice(&v.to_le_bytes());
        }
    }
    let mut set_table = Vec::with_capacity(filters.len() * FILTER_ENTRY_BYTES as usize + 8);
    for f in &filters {
        set_table.extend_from_slice(&f.id.to_le_bytes());
        set_table.extend_from_slice(&(f.part as u32).to_le_bytes());
        set_table.extend_from_slice(&f.number.to_le_bytes());
        set_table.extend_from_slice(&f.capacity.to_le_bytes());
        set_table.extend_from_slice(&f.load.to_le_bytes());
    }
    let mut name_section = Vec::with_capacity(named.len() * NAME_ENTRY_BYTES as usize + name_bytes as usize + 8);
    for (id, name) in &named {
        name_section.extend_from_slice(&id.to_le_bytes());
        name_section.extend_from_slice(&(name.len() as u32).to_le_bytes());
        name_section.extend_from_slice(&0u32.to_le_bytes());
    }
    for (_, name) in &named {
        name_section.extend_from_slice(name);
    }
    for section in [&mut table, &mut layout, &mut set_table, &mut name_section] {
        let sum = xxh3_64(section);
        section.extend_from_slice(&sum.to_le_bytes());
    }
    let header = Header {
        minor: COLLECTION_FORMAT_MINOR,
        file_len,
        p: head.p,
        params: BloomParams::new(64, head.k)?.with_scheme(head.scheme).with_seed(head.seed),
        kmer_length: head.kmer_length,
        parts: parts.len() as u64,
        plans: plans.len() as u64,
        filters: filters.len() as u64,
        sets: collection.len() as u64,
        named: named.len() as u64,
        name_bytes,
        checksum: 0,
    };
    let mut at = 0u64;
    emit(w, &mut at, 0, &encode_header(&header, &sections))?;
    emit(w, &mut at, sections.part_table, &table)?;
    emit(w, &mut at, sections.layout, &layout)?;
    emit(w, &mut at, sections.sets, &set_table)?;
    emit(w, &mut at, sections.names, &name_section)?;
    emit(w, &mut at, sections.parts, &[])?;
    let no_names = SetNames::new();
    for ((&offset, &bytes), (_, index)) in offsets.iter().zip(&sizes).zip(&parts) {
        emit(w, &mut at, offset, &[])?;
        // Every part carries the collection's k-mer length (parts added
        // after it was set may not): a copy of the part's handles, not of
        // its rows.
        let relabelled;
        let index = if index.kmer_length() == head.kmer_length {
            *index
        } else {
            relabelled = {
                let mut part = (*index).clone();
                part.set_kmer_length(head.kmer_length);
                part
            };
            &relabelled
        };
        let written = super::write_index_to(w, index, &no_names)?;
        if written != bytes {
            return Err(Error::Invalid(format!("a part wrote {written} bytes, {bytes} were expected")));
        }
        at += bytes;
    }
    Ok(file_len)
}

/// Writes zeros from `*at` up to `to` (less than [`ALIGN`] bytes), then
/// `bytes`.
fn emit(w: &mut dyn Write, at: &mut u64, to: u64, bytes: &[u8]) -> Result<()> {
    let io = |e: std::io::Error| Error::io("write", Path::new("collection file"), e);
    let pad =
        to.checked_sub(*at).filter(|&p| p < ALIGN).ok_or(Error::Invalid("collection sections out of order".into()))?;
    w.write_all(&[0u8; ALIGN as usize][..pad as usize]).map_err(io)?;
    w.write_all(bytes).map_err(io)?;
    *at = to + bytes.len() as u64;
    Ok(())
}
