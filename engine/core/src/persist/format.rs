//! The byte layout of an index file (specified in `docs/FORMAT.md`): header
//! encoding, the canonical section layout, and the checked reader of every
//! section before the row data.
//!
//! The reader works over any [`Read`] of known length and reads the file in
//! order, so the same code serves files, byte slices and memory maps. Every
//! declared count is checked against the file length before anything is
//! allocated for it.

use std::io::Read;

use xxhash_rust::xxh3::xxh3_64;

use super::names::{MAX_NAME_BYTES, Raw, SetNames};
use crate::error::{Error, Result};
use crate::kmer::{KmerLength, MAX_KMER_LENGTH};
use crate::params::{BloomParams, HashScheme};
use crate::sliced::{ColumnEntry, MAX_SHARD_COLUMNS, SlicedConfig, is_shard_width, shard_words};

/// The first 8 bytes of every index file.
pub const MAGIC: [u8; 8] = *b"BLMSLICE";
/// Major format version this build writes and reads. A reader rejects any
/// other major version ([`Error::UnsupportedVersion`]).
pub const FORMAT_MAJOR: u16 = 1;
/// Minor format version this build writes. Minor versions only add meaning
/// to bytes that earlier minors require to be zero, so a reader accepts any
/// minor of its major. Minor 1 added the k-mer length (header bytes
/// 104..108; a minor-0 file reads as an index without one) and hash-scheme
/// code 1 ([`HashScheme::Xxh3Triple`]; minor 0 files hold code 0 only).
/// Minor 2 added narrow shards: a shard's columns may be 1, 2, 4, ..., 256
/// besides a multiple of 512, its rows padded with zeros to a multiple of
/// 64 bytes (minor 0 and 1 files hold multiples of 512 only, whose layout
/// is unchanged).
pub const FORMAT_MINOR: u16 = 2;
/// The first minor version whose shards may be narrower than 512 columns.
const NARROW_MINOR: u16 = 2;
/// Size of the fixed header.
pub const HEADER_BYTES: u64 = 128;
/// Alignment of every shard's row data in the file (one cache line), so a
/// memory map can be used in place.
pub const ROWS_ALIGN: u64 = 64;
/// Bytes of one shard table entry.
pub(crate) const SHARD_ENTRY_BYTES: u64 = 32;
/// Bytes of one id map entry.
pub(crate) const SET_ENTRY_BYTES: u64 = 24;
pub(crate) const CHECKSUM_BYTES: u64 = 8;
/// Bytes of the header covered by its checksum (the checksum sits after).
const HEADER_CHECKED: usize = 120;
/// Where the k-mer length (a `u32`, 0 = not a sequence index) sits in the
/// header since minor version 1; the reserved bytes follow it.
const KMER_AT: usize = 104;

/// The decoded header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Header {
    pub(crate) minor: u16,
    pub(crate) file_len: u64,
    pub(crate) params: BloomParams,
    pub(crate) config: SlicedConfig,
    pub(crate) n_shards: u64,
    pub(crate) n_sets: u64,
    pub(crate) names_len: u64,
    pub(crate) kmer_length: Option<KmerLength>,
    pub(crate) checksum: u64,
}

/// Section offsets, all a pure function of the counts in the header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Layout {
    pub(crate) id_map: u64,
    pub(crate) names: u64,
    pub(crate) names_end: u64,
    pub(crate) rows: u64,
}

impl Layout {
    /// The canonical layout, or `None` when the counts overflow.
    pub(crate) fn new(n_shards: u64, n_sets: u64, names_len: u64) -> Option<Layout> {
        let id_map = HEADER_BYTES.checked_add(n_shards.checked_mul(SHARD_ENTRY_BYTES)?)?.checked_add(CHECKSUM_BYTES)?;
        let names = id_map.checked_add(n_sets.checked_mul(SET_ENTRY_BYTES)?)?.checked_add(CHECKSUM_BYTES)?;
        let names_end = names.checked_add(names_len)?.checked_add(CHECKSUM_BYTES)?;
        let rows = names_end.checked_next_multiple_of(ROWS_ALIGN)?;
        Some(Layout { id_map, names, names_end, rows })
    }
}

