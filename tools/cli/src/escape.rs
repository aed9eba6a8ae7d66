//! How keys and set names (bytes, not necessarily UTF-8) are printed.
//!
//! Plain output escapes reversibly, so distinct names always print
//! distinctly and a line splits unambiguously on tabs and commas:
//!
//! | byte(s) | printed as |
//! | --- | --- |
//! | `\` | `\\` |
//! | tab, newline, carriage return | `\t`, `\n`, `\r` |
//! | `,` | `\,` |
//! | `#` as the first byte | `\#` (a bare `#ID` is a set without a name) |
//! | other ASCII control bytes, and bytes that are not UTF-8 | `\xHH` (two lowercase hex digits) |
//! | everything else (valid UTF-8) | itself |
//!
//! JSON output keeps the exact bytes: a field holds the string when the
//! bytes are valid UTF-8, and otherwise the same field name with `_b64`
//! appended holds their standard base64 (`"key_b64"`, `"set_b64"`,
//! `"sets_b64"`, `"name_b64"`).

use std::fmt::Write;

use base64::Engine;
use bloomslice::SetNames;

/// The help text's statement of the rule.
pub const RULE: &str = "\
Output of keys and set names: plain output escapes `\\` as `\\\\`, tab, newline
and carriage return as `\\t` `\\n` `\\r`, `,` as `\\,`, a leading `#` as `\\#`,
other control bytes and bytes that are not UTF-8 as `\\xHH`; `#ID` is a set
without a name. --json gives `key`/`set` strings when the bytes are UTF-8, and
`key_b64`/`set_b64` (base64) otherwise. A trailing carriage return is removed
from keys read from files and stdin (CRLF lines), never from keys given as
arguments.";

