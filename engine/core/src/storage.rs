//! Zeroed, 64-byte aligned word storage, with transparent huge pages asked
//! for on large buffers.
//!
//! Random row reads are faster on 2 MiB pages (fewer TLB misses; see
//! `bench/RESULTS.md`, section "Latency", on mapped files), so buffers of at least [`HUGE_PAGE_BYTES`] are
//! aligned to 2 MiB and `madvise(MADV_HUGEPAGE)`d before they are first
//! touched. That is advice: a kernel that refuses it changes nothing else.
//!
//! A buffer may instead be a read-only window of a memory-mapped index file
//! (see [`crate::persist`]): queries read it in place, and the first write
//! copies it into an owned buffer (copy on write), so a mapped file is never
//! written through.
//!
//! [`Words::zeroed`] is public for code that wants memory laid out as the
//! index's rows are (the benchmarks' memory roofline measures over it); only
//! the crate itself makes mapped windows.

use std::sync::Arc;

#[cfg(miri)]
use aligned_vec::ConstAlign;
use aligned_vec::{AVec, RuntimeAlign};

use crate::error::{Error, Result};

/// Size of an x86-64 / aarch64 transparent huge page; buffers at least this
/// large are aligned to it and advised to use huge pages.
pub const HUGE_PAGE_BYTES: usize = 2 << 20;

/// Alignment of every word buffer: one cache line, so a 512-bit chunk never
/// straddles two lines.
pub const CACHE_LINE_BYTES: usize = 64;

/// A read-only map of a whole file, as [`map_file`] makes it: a
/// `memmap2::Mmap`.
#[cfg(not(miri))]
pub(crate) type FileMap = memmap2::Mmap;

/// A read-only map of a whole file, as [`map_file`] makes it. Miri cannot
/// map a file (its `mmap` is anonymous memory only), so under Miri this is
/// a page-aligned copy of the file read into memory: the code over a map
/// (windows, deferred verification, copy on write) then runs under Miri
/// unchanged, and only the `mmap` call itself is left out.
///
/// Public (and hidden) only so that the sealed `persist` trait may name it,
/// as it names `memmap2::Mmap` in other builds.
#[cfg(miri)]
#[doc(hidden)]
pub struct FileMap(AVec<u8, ConstAlign<4096>>);

#[cfg(miri)]
impl core::ops::Deref for FileMap {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.0
    }
}

/// Maps the whole of `file` read-only (under Miri, reads it into a
/// page-aligned buffer: see [`FileMap`]).
///
/// # Safety
///
/// That of `memmap2::Mmap::map`: the file must not be truncated or written
/// into while the map is alive.
#[cfg(not(miri))]
pub(crate) unsafe fn map_file(file: &std::fs::File) -> std::io::Result<FileMap> {
    // SAFETY: forwarded to the caller (this function's `# Safety`).
    unsafe { memmap2::Mmap::map(file) }
}

/// Maps the whole of `file` read-only (under Miri, reads it into a
/// page-aligned buffer: see [`FileMap`]).
///
/// # Safety
///
/// None needed for the copy; the function is `unsafe` to keep the
/// signature of the `mmap` build.
#[cfg(miri)]
pub(crate) unsafe fn map_file(file: &std::fs::File) -> std::io::Result<FileMap> {
    use std::io::{Read, Seek};
    let mut file = file;
    let len = usize::try_from(file.metadata()?.len()).map_err(std::io::Error::other)?;
    let mut buf = AVec::<u8, ConstAlign<4096>>::new(4096);
    buf.resize(len, 0);
    file.rewind()?;
    file.read_exact(&mut buf)?;
    Ok(FileMap(buf))
}

/// A cache-line aligned buffer of `u64` words: owned, or (inside the crate)
/// a window of a memory-mapped file. It derefs to `[u64]`; words made by
/// [`Words::zeroed`] are owned and can be written.
pub struct Words {
    buf: Backing,
}