/// One shard table entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ShardEntry {
    /// Columns (a width of [`is_shard_width`]).
    pub(crate) columns: usize,
    /// Row words, padding included ([`shard_words`]).
    pub(crate) words: usize,
    pub(crate) ones: u64,
    pub(crate) offset: u64,
    pub(crate) checksum: u64,
}

/// Every section before the row data, checked.
#[derive(Clone, Debug)]
pub(crate) struct Meta {
    pub(crate) header: Header,
    pub(crate) shards: Vec<ShardEntry>,
    pub(crate) entries: Vec<ColumnEntry>,
    pub(crate) names: SetNames,
    pub(crate) section_checksums: [u64; 3],
}

pub(crate) fn le_u16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

pub(crate) fn le_u32(b: &[u8], at: usize) -> u32 {
    let mut a = [0; 4];
    a.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(a)
}

pub(crate) fn le_u64(b: &[u8], at: usize) -> u64 {
    let mut a = [0; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

/// The header's hash-scheme code (bytes 36..40). Minor 0 files hold 0 only;
/// code 1 is minor 1's addition.
pub(crate) fn scheme_code(s: HashScheme) -> u32 {
    match s {
        HashScheme::Xxh3Double => 0,
        HashScheme::Xxh3Triple => 1,
    }
}

/// The scheme of a header code, if this build knows it.
pub(crate) fn scheme_of_code(code: u32) -> Option<HashScheme> {
    HashScheme::ALL.into_iter().find(|&s| scheme_code(s) == code)
}

/// Encodes the header (with its checksum).
pub(crate) fn encode_header(h: &Header, layout: &Layout) -> [u8; HEADER_BYTES as usize] {
    let mut b = [0u8; HEADER_BYTES as usize];
    b[0..8].copy_from_slice(&MAGIC);
    b[8..10].copy_from_slice(&FORMAT_MAJOR.to_le_bytes());
    b[10..12].copy_from_slice(&FORMAT_MINOR.to_le_bytes());
    b[12..16].copy_from_slice(&(HEADER_BYTES as u32).to_le_bytes());
    b[16..24].copy_from_slice(&h.file_len.to_le_bytes());
    b[24..32].copy_from_slice(&h.params.m().to_le_bytes());
    b[32..36].copy_from_slice(&h.params.k().to_le_bytes());
    b[36..40].copy_from_slice(&scheme_code(h.params.scheme()).to_le_bytes());
    b[40..48].copy_from_slice(&h.params.seed().to_le_bytes());
    b[48..52].copy_from_slice(&(h.config.max_shard_columns as u32).to_le_bytes());
    b[52..56].copy_from_slice(&(h.config.prefetch_distance as u32).to_le_bytes());
    b[56..64].copy_from_slice(&h.n_shards.to_le_bytes());
    b[64..72].copy_from_slice(&h.n_sets.to_le_bytes());
    b[72..80].copy_from_slice(&h.names_len.to_le_bytes());
    b[80..88].copy_from_slice(&layout.id_map.to_le_bytes());
    b[88..96].copy_from_slice(&layout.names.to_le_bytes());
    b[96..104].copy_from_slice(&layout.rows.to_le_bytes());
    let kmer = h.kmer_length.map_or(0, |k| k.get() as u32);
    b[KMER_AT..KMER_AT + 4].copy_from_slice(&kmer.to_le_bytes());
    let sum = xxh3_64(&b[..HEADER_CHECKED]);
    b[HEADER_CHECKED..].copy_from_slice(&sum.to_le_bytes());
    b
}

pub(crate) fn corrupt<T>(msg: impl Into<String>) -> Result<T> {
    Err(Error::CorruptFile(msg.into()))
}

/// Reads exactly `buf.len()` bytes; a short read is [`Error::Truncated`]
/// (the length was checked beforehand, so this means the file shrank).
pub(crate) fn read_exact(
    r: &mut impl Read,
    buf: &mut [u8],
    section: &'static str,
    at: u64,
    file_len: u64,
) -> Result<()> {
    r.read_exact(buf).map_err(|e| match e.kind() {
        std::io::ErrorKind::UnexpectedEof => Error::Truncated { section, needed: at + buf.len() as u64, len: file_len },
        _ => Error::io("read", std::path::Path::new(section), e),
    })
}

/// `len` bytes into a new buffer; `len` is known to fit in the file.
pub(crate) fn read_vec(r: &mut impl Read, len: u64, section: &'static str, at: u64, file_len: u64) -> Result<Vec<u8>> {
    let len = usize::try_from(len).map_err(|_| Error::CapacityOverflow("section size"))?;
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| Error::CapacityOverflow("section buffer"))?;
    v.resize(len, 0);
    read_exact(r, &mut v, section, at, file_len)?;
    Ok(v)
}

/// Splits a section into its body and checks the trailing xxh3.
pub(crate) fn checked_body<'a>(section: &'a [u8], name: &str) -> Result<(&'a [u8], u64)> {
    let (body, sum) = section.split_at(section.len() - CHECKSUM_BYTES as usize);
    let want = le_u64(sum, 0);
    if xxh3_64(body) != want {
        return Err(Error::ChecksumMismatch { section: name.to_owned() });
    }
    Ok((body, want))
}

