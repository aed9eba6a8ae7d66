//! What the machine is: CPU model, available memory, and whether a buffer
//! got transparent huge pages. Linux `/proc` files; `None` elsewhere.

/// The CPU model, as `<model name> (family F, model M, stepping S)`, from
/// `/proc/cpuinfo`; `"unknown"` when it cannot be read.
pub fn cpu_model() -> String {
    let Ok(info) = std::fs::read_to_string("/proc/cpuinfo") else {
        return "unknown".to_owned();
    };
    let field = |name: &str| {
        info.lines()
            .find(|l| l.split(':').next().is_some_and(|k| k.trim() == name))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_owned())
    };
    let model = field("model name").unwrap_or_else(|| "unknown".to_owned());
    match (field("cpu family"), field("model"), field("stepping")) {
        (Some(f), Some(m), Some(s)) => format!("{model} (family {f}, model {m}, stepping {s})"),
        _ => model,
    }
}

/// `MemAvailable` from `/proc/meminfo`, in bytes.
pub fn mem_available_bytes() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Bytes backed by anonymous huge pages in the mapping of this process
/// that contains `addr` (`AnonHugePages` in `/proc/self/smaps`).
pub fn anon_huge_page_bytes(addr: usize) -> Option<u64> {
    let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
    let mut inside = false;
    for line in smaps.lines() {
        if let Some((start, end)) = mapping_range(line) {
            inside = (start..end).contains(&addr);
        } else if inside && let Some(rest) = line.strip_prefix("AnonHugePages:") {
            let kib: u64 = rest.split_whitespace().next()?.parse().ok()?;
            return Some(kib * 1024);
        }
    }
    None
}

/// The address range of an smaps mapping header line (`start-end perms ...`).
fn mapping_range(line: &str) -> Option<(usize, usize)> {
    let first = line.split_whitespace().next()?;
    let (a, b) = first.split_once('-')?;
    Some((usize::from_str_radix(a, 16).ok()?, usize::from_str_radix(b, 16).ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smaps_headers_parse() {
        assert_eq!(mapping_range("7f00-7f10 rw-p 00000000 00:00 0"), Some((0x7f00, 0x7f10)));
        assert_eq!(mapping_range("AnonHugePages:      0 kB"), None);
        assert!(!cpu_model().is_empty());
    }
}