/// `bytes` escaped for plain output (see the module docs).
pub fn plain(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for (i, chunk) in bytes.utf8_chunks().enumerate() {
        for (j, c) in chunk.valid().chars().enumerate() {
            match c {
                '\\' => out.push_str("\\\\"),
                '\t' => out.push_str("\\t"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                ',' => out.push_str("\\,"),
                '#' if i == 0 && j == 0 => out.push_str("\\#"),
                c if c.is_ascii_control() => {
                    let _ = write!(out, "\\x{:02x}", c as u32);
                }
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            let _ = write!(out, "\\x{b:02x}");
        }
    }
    out
}

/// The plain-output name of set `id`: its escaped name, or `#id`.
pub fn set_name(names: &SetNames, id: u64) -> String {
    match names.name(id) {
        Some(name) => plain(name),
        None => format!("#{id}"),
    }
}

/// Base64 of `bytes`.
pub fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Sets `field` to the UTF-8 string of `bytes`, or `field_b64` to their base64.
pub fn put_bytes(obj: &mut serde_json::Map<String, serde_json::Value>, field: &str, bytes: &[u8]) {
    match std::str::from_utf8(bytes) {
        Ok(s) => obj.insert(field.to_owned(), s.into()),
        Err(_) => obj.insert(format!("{field}_b64"), b64(bytes).into()),
    };
}

/// Sets `field` (an `id` for a set without a name, `set`/`name` or `*_b64` otherwise).
pub fn put_set(obj: &mut serde_json::Map<String, serde_json::Value>, field: &str, names: &SetNames, id: u64) {
    match names.name(id) {
        Some(name) => put_bytes(obj, field, name),
        None => {
            obj.insert("id".to_owned(), id.into());
        }
    }
}

/// The bytes of `text` written in the escaped form [`plain`] prints (the
/// inverse of [`plain`]): `\\`, `\t`, `\n`, `\r`, `\,`, `\#` and `\xHH`
/// stand for their byte, every other byte for itself. For the `--escaped`
/// name arguments, which take back what the tool printed.
///
/// # Errors
///
/// A message naming the first escape that is not one of these.
pub fn parse(text: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(text.len());
    let mut rest = text;
    while let Some((&b, tail)) = rest.split_first() {
        rest = tail;
        if b != b'\\' {
            out.push(b);
            continue;
        }
        let hex = |d: &u8| (*d as char).to_digit(16).map(|v| v as u8);
        let (byte, used) = match rest {
            [b'\\', ..] => (b'\\', 1),
            [b't', ..] => (b'\t', 1),
            [b'n', ..] => (b'\n', 1),
            [b'r', ..] => (b'\r', 1),
            [b',', ..] => (b',', 1),
            [b'#', ..] => (b'#', 1),
            [b'x', hi, lo, ..] if let (Some(hi), Some(lo)) = (hex(hi), hex(lo)) => (hi << 4 | lo, 3),
            _ => {
                let seen: Vec<u8> = rest.iter().take(3).copied().collect();
                return Err(format!(
                    "`\\{}` is not an escape the tool prints (\\\\ \\t \\n \\r \\, \\# \\xHH)",
                    String::from_utf8_lossy(&seen)
                ));
            }
        };
        out.push(byte);
        rest = &rest[used..];
    }
    Ok(out)
}

/// `name` escaped for an error message: at most 60 bytes of it, then `...`.
pub fn excerpt(name: &[u8]) -> String {
    const SHOWN: usize = 60;
    if name.len() <= SHOWN {
        return plain(name);
    }
    format!("{}...", plain(&name[..SHOWN]))
}

/// Checks that the set name `name`, read at `place` (a file and line, or
/// what gave it), fits the limit of the index format.
pub fn check_name_length(name: &[u8], place: impl FnOnce() -> String) -> Result<(), crate::CliError> {
    let limit = bloomslice::persist::MAX_NAME_BYTES;
    if name.len() > limit {
        return Err(crate::CliError::Runtime(format!(
            "{}: set name {} is {} bytes long; a set name holds at most {limit} bytes",
            place(),
            excerpt(name),
            name.len()
        )));
    }
    Ok(())
}

/// The inverse of [`plain`], shared with the tests of the binary.
#[cfg(test)]
#[path = "../tests/common/unescape.rs"]
mod unescape;

#[cfg(test)]
mod tests {
    use super::*;

    use super::unescape::unescape;

    #[test]
    fn escaping_is_reversible_and_distinct() {
        let cases: &[&[u8]] = &[
            b"plain",
            b"bad\xff",
            b"bad\xfe",
            "bad\u{fffd}".as_bytes(),
            b"a\tb,c\nd\re\\f",
            b"#5",
            b"x#5",
            b"\x00\x1b\x7f",
            "caf\u{e9}".as_bytes(),
            b"",
        ];
        let printed: Vec<String> = cases.iter().map(|c| plain(c)).collect();
        for (c, p) in cases.iter().zip(&printed) {
            assert!(!p.contains(['\t', '\n', '\r']), "{p}");
            assert!(!p.replace("\\,", "").contains(','), "{p}");
            assert_eq!(&unescape(p), c, "{p}");
        }
        let mut unique = printed.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), printed.len());
        assert_eq!(plain(b"bad\xff"), "bad\\xff");
        assert_eq!(plain(b"#5"), "\\#5");
        assert_eq!(plain("caf\u{e9}".as_bytes()), "caf\u{e9}");
    }

    #[test]
    fn parse_takes_back_what_plain_prints() {
        let cases: &[&[u8]] =
            &[b"plain", b"bad\xff", b"a\tb,c\nd\re\\f", b"#5", b"\x00\x1b\x7f", "caf\u{e9}".as_bytes()];
        for c in cases {
            assert_eq!(parse(plain(c).as_bytes()).as_deref(), Ok(*c), "{}", plain(c));
        }
        assert_eq!(parse(b"caf\\xe9-latin1").unwrap(), b"caf\xe9-latin1");
        for bad in [&b"x\\"[..], b"\\q", b"\\x4", b"\\xzz"] {
            assert!(parse(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
        let long = vec![b'a'; bloomslice::persist::MAX_NAME_BYTES + 1];
        let err = match check_name_length(&long, || "x.tsv:3".into()) {
            Err(crate::CliError::Runtime(m)) => m,
            other => panic!("{other:?}"),
        };
        assert!(
            err.starts_with("x.tsv:3: set name aaa") && err.contains("65537 bytes") && err.contains("65536"),
            "{err}"
        );
        assert!(check_name_length(&long[1..], || unreachable!()).is_ok());
    }

    #[test]
    fn json_fields_keep_the_bytes() {
        let mut obj = serde_json::Map::new();
        put_bytes(&mut obj, "key", b"ok");
        put_bytes(&mut obj, "set", b"\xff\x00");
        assert_eq!(obj["key"], "ok");
        assert_eq!(obj["set_b64"], "/wA=");
        let mut names = SetNames::new();
        names.insert(3, "x").unwrap();
        let mut a = serde_json::Map::new();
        put_set(&mut a, "set", &names, 3);
        put_set(&mut a, "other", &names, 4);
        assert_eq!(a["set"], "x");
        assert_eq!(a["id"], 4);
    }
}