/// The major version of the file whose first bytes are `b`, or `None` when
/// they are not [`MAGIC`] and a version.
pub(crate) fn major_version(b: &[u8]) -> Option<u16> {
    (b.len() >= 10 && b[..8] == MAGIC).then(|| le_u16(b, 8))
}

/// The checks every file header (of either format) starts with, in this
/// order: the magic bytes, `header_bytes` of header in `b` (the file's
/// first bytes, `real_len` in all), the major version `major`, the header
/// checksum (stored at byte `checked`, over the bytes before it) and the
/// header size field. Returns the minor version and the checksum.
pub(crate) fn check_header_start(
    b: &[u8],
    real_len: u64,
    header_bytes: u64,
    major: u16,
    checked: usize,
) -> Result<(u16, u64)> {
    if b.len() < 8 || b[0..8] != MAGIC {
        return Err(Error::BadMagic);
    }
    if b.len() < header_bytes as usize {
        return Err(Error::Truncated { section: "header", needed: header_bytes, len: real_len });
    }
    let (found, minor) = (le_u16(b, 8), le_u16(b, 10));
    if found != major {
        return Err(Error::UnsupportedVersion { major: found, minor, supported: major });
    }
    let checksum = le_u64(b, checked);
    if xxh3_64(&b[..checked]) != checksum {
        return Err(Error::ChecksumMismatch { section: "header".into() });
    }
    if u64::from(le_u32(b, 12)) != header_bytes {
        return corrupt(format!("header size is not what version {major} writes"));
    }
    Ok((minor, checksum))
}

/// The file length a header declares (at byte 16), which must be the real
/// length `real_len`.
pub(crate) fn declared_file_len(b: &[u8], real_len: u64) -> Result<u64> {
    let file_len = le_u64(b, 16);
    if file_len > real_len {
        return Err(Error::Truncated { section: "file", needed: file_len, len: real_len });
    }
    if file_len < real_len {
        return corrupt(format!("{} trailing bytes after the declared end at {file_len}", real_len - file_len));
    }
    Ok(file_len)
}