enum Backing {
    Owned(AVec<u64, RuntimeAlign>),
    /// `len` words at byte `offset` of `map`; `offset` is a multiple of 64
    /// and the map starts on a page boundary, so the words are 64-byte
    /// aligned. Only built on little-endian targets (the file is
    /// little-endian, and the words are used in place).
    Mapped {
        map: Arc<FileMap>,
        offset: usize,
        len: usize,
    },
}

impl Words {
    /// `len` zeroed, owned words: 64-byte aligned, or, from
    /// [`HUGE_PAGE_BYTES`] up, 2 MiB aligned and advised to use transparent
    /// huge pages before they are first touched.
    ///
    /// # Errors
    ///
    /// [`Error::CapacityOverflow`] when the allocation cannot be made.
    pub fn zeroed(len: usize) -> Result<Self> {
        let bytes = len.checked_mul(8).ok_or(Error::CapacityOverflow("word buffer size"))?;
        let align = if bytes >= HUGE_PAGE_BYTES { HUGE_PAGE_BYTES } else { CACHE_LINE_BYTES };
        let mut buf = AVec::<u64, RuntimeAlign>::new(align);
        buf.try_reserve_exact(len).map_err(|_| Error::CapacityOverflow("word buffer allocation"))?;
        if bytes >= HUGE_PAGE_BYTES {
            advise_huge_pages(buf.as_ptr().cast(), buf.capacity() * 8);
        }
        buf.resize(len, 0);
        Ok(Words { buf: Backing::Owned(buf) })
    }

    /// `len` words at byte `offset` of a mapped file, used in place.
    ///
    /// # Errors
    ///
    /// [`Error::CorruptFile`] when the window is not 64-byte aligned or does
    /// not lie inside the map.
    #[cfg(target_endian = "little")]
    pub(crate) fn mapped(map: Arc<FileMap>, offset: usize, len: usize) -> Result<Self> {
        let end = len.checked_mul(8).and_then(|b| b.checked_add(offset));
        if end.is_none_or(|end| end > map.len()) {
            return Err(Error::CorruptFile(format!("mapped window at {offset} of {len} words is outside the file")));
        }
        if !(map.as_ptr() as usize + offset).is_multiple_of(CACHE_LINE_BYTES) {
            return Err(Error::CorruptFile(format!("mapped window at {offset} is not 64-byte aligned")));
        }
        // A window of at least a huge page is advised like an owned buffer:
        // a kernel whose file system keeps large folios for the file can
        // then map its 2 MiB-aligned parts with one page-table entry each
        // (see `bench/RESULTS.md`, section "Latency", for what it does here).
        if len * 8 >= HUGE_PAGE_BYTES {
            advise_huge_pages(map.as_ptr().wrapping_add(offset), len * 8);
        }
        Ok(Words { buf: Backing::Mapped { map, offset, len } })
    }

    /// Whether the words are a window of a mapped file.
    pub(crate) fn is_mapped(&self) -> bool {
        matches!(self.buf, Backing::Mapped { .. })
    }

    /// Bytes allocated (for a mapped window: the bytes mapped).
    pub(crate) fn allocated_bytes(&self) -> usize {
        match &self.buf {
            Backing::Owned(buf) => buf.capacity() * 8,
            Backing::Mapped { len, .. } => len * 8,
        }
    }

    /// The address range of the words: `(start, bytes)`.
    pub(crate) fn byte_range(&self) -> (usize, usize) {
        (self.as_ptr() as usize, self.len() * 8)
    }

    /// The words as bytes (little-endian on the targets that save them in
    /// place).
    pub(crate) fn as_bytes(&self) -> &[u8] {
        bytemuck::cast_slice(self)
    }

    /// The words as mutable bytes (owned words only: see [`Words::make_owned`]).
    pub(crate) fn as_bytes_mut(&mut self) -> &mut [u8] {
        bytemuck::cast_slice_mut(self)
    }
}

