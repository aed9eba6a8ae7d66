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