/// Decodes and checks the header against the real file length.
pub(crate) fn decode_header(b: &[u8], real_len: u64) -> Result<(Header, Layout)> {
    let (minor, checksum) = check_header_start(b, real_len, HEADER_BYTES, FORMAT_MAJOR, HEADER_CHECKED)?;
    // Bytes a minor this build knows leaves reserved must be zero; later
    // minors may give meaning to them (and a reader ignores that meaning).
    let reserved_from = if minor == 0 { KMER_AT } else { KMER_AT + 4 };
    if minor <= FORMAT_MINOR && b[reserved_from..HEADER_CHECKED].iter().any(|&x| x != 0) {
        return corrupt(format!("reserved header bytes are not zero in a version 1.{minor} file"));
    }
    let kmer_length = match le_u32(b, KMER_AT) {
        0 => None,
        k if k as usize <= MAX_KMER_LENGTH => KmerLength::new(k as usize).ok(),
        k => return corrupt(format!("k-mer length {k} is above {MAX_KMER_LENGTH}")),
    };
    let file_len = declared_file_len(b, real_len)?;
    let (m, k) = (le_u64(b, 24), le_u32(b, 32));
    let params = BloomParams::new(m, k).map_err(|e| Error::CorruptFile(format!("parameters: {e}")))?;
    let code = le_u32(b, 36);
    let Some(scheme) = scheme_of_code(code) else {
        return corrupt(format!("unknown hash scheme code {code}"));
    };
    if minor == 0 && scheme != HashScheme::Xxh3Double {
        return corrupt(format!("hash scheme code {code} in a minor 0 header (minor 0 defines code 0 only)"));
    }
    let params = params.with_scheme(scheme).with_seed(le_u64(b, 40));
    let max_cols = le_u32(b, 48) as usize;
    if !(512..=MAX_SHARD_COLUMNS).contains(&max_cols) || !max_cols.is_multiple_of(512) {
        return corrupt(format!("max shard columns {max_cols} is not a multiple of 512 in 512..={MAX_SHARD_COLUMNS}"));
    }
    let config = SlicedConfig {
        max_shard_columns: max_cols,
        prefetch_distance: le_u32(b, 52) as usize,
        ..SlicedConfig::default()
    };
    if config.prefetch_distance > 64 {
        return corrupt(format!("prefetch distance {} is above 64", config.prefetch_distance));
    }
    let (n_shards, n_sets, names_len) = (le_u64(b, 56), le_u64(b, 64), le_u64(b, 72));
    let Some(layout) = Layout::new(n_shards, n_sets, names_len) else {
        return corrupt(format!("absurd counts: {n_shards} shards, {n_sets} sets, {names_len} name bytes"));
    };
    if layout.rows > file_len {
        return Err(Error::Truncated { section: "tables", needed: layout.rows, len: file_len });
    }
    if (le_u64(b, 80), le_u64(b, 88), le_u64(b, 96)) != (layout.id_map, layout.names, layout.rows) {
        return corrupt("section offsets differ from the canonical layout (misaligned sections)");
    }
    let header = Header { minor, file_len, params, config, n_shards, n_sets, names_len, kmer_length, checksum };
    Ok((header, layout))
}