impl core::ops::Deref for Words {
    type Target = [u64];
    #[inline]
    fn deref(&self) -> &[u64] {
        match &self.buf {
            Backing::Owned(buf) => buf,
            Backing::Mapped { map, offset, len } => {
                let bytes = &map[*offset..][..len * 8];
                // Alignment and bounds were checked in `Words::mapped`; any
                // bit pattern is a valid `u64`.
                bytemuck::cast_slice(bytes)
            }
        }
    }
}

impl core::ops::DerefMut for Words {
    /// The words, mutably. Only owned words can be written: inside the crate,
    /// every mutating operation over words that may be mapped calls
    /// `Words::make_owned` first (a fallible copy), so the copy is explicit
    /// and its failure is a typed error, never a panic here.
    #[inline]
    fn deref_mut(&mut self) -> &mut [u64] {
        match &mut self.buf {
            Backing::Owned(buf) => buf,
            Backing::Mapped { .. } => {
                unreachable!("mapped words written without Words::make_owned (a bug in the caller)")
            }
        }
    }
}

impl Words {
    /// Makes the words writable: copies a mapped window into an owned
    /// buffer (the file is never written through); owned words are left as
    /// they are.
    ///
    /// # Errors
    ///
    /// [`Error::CapacityOverflow`] when the copy cannot be allocated; the
    /// words are unchanged then.
    pub(crate) fn make_owned(&mut self) -> Result<()> {
        if self.is_mapped() {
            *self = self.try_copy()?;
        }
        Ok(())
    }

    /// An owned copy of the words.
    ///
    /// # Errors
    ///
    /// [`Error::CapacityOverflow`] when the copy cannot be allocated.
    pub(crate) fn try_copy(&self) -> Result<Words> {
        let mut copy = Words::zeroed(self.len())?;
        copy.copy_from_slice(self);
        Ok(copy)
    }

    /// A clone: free for a mapped window (it shares the map), an owned copy
    /// otherwise.
    ///
    /// # Errors
    ///
    /// [`Error::CapacityOverflow`] when an owned copy cannot be allocated.
    pub(crate) fn try_clone(&self) -> Result<Words> {
        match &self.buf {
            Backing::Mapped { map, offset, len } => {
                Ok(Words { buf: Backing::Mapped { map: Arc::clone(map), offset: *offset, len: *len } })
            }
            Backing::Owned(_) => self.try_copy(),
        }
    }
}

impl Clone for Words {
    /// As `Words::try_clone` (a mapped window shares its map, owned words
    /// are copied); like `Vec::clone`, an allocation failure
    /// goes to the global allocation error handler (fallible paths call
    /// `try_clone`).
    fn clone(&self) -> Self {
        self.try_clone().unwrap_or_else(|_| {
            std::alloc::handle_alloc_error(
                std::alloc::Layout::array::<u64>(self.len()).unwrap_or_else(|_| std::alloc::Layout::new::<u64>()),
            )
        })
    }
}

impl core::fmt::Debug for Words {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Words({} words{})", self.len(), if self.is_mapped() { ", mapped" } else { "" })
    }
}

/// Asks for transparent huge pages on the whole allocation of `v` (its
/// capacity) when that spans at least [`HUGE_PAGE_BYTES`]; call it before
/// the pages are first written. For buffers handed out fresh on every call
/// (the Python package's answer arrays): the first write to each page
/// takes a fault, and a large answer on 2 MiB pages takes 512 times fewer
/// faults than on 4 KiB pages. Advice only,
/// as for [`Words::zeroed`]; elsewhere than Linux it does nothing.
pub fn advise_huge_capacity<T>(v: &Vec<T>) {
    let bytes = v.capacity().saturating_mul(core::mem::size_of::<T>());
    if bytes >= HUGE_PAGE_BYTES {
        advise_huge_pages(v.as_ptr().cast(), bytes);
    }
}