/// Reads and checks the header, shard table, id map, names and the padding
/// before the rows. `real_len` is the true length of what `r` reads.
pub(crate) fn read_meta(r: &mut impl Read, real_len: u64) -> Result<Meta> {
    let mut head = [0u8; HEADER_BYTES as usize];
    let avail = real_len.min(HEADER_BYTES) as usize;
    read_exact(r, &mut head[..avail], "header", 0, real_len)?;
    let (header, layout) = decode_header(&head[..avail], real_len)?;
    let file_len = header.file_len;
    let m = header.params.m();

    // Shard table.
    let table = read_vec(r, layout.id_map - HEADER_BYTES, "shard table", HEADER_BYTES, file_len)?;
    let (body, table_sum) = checked_body(&table, "shard table")?;
    let mut shards = Vec::with_capacity(header.n_shards as usize);
    let mut offset = layout.rows;
    for (i, e) in body.chunks_exact(SHARD_ENTRY_BYTES as usize).enumerate() {
        let columns = le_u64(e, 0);
        let max = header.config.max_shard_columns;
        let width = usize::try_from(columns).ok().filter(|&c| is_shard_width(c, max));
        let Some(columns) = width.filter(|&c| c.is_multiple_of(512) || header.minor >= NARROW_MINOR) else {
            return corrupt(format!(
                "shard {i}: {columns} columns is not a shard width of a version 1.{} file (up to {max})",
                header.minor
            ));
        };
        let words = usize::try_from(m).ok().and_then(|m| shard_words(m, columns));
        let bytes = words.and_then(|w| (w as u64).checked_mul(8));
        let Some(end) = bytes.and_then(|b| b.checked_add(offset)) else {
            return corrupt(format!("shard {i}: row data size overflows"));
        };
        if end > file_len {
            return Err(Error::Truncated { section: "shard rows", needed: end, len: file_len });
        }
        let declared = le_u64(e, 16);
        if declared != offset {
            return corrupt(format!(
                "shard {i}: rows declared at {declared}, expected at {offset} (misaligned section)"
            ));
        }
        let ones = le_u64(e, 8);
        let bits = m * columns as u64;
        if ones > bits {
            return corrupt(format!("shard {i}: {ones} set bits in {bits} bits"));
        }
        let words = words.expect("checked above");
        shards.push(ShardEntry { columns, words, ones, offset, checksum: le_u64(e, 24) });
        offset = end;
    }
    if offset != file_len {
        return corrupt(format!("row data ends at {offset} but the file at {file_len}"));
    }

    // Id map.
    let map = read_vec(r, layout.names - layout.id_map, "id map", layout.id_map, file_len)?;
    let (body, map_sum) = checked_body(&map, "id map")?;
    let mut entries = Vec::with_capacity(header.n_sets as usize);
    let mut name_lens = Vec::with_capacity(header.n_sets as usize);
    let mut total_names = 0u64;
    for e in body.chunks_exact(SET_ENTRY_BYTES as usize) {
        let (id, shard, col, name_len) = (le_u64(e, 0), le_u32(e, 8), le_u32(e, 12), le_u32(e, 16));
        if le_u32(e, 20) != 0 {
            return corrupt(format!("id map entry of set {id}: reserved bytes are not zero"));
        }
        if name_len as usize > MAX_NAME_BYTES {
            return corrupt(format!("set {id}: name of {name_len} bytes is above the limit of {MAX_NAME_BYTES}"));
        }
        total_names += u64::from(name_len);
        entries.push((id, shard, col));
        name_lens.push(name_len as usize);
    }
    if total_names != header.names_len {
        return corrupt(format!("names take {total_names} bytes but the header says {}", header.names_len));
    }

    // Names.
    let blob = read_vec(r, layout.names_end - layout.names, "names", layout.names, file_len)?;
    let (_, names_sum) = checked_body(&blob, "names")?;
    let mut spans = Vec::with_capacity(entries.len());
    let mut offset = 0;
    for (&(id, _, _), &len) in entries.iter().zip(&name_lens) {
        spans.push((id, offset, len));
        offset += len;
    }
    let mut blob = blob;
    blob.truncate(offset);
    // Built on first use; `persist` checks uniqueness when it verifies.
    let names = SetNames::from_raw(Raw { blob, spans });

    // Padding to the first shard's rows: zeros.
    let pad = read_vec(r, layout.rows - layout.names_end, "padding", layout.names_end, file_len)?;
    if pad.iter().any(|&b| b != 0) {
        return corrupt("padding before the row data is not zero");
    }
    Ok(Meta { header, shards, entries, names, section_checksums: [table_sum, map_sum, names_sum] })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_is_canonical_and_checked() {
        let l = Layout::new(2, 3, 10).unwrap();
        assert_eq!(l.id_map, 128 + 64 + 8);
        assert_eq!(l.names, l.id_map + 72 + 8);
        assert_eq!(l.names_end, l.names + 18);
        assert_eq!(l.rows % ROWS_ALIGN, 0);
        assert!(Layout::new(u64::MAX / 16, 0, 0).is_none());
        assert!(Layout::new(0, 0, u64::MAX - 100).is_none());
    }

    #[test]
    fn short_inputs_are_typed_errors() {
        assert_eq!(decode_header(b"", 0).unwrap_err(), Error::BadMagic);
        assert_eq!(decode_header(b"BLMSLI", 6).unwrap_err(), Error::BadMagic);
        assert!(matches!(decode_header(&MAGIC, 8).unwrap_err(), Error::Truncated { .. }));
        let mut b = [0u8; 128];
        b[..8].copy_from_slice(&MAGIC);
        b[8] = 2;
        assert!(matches!(decode_header(&b, 128).unwrap_err(), Error::UnsupportedVersion { major: 2, .. }));
    }
}