/// Bytes of `[ptr, ptr + bytes)` that sit on transparent huge pages now, as
/// `/proc/self/smaps` reports them (`AnonHugePages`, `FilePmdMapped`,
/// `ShmemPmdMapped`); 0 elsewhere than Linux or when smaps cannot be read.
/// See [`huge_page_bytes_of`] for how exact it is.
pub fn huge_page_bytes_in(ptr: *const u8, bytes: usize) -> usize {
    huge_page_bytes_of(&[(ptr as usize, bytes)])
}

/// [`huge_page_bytes_in`] summed over several `(start, bytes)` ranges, with
/// one read of `/proc/self/smaps`. The kernel reports huge pages per
/// mapping, not per address: a mapping that lies inside one range counts in
/// full, and one that only overlaps a range counts at most the overlap
/// (rounded down to whole huge pages), so the figure is exact when the
/// ranges' mappings are their own (as 2 MiB-aligned, advised buffers are:
/// the advice splits them from their neighbours) and an upper bound
/// otherwise. Reads a file and allocates: not for a query path.
pub fn huge_page_bytes_of(ranges: &[(usize, usize)]) -> usize {
    #[cfg(target_os = "linux")]
    {
        match std::fs::read_to_string("/proc/self/smaps") {
            Ok(smaps) => huge_bytes_from_smaps(&smaps, ranges),
            Err(_) => 0,
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = ranges;
        0
    }
}

/// The sum of [`huge_page_bytes_of`] from the text of an smaps file.
fn huge_bytes_from_smaps(smaps: &str, ranges: &[(usize, usize)]) -> usize {
    let mut total = 0;
    // The current mapping: its address range and its huge bytes so far.
    let mut vma: Option<(usize, usize, usize)> = None;
    let mut finish = |vma: Option<(usize, usize, usize)>| {
        if let Some((lo, hi, huge)) = vma {
            for &(start, bytes) in ranges {
                let (a, b) = (lo.max(start), hi.min(start.saturating_add(bytes)));
                if a >= b {
                    continue;
                }
                let whole = lo >= start && hi <= start.saturating_add(bytes);
                total += if whole { huge } else { huge.min((b - a) / HUGE_PAGE_BYTES * HUGE_PAGE_BYTES) };
            }
        }
    };
    for line in smaps.lines() {
        let mut fields = line.split_ascii_whitespace();
        let Some(first) = fields.next() else { continue };
        if let Some((lo, hi)) = first.split_once('-')
            && let (Ok(lo), Ok(hi)) = (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16))
        {
            finish(vma.take());
            vma = Some((lo, hi, 0));
        } else if matches!(first, "AnonHugePages:" | "FilePmdMapped:" | "ShmemPmdMapped:")
            && let (Some(kb), Some((_, _, huge))) = (fields.next().and_then(|v| v.parse::<usize>().ok()), vma.as_mut())
        {
            *huge += kb * 1024;
        }
    }
    finish(vma);
    total
}

// Not under Miri, which has no `madvise` (and whose memory has no pages to
// advise on): the advice changes nothing a program can observe.
#[cfg(all(target_os = "linux", not(miri)))]
fn advise_huge_pages(ptr: *const u8, bytes: usize) {
    let start = ptr as usize;
    let aligned = start.next_multiple_of(4096);
    let len = (start + bytes).saturating_sub(aligned) & !4095;
    if len == 0 {
        return;
    }
    // SAFETY: the range lies inside an allocation or a mapping this process owns (page
    // aligned inward), and MADV_HUGEPAGE only changes how the kernel backs
    // it, never its contents or validity. The result is advice; an error
    // (THP disabled) is deliberately ignored.
    unsafe {
        libc::madvise(aligned as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
    }
}

#[cfg(any(not(target_os = "linux"), miri))]
fn advise_huge_pages(_ptr: *const u8, _bytes: usize) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zeroed_is_aligned_and_zero() {
        // Not the huge-page size under Miri, which would interpret a write
        // and a read of each of its quarter million words.
        let huge = if cfg!(miri) { 1001 } else { HUGE_PAGE_BYTES / 8 + 3 };
        for len in [0usize, 1, 8, 1000, huge] {
            let w = Words::zeroed(len).unwrap();
            assert_eq!(w.len(), len);
            assert!(w.iter().all(|&x| x == 0));
            assert_eq!(w.as_ptr() as usize % CACHE_LINE_BYTES, 0);
        }
    }

    #[cfg(target_endian = "little")]
    #[test]
    fn mapped_words_are_read_in_place_and_copied_on_write() {
        use std::io::Write;
        let mut file = tempfile::tempfile().unwrap();
        let words: Vec<u64> = (0..64).collect();
        file.write_all(&[0u8; 64]).unwrap();
        file.write_all(bytemuck::cast_slice(&words)).unwrap();
        // SAFETY: a private temporary file nobody else writes.
        let map = Arc::new(unsafe { map_file(&file) }.unwrap());
        assert!(Words::mapped(Arc::clone(&map), 8, 8).is_err(), "misaligned");
        assert!(Words::mapped(Arc::clone(&map), 64, 65).is_err(), "past the end");
        let mut w = Words::mapped(Arc::clone(&map), 64, 64).unwrap();
        assert!(w.is_mapped());
        assert_eq!(&w[..], &words[..]);
        let shared = w.clone();
        assert!(shared.is_mapped());
        w.make_owned().unwrap();
        w[3] = 99;
        assert!(!w.is_mapped());
        assert_eq!(w[3], 99);
        assert_eq!(shared[3], 3, "the map is never written through");
        assert_eq!(w.as_ptr() as usize % CACHE_LINE_BYTES, 0);
    }

    #[test]
    fn smaps_huge_bytes_are_attributed_to_ranges() {
        let smaps = "\
7f0000000000-7f0000600000 rw-p 00000000 00:00 0
Size:               6144 kB
AnonHugePages:      4096 kB
FilePmdMapped:         0 kB
7f0000600000-7f0000a00000 r--p 00000000 08:01 12 /tmp/index.bls
AnonHugePages:         0 kB
FilePmdMapped:      2048 kB
";
        let mib = 1 << 20;
        let base = 0x7f00_0000_0000usize;
        // The whole first mapping: all of its huge bytes.
        assert_eq!(huge_bytes_from_smaps(smaps, &[(base, 6 * mib)]), 4 * mib);
        // Part of it: at most the whole huge pages of the overlap.
        assert_eq!(huge_bytes_from_smaps(smaps, &[(base, 3 * mib)]), 2 * mib);
        // Both mappings; file-backed huge pages count too.
        assert_eq!(huge_bytes_from_smaps(smaps, &[(base, 10 * mib)]), 6 * mib);
        assert_eq!(huge_bytes_from_smaps(smaps, &[(base + 6 * mib, 4 * mib)]), 2 * mib);
        assert_eq!(huge_bytes_from_smaps(smaps, &[(base + 20 * mib, mib)]), 0);
        assert_eq!(huge_bytes_from_smaps("garbage\n\n", &[(base, mib)]), 0);
    }

    #[cfg(target_os = "linux")]
    #[test]
    #[cfg_attr(miri, ignore = "/proc/self/smaps describes the interpreter's memory, not the program's")]
    fn huge_page_bytes_never_exceed_the_range() {
        let w = Words::zeroed(4 * HUGE_PAGE_BYTES / 8).unwrap();
        let huge = huge_page_bytes_in(w.as_ptr().cast(), w.len() * 8);
        assert!(huge <= w.len() * 8, "{huge}");
    }

    #[test]
    fn absurd_sizes_are_errors() {
        assert!(Words::zeroed(usize::MAX).is_err());
        assert!(Words::zeroed(usize::MAX / 8).is_err());
    }
}
